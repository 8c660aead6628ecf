"""Worker-ID pools and UUIDv7 sequences end to end, against a real ticketd over loopback.

- concurrent holders on one pool get distinct worker IDs, lowest first, until the pool is full;
- keepalive, release and expiry as docs/operations.md describes (409 once a lease has ended,
  the next holder's not_before_ms at or above the previous holder's mark and end of lease);
- holders keep their leases alive while ticketd is restarted under them (SIGTERM once, kill -9
  once): every lease survives with its worker ID, and no ID is ever held twice;
- a uuidv7 sequence answers 1,000,000 canonical, strictly increasing UUIDs over HTTP, and MySQL's
  integer paths refuse it with a pointer to SELECT UUID_V7().
Run with Debian's /usr/bin/python3 (it has pymysql).
"""
import http.client
import json
import os
import re
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
  - {{ name: Uuids, kind: uuidv7 }}
worker_pools:
  - {{ name: orders, size: 8, min_ttl_s: 1, max_ttl_s: 60, default_ttl_s: 10 }}
  - {{ name: tiny, worker_bits: 1, min_ttl_s: 1, max_ttl_s: 5, default_ttl_s: 1 }}
  - {{ name: survivors, size: 16, max_ttl_s: 60, default_ttl_s: 20 }}
"""

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class Client:
    def __init__(self, port, timeout=10):
        self.port = port
        self.timeout = timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, method, path, body=None):
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        text = resp.read().decode()
        return resp.status, (json.loads(text) if text else None), resp

    def reconnect(self):
        self.conn.close()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)

    def close(self):
        self.conn.close()


def acquire(c, pool, holder, ttl_s=None):
    body = {"holder": holder}
    if ttl_s is not None:
        body["ttl_s"] = ttl_s
    return c.call("POST", f"/v1/workers/{pool}/leases", body)


class WorkerPoolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Ticketd(config=CONFIG).start()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def client(self):
        c = Client(self.d.http_port)
        self.addCleanup(c.close)
        return c

    def test_concurrent_holders_get_distinct_ids_lowest_first_until_full(self):
        results = []
        lock = threading.Lock()

        def holder(i):
            c = Client(self.d.http_port)
            try:
                status, body, resp = acquire(c, "orders", f"orders-{i}", 60)
                with lock:
                    results.append((status, body, resp.getheader("Retry-After")))
            finally:
                c.close()

        threads = [threading.Thread(target=holder, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        granted = [b for s, b, _ in results if s == 201]
        refused = [(b, ra) for s, b, ra in results if s != 201]
        self.assertEqual(sorted(b["worker_id"] for b in granted), list(range(8)))
        self.assertEqual(len(refused), 12)
        for body, retry_after in refused:
            self.assertEqual(body["error"]["code"], "pool_full")
            self.assertEqual(retry_after, "1")
        # Releasing one hands that ID, the lowest free one, to the next holder.
        c = self.client()
        victim = next(b for b in granted if b["worker_id"] == 3)
        status, _, _ = c.call("DELETE", f"/v1/workers/orders/leases/{victim['lease_id']}",
                              {"high_water_ms": victim["expires_at_ms"] - 59000})
        self.assertEqual(status, 204)
        status, body, _ = acquire(c, "orders", "late")
        self.assertEqual((status, body["worker_id"]), (201, 3))
        self.assertGreaterEqual(body["not_before_ms"], victim["expires_at_ms"] - 59000)
        self.assertNotEqual(body["lease_id"], victim["lease_id"])
        status, pool, _ = c.call("GET", "/v1/workers/orders")
        self.assertEqual((status, pool["leased"], pool["size"]), (200, 8, 8))

    def test_keepalive_extends_and_an_expired_lease_is_409(self):
        c = self.client()
        status, lease, _ = acquire(c, "tiny", "short-lived", 1)
        self.assertEqual(status, 201, lease)
        self.assertEqual(lease["worker_id"], 0)
        status, kept, _ = c.call("POST", f"/v1/workers/tiny/leases/{lease['lease_id']}/keepalive",
                                 {"high_water_ms": lease["expires_at_ms"] - 500})
        self.assertEqual(status, 200, kept)
        self.assertGreaterEqual(kept["expires_at_ms"], lease["expires_at_ms"])
        self.assertEqual(kept["high_water_ms"], lease["expires_at_ms"] - 500)
        # A real daemon on the real clock: wait past the TTL.
        time.sleep(max(0, kept["expires_at_ms"] / 1000 - time.time()) + 0.2)
        status, err, _ = c.call("POST", f"/v1/workers/tiny/leases/{lease['lease_id']}/keepalive")
        self.assertEqual((status, err["error"]["code"]), (409, "lease_expired"), err)
        self.assertIn("expired at", err["error"]["message"])
        status, err, _ = c.call("DELETE", f"/v1/workers/tiny/leases/{lease['lease_id']}")
        self.assertEqual((status, err["error"]["code"]), (409, "lease_expired"))
        status, again, _ = acquire(c, "tiny", "next")
        self.assertEqual((status, again["worker_id"]), (201, 0))
        self.assertEqual(again["not_before_ms"], kept["expires_at_ms"])
        status, err, _ = c.call("POST", "/v1/workers/tiny/leases/0-999/keepalive")
        self.assertEqual((status, err["error"]["code"]), (404, "not_found"))

    def test_bad_requests(self):
        c = self.client()
        status, err, _ = acquire(c, "nope", "x")
        self.assertEqual((status, err["error"]["code"]), (404, "not_found"))
        self.assertIn("worker pool 'nope'", err["error"]["message"])
        status, err, _ = acquire(c, "tiny", "x", 6)
        self.assertEqual((status, err["error"]["code"]), (422, "invalid_argument"))
        c.conn.request("POST", "/v1/workers/tiny/leases", body="{nope",
                       headers={"Content-Type": "application/json"})
        resp = c.conn.getresponse()
        self.assertEqual(resp.status, 400)
        self.assertEqual(json.loads(resp.read())["error"]["code"], "bad_request")

    def test_leases_survive_restarts_under_live_holders(self):
        holders = 6
        rounds_before = 5
        stop = threading.Event()
        restarted = threading.Event()
        lock = threading.Lock()
        leases = {}
        after_restart_ok = {}
        problems = []

        def holder(i):
            c = Client(self.d.http_port, timeout=5)
            try:
                status, lease, _ = acquire(c, "survivors", f"svc-{i}")
                if status != 201:
                    problems.append(f"holder {i}: acquire {status} {lease}")
                    return
                with lock:
                    leases[i] = lease
                n = 0
                while not stop.is_set():
                    n += 1
                    try:
                        status, kept, _ = c.call(
                            "POST", f"/v1/workers/survivors/leases/{lease['lease_id']}/keepalive",
                            {"high_water_ms": int(time.time() * 1000)})
                    except (OSError, http.client.HTTPException):
                        c.reconnect()  # ticketd is restarting
                        time.sleep(0.05)
                        continue
                    if status != 200 or kept["worker_id"] != lease["worker_id"]:
                        problems.append(f"holder {i}: keepalive {status} {kept}")
                        return
                    if restarted.is_set():
                        with lock:
                            after_restart_ok[i] = after_restart_ok.get(i, 0) + 1
                    time.sleep(0.05 if n > rounds_before else 0.01)
            finally:
                c.close()

        threads = [threading.Thread(target=holder, args=(i,)) for i in range(holders)]
        for t in threads:
            t.start()
        deadline = time.time() + 10
        while len(leases) < holders and time.time() < deadline and not problems:
            time.sleep(0.01)
        self.assertEqual(len(leases), holders, problems)
        try:
            self.assertEqual(self.d.stop(), 0)
            self.d.start()
            self.d.kill9()
            self.d.start()
            restarted.set()
            deadline = time.time() + 10
            while time.time() < deadline and not problems and (
                    len(after_restart_ok) < holders or min(after_restart_ok.values()) < 3):
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(problems, [])
        self.assertEqual(len(after_restart_ok), holders)
        ids = sorted(lease["worker_id"] for lease in leases.values())
        self.assertEqual(ids, list(range(holders)))
        # The restarted daemon lists exactly those leases, and grants the next ID above them.
        c = self.client()
        status, pool, _ = c.call("GET", "/v1/workers/survivors")
        self.assertEqual(status, 200)
        self.assertEqual(sorted(x["lease_id"] for x in pool["leases"]),
                         sorted(x["lease_id"] for x in leases.values()))
        self.assertTrue(all(x["high_water_ms"] > 0 for x in pool["leases"]))
        status, extra, _ = acquire(c, "survivors", "newcomer")
        self.assertEqual((status, extra["worker_id"]), (201, holders))
        for lease in leases.values():
            status, _, _ = c.call("DELETE", f"/v1/workers/survivors/leases/{lease['lease_id']}")
            self.assertEqual(status, 204)


class Uuidv7SequenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Ticketd(config=CONFIG).start()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_a_million_uuids_over_http_are_canonical_and_strictly_increasing(self):
        c = Client(self.d.http_port)
        self.addCleanup(c.close)
        previous = ""
        total = 0
        seen_ms = set()
        for _ in range(100):
            status, body, _ = c.call("POST", "/v1/sequences/Uuids/next", {"count": 10000})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["sequence"], "Uuids")
            ids = body["ids"]
            self.assertEqual(len(ids), 10000)
            # Strictly increasing as strings implies distinct.
            self.assertGreater(ids[0], previous)
            for a, b in zip(ids, ids[1:]):
                if not a < b:
                    self.fail(f"{a} !< {b}")
            for u in (ids[0], ids[-1]):
                self.assertRegex(u, UUID_RE)
                seen_ms.add(int(u[:8] + u[9:13], 16))
            previous = ids[-1]
            total += len(ids)
        self.assertEqual(total, 1_000_000)
        now_ms = time.time() * 1000
        self.assertTrue(all(abs(ms - now_ms) < 120_000 for ms in seen_ms), seen_ms)
        status, err, _ = c.call("POST", "/v1/sequences/Uuids/next", {"count": 100001})
        self.assertEqual((status, err["error"]["code"]), (422, "invalid_argument"))

    def test_mysql_integer_paths_point_to_uuid_v7(self):
        conn = pymysql.connect(host="127.0.0.1", port=self.d.mysql_port, user="app",
                               password="s3cret-app", database="tickets")
        self.addCleanup(conn.close)
        with conn.cursor() as cur:
            # NEXTVAL answers the sequence's own IDs, as text.
            cur.execute("SELECT NEXTVAL(Uuids)")
            self.assertRegex(cur.fetchone()[0], UUID_RE)
            with self.assertRaises(pymysql.err.MySQLError) as ctx:
                cur.execute("REPLACE INTO Uuids (stub) VALUES ('a')")
            code, message = ctx.exception.args
            self.assertEqual(code, 1235)
            self.assertIn("SELECT UUID_V7()", message)
            self.assertIn("uuidv7", message)
            cur.execute("SELECT UUID_V7()")
            self.assertRegex(cur.fetchone()[0], UUID_RE)
            cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            self.assertGreater(cur.lastrowid, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
