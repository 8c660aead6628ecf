#!/usr/bin/python3
"""Snowflake sequences through both front ends of a real ticketd: the Flickr recipe returns a
Snowflake ID (a legacy client switches approach by config alone), NEXTVAL and HTTP /next work,
blocks are refused, /v1/snowflake/decode reads the parts back, IDs survive a restart."""
import http.client
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

import pymysql  # noqa: E402

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
snowflake:
  epoch: "2026-01-01T00:00:00Z"
  time_bits: 41
  worker_bits: 10
  sequence_bits: 12
  time_unit_ms: 1
  worker_id: {{ source: static, id: 7 }}
  clock: {{ policy: wait, max_backward_ms: 5 }}
sequences:
  - {{ name: Tickets64, kind: ticket }}
  - {{ name: Snowflake64, kind: snowflake }}
"""
EPOCH_MS = 1767225600000


def http_call(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = json.loads(r.read() or b"null")
    c.close()
    return r.status, data


def parts(snowflake_id):
    return ((snowflake_id >> 22) + EPOCH_MS, (snowflake_id >> 12) & 1023, snowflake_id & 4095)


class Snowflake(unittest.TestCase):
    def test_both_front_ends_and_restart(self):
        t = Ticketd(config=CONFIG).start()
        try:
            conn = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="app",
                                   password="s3cret-app", database="tickets", autocommit=True)
            cur = conn.cursor()
            ids = []
            before_ms = int(time.time() * 1000)
            for _ in range(500):
                cur.execute("REPLACE INTO Snowflake64 (stub) VALUES ('a')")
                native = cur.lastrowid
                cur.execute("SELECT LAST_INSERT_ID()")
                self.assertEqual(cur.fetchone()[0], native)
                ids.append(native)
            after_ms = int(time.time() * 1000)
            self.assertEqual(ids, sorted(ids))
            self.assertEqual(len(set(ids)), len(ids))
            for i in ids:
                ms, worker, _ = parts(i)
                self.assertEqual(worker, 7)
                self.assertGreaterEqual(ms, before_ms - 5)
                self.assertLessEqual(ms, after_ms + 5)
            cur.execute("SELECT NEXTVAL(Snowflake64)")
            nv = cur.fetchone()[0]
            self.assertGreater(nv, ids[-1])
            with self.assertRaises(pymysql.err.MySQLError) as cm:
                cur.execute("SELECT NEXT 10 VALUES FROM Snowflake64")
            self.assertEqual(cm.exception.args[0], 1235)
            self.assertIn("blocks are refused", cm.exception.args[1])
            cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")  # tickets still work
            self.assertEqual(cur.lastrowid, 1)

            status, body = http_call(t.http_port, "POST", "/v1/sequences/Snowflake64/next", {})
            self.assertEqual(status, 200, body)
            http_id = int(body["ids"][0])
            self.assertIsInstance(body["ids"][0], str)
            self.assertGreater(http_id, nv)
            status, body = http_call(t.http_port, "POST", "/v1/sequences/Snowflake64/blocks",
                                     {"size": 10, "holder": "x"})
            self.assertEqual(status, 409, body)
            self.assertEqual(body["error"]["code"], "wrong_kind")
            status, body = http_call(t.http_port, "GET", f"/v1/snowflake/decode/{http_id}")
            self.assertEqual(status, 200, body)
            ms, worker, seq = parts(http_id)
            self.assertEqual(body["id"], str(http_id))
            self.assertEqual(body["unix_ms"], ms)
            self.assertEqual(body["worker"], 7)
            self.assertEqual(body["sequence"], seq)
            self.assertTrue(body["timestamp"].endswith("Z"))
            status, body = http_call(t.http_port, "GET", "/v1/snowflake/decode/abc")
            self.assertEqual(status, 422)
            c = http.client.HTTPConnection("127.0.0.1", t.http_port, timeout=10)
            c.request("GET", "/metrics")
            metrics = c.getresponse().read().decode()
            c.close()
            issued = [line for line in metrics.splitlines()
                      if line.startswith("ticketd_snowflake_events_total") and
                      'event="issued"' in line and 'sequence="Snowflake64"' in line]
            self.assertEqual(len(issued), 1, metrics)
            self.assertGreaterEqual(float(issued[0].split()[-1]), 502)  # 500 + NEXTVAL + /next
            self.assertIn('ticketd_snowflake_events_total{event="hwm_write"', metrics)
            conn.close()

            last = http_id
            t.kill9()
            t.start()
            status, body = http_call(t.http_port, "POST", "/v1/sequences/Snowflake64/next", {})
            self.assertEqual(status, 200, body)
            self.assertGreater(int(body["ids"][0]), last)  # above the high-water mark
        finally:
            t.cleanup()

    def test_bad_layout_is_refused_at_start(self):
        bad = CONFIG.replace("sequence_bits: 12", "sequence_bits: 13")
        t = Ticketd(config=bad)
        try:
            t.start(wait=False)
            self.assertEqual(t.proc.wait(30), 2)
            self.assertIn("must be 63", t.log_text())
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
