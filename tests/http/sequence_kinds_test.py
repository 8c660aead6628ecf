"""Every sequence kind through one registry, against the real ticketd binary over loopback:
created at run time over HTTP (ticket, gapless, snowflake, uuidv7, ulid), listed and described with
its kind's own fields over HTTP and MySQL (PyMySQL: SHOW TABLES, SHOW CREATE), served again
after kill -9, dropped over both front ends (counters and Snowflake leave a tombstone a new
sequence of the name starts above) and gone after the next restart."""
import http.client
import json
import os
import sys
import unittest

import pymysql

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ticketd_process import Ticketd  # noqa: E402


def call(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, (json.loads(text) if text else None)


class SequenceKindsTest(unittest.TestCase):
    def setUp(self):
        self.t = Ticketd()
        self.t.start()
        self.port = self.t.http_port

    def tearDown(self):
        self.t.cleanup()

    def kinds(self):
        status, body = call(self.port, "GET", "/v1/sequences")
        self.assertEqual(status, 200, body)
        return {s["name"]: s["kind"] for s in body["sequences"]}

    def test_every_kind_is_created_listed_restarted_and_dropped(self):
        for name, body in [("T", {"kind": "ticket", "cache": 5}),
                           ("G", {"kind": "gapless", "order": "strict"}),
                           ("S", {"kind": "snowflake"}),
                           ("U", {"kind": "uuidv7"}),
                           ("L", {"kind": "ulid"})]:
            status, created = call(self.port, "PUT", f"/v1/sequences/{name}", body)
            self.assertEqual(status, 201, (name, created))
            self.assertEqual(created["kind"], body["kind"])
        self.assertEqual(self.kinds(), {"T": "ticket", "G": "gapless", "S": "snowflake",
                                        "U": "uuidv7", "L": "ulid", "Tickets64": "ticket",
                                        "Tickets32": "ticket"})
        ids = {}
        for name in ("T", "G", "S"):
            for _ in range(3):
                status, got = call(self.port, "POST", f"/v1/sequences/{name}/next", {})
                self.assertEqual(status, 200, got)
                ids.setdefault(name, []).append(int(got["ids"][0]))
        self.assertEqual(ids["G"], [1, 2, 3])
        status, snow = call(self.port, "GET", "/v1/sequences/S")
        self.assertEqual((status, snow["kind"], snow["worker_bits"]), (200, "snowflake", 10), snow)
        status, uuid = call(self.port, "POST", "/v1/sequences/U/next", {"count": 2})
        self.assertEqual(status, 200, uuid)
        self.assertLess(uuid["ids"][0], uuid["ids"][1])
        status, ulid = call(self.port, "POST", "/v1/sequences/L/next", {"count": 500})
        self.assertEqual(status, 200, ulid)
        self.assertEqual([len(i) for i in ulid["ids"]], [26] * 500)
        self.assertEqual(ulid["ids"], sorted(set(ulid["ids"])))  # distinct, in order

        # Sequences created at run time are served again after a crash.
        self.t.kill9()
        self.t.start()
        self.assertEqual(self.kinds()["G"], "gapless")
        self.assertEqual(self.kinds()["S"], "snowflake")
        self.assertEqual(self.kinds()["U"], "uuidv7")
        self.assertEqual(self.kinds()["L"], "ulid")
        _, after = call(self.port, "POST", "/v1/sequences/L/next", {})
        self.assertEqual(len(after["ids"][0]), 26)
        _, g = call(self.port, "POST", "/v1/sequences/G/next", {})
        self.assertEqual(g["ids"], ["4"])  # the unbroken run goes on
        _, s = call(self.port, "POST", "/v1/sequences/S/next", {})
        self.assertGreater(int(s["ids"][0]), max(ids["S"]))
        _, t = call(self.port, "POST", "/v1/sequences/T/next", {})
        self.assertGreater(int(t["ids"][0]), max(ids["T"]))
        _, described = call(self.port, "GET", "/v1/sequences/G")
        self.assertEqual((described["order"], described["committed_through"]), ("strict", "4"))

        # MySQL sees the same registry: every kind is a table.
        conn = pymysql.connect(host="127.0.0.1", port=self.t.mysql_port, user="ticket",
                               password="ticket", database="tickets", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("SHOW TABLES")
            self.assertEqual({r[0] for r in cur.fetchall()},
                             {"T", "G", "S", "U", "L", "Tickets64", "Tickets32"})
            cur.execute("SHOW CREATE TABLE G")
            self.assertIn("COMMENT='ticketd gapless sequence (order strict)'", cur.fetchone()[1])
            cur.execute("SHOW CREATE SEQUENCE S")
            self.assertIn("ticketd snowflake sequence", cur.fetchone()[1])
            cur.execute("SHOW COLUMNS FROM L")
            self.assertEqual(cur.fetchone()[:2], ("id", "char(26)"))
            cur.execute("DROP TABLE U, S, L")
        conn.close()

        # Every kind drops; nothing comes back at the next start.
        for name in ("T", "G"):
            status, body = call(self.port, "DELETE", f"/v1/sequences/{name}")
            self.assertEqual(status, 204, (name, body))
        for name in ("S", "U", "L"):
            self.assertEqual(call(self.port, "GET", f"/v1/sequences/{name}")[0], 404)
        self.t.stop()
        self.t.start()
        self.assertEqual(set(self.kinds()), {"Tickets64", "Tickets32"})
        # A counter created again under a dropped name starts above all it issued.
        self.assertEqual(call(self.port, "PUT", "/v1/sequences/G", {})[0], 201)
        _, g = call(self.port, "POST", "/v1/sequences/G/next", {})
        self.assertEqual(g["ids"], ["5"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
