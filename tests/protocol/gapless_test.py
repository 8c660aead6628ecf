#!/usr/bin/python3
"""Gapless sequences against a real ticketd, through real clients: MySQL transactions (PyMySQL)
reserve and COMMIT/ROLLBACK/disconnect settle; the HTTP reservation API; 32 clients doing random
things at once, after which the committed numbers are exactly {1 … N}; strict order; a restart
in the middle of a reservation; `ticketd verify`."""
import http.client
import json
import os
import random
import subprocess
import sys
import threading
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
sequences:
  - {{ name: Tickets64, kind: ticket }}
  - {{ name: Invoices, kind: gapless, reservation_ttl_ms: 400 }}
  - {{ name: Credit, kind: gapless, start: 1000, reservation_ttl_ms: 60000 }}
  - {{ name: Bills, kind: gapless, start: 1000, reservation_ttl_ms: 60000 }}
  - {{ name: Strict, kind: gapless, order: strict, reservation_ttl_ms: 5000, strict_wait_ms: 20000 }}
"""


class Http:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method, path, body=None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        self.conn.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def close(self):
        self.conn.close()


def mysql(t, **kw):
    return pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="app", password="s3cret-app",
                           database="tickets", autocommit=True, **kw)


def scalar(cur, sql):
    cur.execute(sql)
    return cur.fetchone()[0]


def audit(t, name):
    h = Http(t.http_port)
    try:
        status, a = h.call("GET", f"/v1/sequences/{name}/audit")
        assert status == 200, (status, a)
        return a
    finally:
        h.close()


def committed_set(a, first, step=1):
    """Every number the audit says is committed: {first … high} minus pending and released."""
    if a["high"] is None:
        return set()
    open_ = {int(p["id"]) for p in a["pending"]} | {int(n) for n in a["released"]}
    return {n for n in range(first, int(a["high"]) + 1, step) if n not in open_}


def settle(t, name, first):
    """Waits for pending reservations to end, then uses up released numbers with autocommit
    takes, so that the committed set must be exactly {first … N}."""
    deadline = time.time() + 30
    while time.time() < deadline:
        a = audit(t, name)
        if not a["pending"]:
            break
        time.sleep(0.1)
    h = Http(t.http_port)
    taken = set()
    while audit(t, name)["released"]:
        status, body = h.call("POST", f"/v1/sequences/{name}/next")
        assert status == 200, body
        taken.add(int(body["ids"][0]))
    h.close()
    return audit(t, name), taken


def verify(t):
    out = subprocess.run([t.binary, "verify", "--data-dir", t.data_dir], capture_output=True,
                         text=True, timeout=60)
    return out.returncode, out.stdout


class Gapless(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = Ticketd(config=CONFIG).start()

    @classmethod
    def tearDownClass(cls):
        cls.t.cleanup()

    def test_mysql_transactions(self):
        c = mysql(self.t)
        cur = c.cursor()
        # Autocommit: reserve and commit at once.
        cur.execute("REPLACE INTO Bills (stub) VALUES ('a')")
        first = scalar(cur, "SELECT LAST_INSERT_ID()")
        self.assertEqual(first, 1000)
        # ROLLBACK releases: the next caller gets the same number.
        cur.execute("BEGIN")
        held = scalar(cur, "SELECT NEXTVAL(Bills)")
        self.assertEqual(held, 1001)
        self.assertIn(str(held), [p["id"] for p in audit(self.t, "Bills")["pending"]])
        cur.execute("ROLLBACK")
        self.assertEqual(audit(self.t, "Bills")["released"], ["1001"])
        # SET autocommit=0 opens a transaction; COMMIT makes the number final.
        cur.execute("SET autocommit=0")
        cur.execute("REPLACE INTO Bills (stub) VALUES ('a')")
        again = scalar(cur, "SELECT LAST_INSERT_ID()")
        self.assertEqual(again, 1001)
        cur.execute("COMMIT")
        cur.execute("SET autocommit=1")
        a = audit(self.t, "Bills")
        self.assertEqual(a["committed_through"], "1001")
        self.assertEqual(a["pending"], [])
        # A connection that dies inside its transaction releases what it held.
        d = mysql(self.t)
        dc = d.cursor()
        dc.execute("START TRANSACTION")
        lost = scalar(dc, "SELECT NEXTVAL(Bills)")
        d.close()
        deadline = time.time() + 10
        while str(lost) not in audit(self.t, "Bills")["released"] and time.time() < deadline:
            time.sleep(0.05)
        self.assertIn(str(lost), audit(self.t, "Bills")["released"])
        # BEGIN inside a transaction commits it first, as MySQL does.
        cur.execute("BEGIN")
        n1 = scalar(cur, "SELECT NEXTVAL(Bills)")
        self.assertEqual(n1, lost)
        cur.execute("BEGIN")
        cur.execute("ROLLBACK")
        self.assertEqual(audit(self.t, "Bills")["committed_through"], str(n1))
        # Blocks are refused with a clear error; the connection stays usable.
        with self.assertRaises(pymysql.err.MySQLError) as e:
            cur.execute("REPLACE INTO Bills (stub) VALUES ('a'), ('b')")
        self.assertIn("gapless", str(e.exception))
        self.assertEqual(scalar(cur, "SELECT 1"), 1)
        c.close()

    def test_http_reservations(self):
        h = Http(self.t.http_port)
        status, r = h.call("POST", "/v1/sequences/Credit/reservations",
                           {"holder": "billing", "ttl_ms": 30000})
        self.assertEqual(status, 201, r)
        self.assertEqual(r["holder"], "billing")
        self.assertTrue(r["expires_at"].endswith("Z"))
        rid = r["reservation_id"]
        status, c = h.call("POST", f"/v1/sequences/Credit/reservations/{rid}/commit")
        self.assertEqual((status, c["status"], c["id"]), (200, "committed", r["id"]))
        # Committing twice, or after a release, is 409 and changes nothing.
        status, c = h.call("POST", f"/v1/sequences/Credit/reservations/{rid}/commit")
        self.assertEqual((status, c["error"]["code"]), (409, "reservation_ended"))
        status, r2 = h.call("POST", "/v1/sequences/Credit/reservations", {"holder": "billing"})
        self.assertEqual(status, 201)
        status, _ = h.call("DELETE", f"/v1/sequences/Credit/reservations/{r2['reservation_id']}")
        self.assertEqual(status, 204)
        status, c = h.call("POST",
                           f"/v1/sequences/Credit/reservations/{r2['reservation_id']}/commit")
        self.assertEqual(status, 409)
        self.assertIn(r2["id"], audit(self.t, "Credit")["released"])
        # Void: used, never handed out again, kept in the audit with its reason.
        status, r3 = h.call("POST", "/v1/sequences/Credit/reservations", {})
        self.assertEqual(r3["id"], r2["id"])  # the released number comes back first
        status, v = h.call("POST", f"/v1/sequences/Credit/reservations/{r3['reservation_id']}/void",
                           {"reason": "printed, then cancelled"})
        self.assertEqual((status, v["status"]), (200, "void"))
        a = audit(self.t, "Credit")
        self.assertIn({"id": r3["id"], "reason": "printed, then cancelled"}, a["voids"])
        self.assertEqual(a["holes"], [])
        # Errors: unknown reservation, unknown sequence, wrong kind, bad ttl, void without reason.
        status, e = h.call("POST",
                           f"/v1/sequences/Credit/reservations/{r['id']}-0000000000000000/commit")
        self.assertEqual((status, e["error"]["code"]), (409, "reservation_ended"))
        status, e = h.call("POST", "/v1/sequences/Credit/reservations/nonsense/commit")
        self.assertEqual((status, e["error"]["code"]), (404, "reservation_not_found"))
        status, e = h.call("POST", "/v1/sequences/Nope/reservations", {})
        self.assertEqual(status, 404)
        status, e = h.call("POST", "/v1/sequences/Tickets64/reservations", {})
        self.assertEqual((status, e["error"]["code"]), (409, "wrong_kind"))
        status, e = h.call("POST", "/v1/sequences/Credit/reservations", {"ttl_ms": 0})
        self.assertIn(status, (400, 422), e)
        status, r4 = h.call("POST", "/v1/sequences/Credit/reservations", {})
        status, e = h.call("POST", f"/v1/sequences/Credit/reservations/{r4['reservation_id']}/void",
                           {})
        self.assertIn(status, (400, 422), e)
        status, _ = h.call("DELETE", f"/v1/sequences/Credit/reservations/{r4['reservation_id']}")
        self.assertEqual(status, 204)
        status, e = h.call("POST", "/v1/sequences/Credit/next", {"count": 2})
        self.assertEqual((status, e["error"]["code"]), (409, "wrong_kind"))
        h.close()

    def test_randomized_32_clients(self):
        """16 MySQL and 16 HTTP clients reserve, then commit, roll back, disconnect or let the
        TTL (400 ms) run out, at random. Every acknowledged commit must be unique and, once all
        is settled, the committed set must be exactly {1 … N}."""
        acknowledged = []
        lock = threading.Lock()
        errors = []
        stop_at = time.time() + 8

        def ack(n):
            with lock:
                acknowledged.append(n)

        def mysql_client(seed):
            rng = random.Random(seed)
            try:
                c = mysql(self.t)
                while time.time() < stop_at:
                    cur = c.cursor()
                    cur.execute("BEGIN")
                    if rng.random() < 0.5:
                        cur.execute("REPLACE INTO Invoices (stub) VALUES ('a')")
                        n = scalar(cur, "SELECT LAST_INSERT_ID()")
                    else:
                        n = scalar(cur, "SELECT NEXTVAL(Invoices)")
                    action = rng.random()
                    if action < 0.6:
                        try:
                            cur.execute("COMMIT")
                            ack(n)
                        except pymysql.err.MySQLError:
                            pass  # expired before COMMIT: released, not committed
                    elif action < 0.8:
                        cur.execute("ROLLBACK")
                    elif action < 0.9:
                        c.close()  # disconnect while holding
                        c = mysql(self.t)
                    else:
                        time.sleep(0.45)  # let the TTL run out, then try to commit
                        try:
                            cur.execute("COMMIT")
                            ack(n)
                        except pymysql.err.MySQLError as e:
                            if "expired" not in str(e) and "no longer held" not in str(e):
                                raise
                c.close()
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(repr(e))

        def http_client(seed):
            rng = random.Random(seed)
            try:
                h = Http(self.t.http_port)
                while time.time() < stop_at:
                    status, r = h.call("POST", "/v1/sequences/Invoices/reservations",
                                       {"holder": f"h{seed}"})
                    assert status == 201, (status, r)
                    rid = r["reservation_id"]
                    action = rng.random()
                    if action < 0.6:
                        status, c = h.call("POST",
                                           f"/v1/sequences/Invoices/reservations/{rid}/commit")
                        if status == 200:
                            ack(int(r["id"]))
                        else:
                            assert status == 409, (status, c)
                    elif action < 0.7:
                        status, c = h.call("POST",
                                           f"/v1/sequences/Invoices/reservations/{rid}/void",
                                           {"reason": "cancelled"})
                        if status == 200:
                            ack(int(r["id"]))
                    elif action < 0.9:
                        status, _ = h.call("DELETE", f"/v1/sequences/Invoices/reservations/{rid}")
                        assert status in (204, 409), status
                    else:
                        time.sleep(0.45)
                h.close()
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=mysql_client, args=(i,)) for i in range(16)]
        threads += [threading.Thread(target=http_client, args=(100 + i,)) for i in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        self.assertGreater(len(acknowledged), 200)
        self.assertEqual(len(acknowledged), len(set(acknowledged)), "a number committed twice")
        a, taken = settle(self.t, "Invoices", 1)
        self.assertEqual(a["holes"], [])
        self.assertEqual(a["pending"], [])
        n = int(a["committed_through"])
        self.assertEqual(int(a["high"]), n)
        self.assertEqual(a["committed"], n)
        self.assertEqual(set(acknowledged) | taken, set(range(1, n + 1)))
        self.assertEqual(set(acknowledged) & taken, set())
        print(f"randomized: {len(acknowledged)} acknowledged commits, {len(taken)} numbers taken "
              f"back from released, committed = 1..{n}, expiries {a['expiries']}")

    def test_strict_order_commits_in_number_order(self):
        """With order: strict, numbers are committed in time order: whenever one commit was
        acknowledged before another was sent, its number is the smaller one. (Only intervals
        that do not overlap are compared, so a client thread that is slow to read its reply
        cannot make the check fail. Relaxed order fails it after a release.)"""
        log = []
        lock = threading.Lock()
        errors = []

        def client(seed):
            rng = random.Random(seed)
            try:
                h = Http(self.t.http_port)
                for _ in range(15):
                    status, r = h.call("POST", "/v1/sequences/Strict/reservations",
                                       {"holder": f"s{seed}"})
                    assert status == 201, (status, r)
                    rid = r["reservation_id"]
                    if rng.random() < 0.25:
                        status, _ = h.call("DELETE", f"/v1/sequences/Strict/reservations/{rid}")
                        assert status == 204
                        continue
                    sent = time.monotonic()
                    status, c = h.call("POST", f"/v1/sequences/Strict/reservations/{rid}/commit")
                    acked = time.monotonic()
                    assert status == 200, (status, c)
                    with lock:
                        log.append((sent, acked, int(r["id"])))
                h.close()
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        ordered_pairs = 0
        for sent_a, acked_a, a in log:
            for sent_b, _, b in log:
                if acked_a < sent_b:
                    ordered_pairs += 1
                    self.assertLess(a, b, f"{a} acknowledged before {b} was sent")
        self.assertGreater(ordered_pairs, len(log))
        self.assertEqual(sorted(n for _, _, n in log), list(range(1, len(log) + 1)))

    def test_strict_wait_times_out_with_a_clear_error(self):
        t = Ticketd(config=CONFIG.replace("strict_wait_ms: 20000", "strict_wait_ms: 300")).start()
        try:
            h1, h2 = Http(t.http_port), Http(t.http_port)
            status, r = h1.call("POST", "/v1/sequences/Strict/reservations", {})
            self.assertEqual(status, 201)
            t0 = time.monotonic()
            status, e = h2.call("POST", "/v1/sequences/Strict/reservations", {})
            self.assertEqual((status, e["error"]["code"]), (503, "queue_timeout"))
            self.assertIn("strict", e["error"]["message"])
            self.assertGreaterEqual(time.monotonic() - t0, 0.25)
            c = mysql(t)
            cur = c.cursor()
            cur.execute("BEGIN")
            with self.assertRaises(pymysql.err.MySQLError) as err:
                cur.execute("SELECT NEXTVAL(Strict)")
            self.assertEqual(err.exception.args[0], 1205)
            c.close()
            h1.close()
            h2.close()
        finally:
            t.cleanup()

    def test_restart_keeps_reservations_and_verify(self):
        t = Ticketd(config=CONFIG).start()
        try:
            h = Http(t.http_port)
            status, keep = h.call("POST", "/v1/sequences/Credit/reservations", {"holder": "x"})
            status, done = h.call("POST", "/v1/sequences/Credit/reservations", {"holder": "y"})
            status, _ = h.call("POST",
                               f"/v1/sequences/Credit/reservations/{done['reservation_id']}/commit")
            self.assertEqual(status, 200)
            h.close()
            code, out = verify(t)
            self.assertEqual(code, 3, out)  # refuses while the server runs
            t.kill9()
            code, out = verify(t)
            self.assertEqual(code, 0, out)
            self.assertIn("0 violations", out)
            t.start()
            a = audit(t, "Credit")
            self.assertEqual([p["reservation_id"] for p in a["pending"]], [keep["reservation_id"]])
            self.assertEqual(a["committed"], 1)
            h = Http(t.http_port)
            status, c = h.call("POST",
                               f"/v1/sequences/Credit/reservations/{keep['reservation_id']}/commit")
            self.assertEqual(status, 200, c)
            h.close()
            self.assertEqual(audit(t, "Credit")["committed_through"], "1001")
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
