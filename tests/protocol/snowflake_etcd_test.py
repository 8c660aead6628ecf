#!/usr/bin/python3
"""Snowflake worker IDs leased from a real etcd (started here on loopback): distinct IDs for
concurrent instances, an ID reused only after its TTL, a paused instance that issues nothing
until it holds a lease again, and every instance stopping when etcd goes away. Across every
scenario no ID is ever issued twice."""
import http.client
import json
import os
import re
import signal
import socket
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd, free_port  # noqa: E402
from etcd_process import Etcd  # noqa: E402

TTL_S = 2
MARGIN_MS = 500  # the default, a quarter of the TTL
PREFIX = "/ticketd/test/workers/"
EPOCH_MS = 1767225600000

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
snowflake:
  worker_id:
    source: etcd
    endpoints: [ENDPOINTS]
    prefix: PREFIX
    ttl_s: TTL
sequences:
  - {{ name: Snowflake64, kind: snowflake }}
"""


def parts(snowflake_id):
    return ((snowflake_id >> 22) + EPOCH_MS, (snowflake_id >> 12) & 1023, snowflake_id & 4095)


def next_id(t, timeout=5):
    """(id, None) or (None, error code)."""
    c = http.client.HTTPConnection("127.0.0.1", t.http_port, timeout=timeout)
    try:
        c.request("POST", "/v1/sequences/Snowflake64/next", body="{}",
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        body = json.loads(r.read() or b"null")
    finally:
        c.close()
    if r.status == 200:
        return int(body["ids"][0]), None
    return None, body["error"]["code"]


class SnowflakeEtcd(unittest.TestCase):
    def setUp(self):
        self.etcd = Etcd().start()
        self.instances = []
        self.issued = []  # every ID any instance returned, for the no-duplicates check

    def tearDown(self):
        for t in self.instances:
            if t.proc and t.proc.poll() is None:
                os.kill(t.proc.pid, signal.SIGCONT)
            t.cleanup()
        self.etcd.cleanup()
        self.assertEqual(len(self.issued), len(set(self.issued)), "an ID was issued twice")

    def config(self, endpoints=None):
        eps = ", ".join(endpoints or [self.etcd.endpoint])
        return (CONFIG.replace("ENDPOINTS", eps).replace("PREFIX", PREFIX)
                .replace("TTL", str(TTL_S)))

    def start(self, endpoints=None):
        t = Ticketd(config=self.config(endpoints)).start()
        self.instances.append(t)
        return t

    def take(self, t, n):
        ids = []
        for _ in range(n):
            i, err = next_id(t)
            self.assertIsNone(err)
            ids.append(i)
        self.issued.extend(ids)
        self.assertEqual(ids, sorted(ids))
        return ids

    def workers(self):
        return {k[len(PREFIX):]: v for k, v in self.etcd.range(PREFIX, prefix=True).items()
                if "/" not in k[len(PREFIX):]}

    def test_three_instances_get_distinct_worker_ids(self):
        ts = [self.start() for _ in range(3)]
        seen = []
        for t in ts:
            ids = self.take(t, 300)
            ws = {parts(i)[1] for i in ids}
            self.assertEqual(len(ws), 1, ws)
            seen.append(ws.pop())
        self.assertEqual(seen, [0, 1, 2])
        claims = [re.search(r"claimed worker ID \d+ .* in ([0-9.]+) ms", t.log_text()) for t in ts]
        self.assertTrue(all(claims), [t.log_text() for t in ts])
        print("\nclaim (grant, list, txn, mark) took " +
              ", ".join(m.group(1) + " ms" for m in claims))
        held = self.workers()
        self.assertEqual(sorted(held), ["0", "1", "2"])
        for w, (owner, lease) in held.items():
            self.assertNotEqual(lease, 0)
            self.assertIn("pid=", owner)
        # The marks outlive the leases: they are bound to none.
        marks = self.etcd.range(PREFIX, prefix=True)
        self.assertEqual(marks[PREFIX + "0/hwm"][1], 0)
        # A clean stop revokes: the ID is free at once, and its mark stays.
        ts[1].stop()
        self.assertEqual(sorted(self.workers()), ["0", "2"])
        self.assertIn(PREFIX + "1/hwm", self.etcd.range(PREFIX, prefix=True))

    def test_a_killed_instances_id_is_reused_only_after_the_ttl(self):
        a, b, c = self.start(), self.start(), self.start()
        for t in (a, b, c):
            self.take(t, 50)
        last_b = self.take(b, 200)[-1]
        b.kill9()
        killed_at = time.time()
        # Its key is still there: a newcomer gets the next free ID, not B's.
        d = self.start()
        self.assertEqual({parts(i)[1] for i in self.take(d, 50)}, {3})
        while "1" in self.workers():
            self.assertLess(time.time() - killed_at, TTL_S + 3, "B's key never expired")
            time.sleep(0.02)
        freed_after = time.time() - killed_at
        # The key goes at the last keepalive + TTL: at least TTL - renewal interval after the
        # kill, and not much later than the TTL.
        self.assertGreaterEqual(freed_after, TTL_S - TTL_S / 3 - 0.2)
        self.assertLessEqual(freed_after, TTL_S + 1.5)
        e = self.start()
        ids = self.take(e, 200)
        self.assertEqual({parts(i)[1] for i in ids}, {1})
        self.assertGreater(parts(ids[0])[0], parts(last_b)[0])
        print(f"\nkill -9: worker 1 freed {freed_after:.2f} s after the kill (TTL {TTL_S} s)")

    def test_a_paused_instance_issues_nothing_until_it_holds_a_lease_again(self):
        a = self.start()
        b = self.start()
        before = self.take(a, 200)
        self.take(b, 10)
        self.assertEqual({parts(i)[1] for i in before}, {0})
        os.kill(a.proc.pid, signal.SIGSTOP)
        stopped_at = time.time()
        while "0" in self.workers():
            self.assertLess(time.time() - stopped_at, TTL_S + 3)
            time.sleep(0.02)
        # Another instance takes worker 0 while A is paused; it starts after A's mark.
        d = self.start()
        d_ids = self.take(d, 200)
        self.assertEqual({parts(i)[1] for i in d_ids}, {0})
        self.assertGreater(parts(d_ids[0])[0], parts(before[-1])[0])
        # A request is already queued when A resumes: it must not get an ID under worker 0.
        queued = socket.create_connection(("127.0.0.1", a.http_port))
        queued.sendall(b"POST /v1/sequences/Snowflake64/next HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        os.kill(a.proc.pid, signal.SIGCONT)
        queued.settimeout(10)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = queued.recv(4096)
            if not chunk:
                break
            reply += chunk
        queued.close()
        head, _, body = reply.partition(b"\r\n\r\n")
        first = json.loads(body)
        if head.startswith(b"HTTP/1.1 200"):
            first_id = int(first["ids"][0])
            self.issued.append(first_id)
            self.assertNotEqual(parts(first_id)[1], 0, "a stale worker ID after the pause")
        else:
            self.assertEqual(first["error"]["code"], "worker_lease_lost", reply)
        # Then A re-claims (a free ID: 2) and issues again, never under worker 0.
        deadline = time.time() + 10
        after = []
        while time.time() < deadline and len(after) < 200:
            i, err = next_id(a)
            if err is not None:
                self.assertEqual(err, "worker_lease_lost")
                time.sleep(0.01)
                continue
            after.append(i)
        self.issued.extend(after)
        self.assertEqual(len(after), 200)
        self.assertEqual({parts(i)[1] for i in after}, {2})
        self.assertGreater(after[0], before[-1])
        self.assertIn("dropped", a.log_text())
        self.take(d, 50)
        print(f"\nSIGSTOP: first reply after resume: {'error' if 'error' in first else 'id'}")

    def test_stopping_etcd_stops_every_instance_within_the_ttl(self):
        ts = [self.start() for _ in range(3)]
        for t in ts:
            self.take(t, 50)
        self.etcd.kill()
        killed_at = time.time()
        stopped_after = {}
        while len(stopped_after) < len(ts) and time.time() - killed_at < TTL_S + 3:
            for n, t in enumerate(ts):
                if n in stopped_after:
                    continue
                i, err = next_id(t)
                if err is None:
                    self.issued.append(i)
                    # Nothing past the window: last renewal (<= kill) + TTL - margin.
                    self.assertLess(parts(i)[0], killed_at * 1000 + TTL_S * 1000 - MARGIN_MS + 50)
                else:
                    self.assertEqual(err, "worker_lease_lost")
                    stopped_after[n] = time.time() - killed_at
            time.sleep(0.01)
        self.assertEqual(len(stopped_after), 3, stopped_after)
        for n, after in stopped_after.items():
            self.assertLessEqual(after, TTL_S, f"instance {n} issued {after:.2f} s after etcd died")
        print("\netcd killed: instances stopped after " +
              ", ".join(f"{s:.2f} s" for s in sorted(stopped_after.values())))
        # etcd back (same data): every instance issues again, still without a duplicate.
        self.etcd.start()
        for t in ts:
            deadline = time.time() + 15
            while time.time() < deadline:
                i, err = next_id(t)
                if err is None:
                    self.issued.append(i)
                    break
                time.sleep(0.05)
            else:
                self.fail("an instance never issued again after etcd came back")
            self.take(t, 20)

    def test_start_fails_over_to_a_live_endpoint_and_refuses_to_start_without_etcd(self):
        dead = f"http://127.0.0.1:{free_port()}"
        a = self.start(endpoints=[dead, self.etcd.endpoint])
        self.assertEqual({parts(i)[1] for i in self.take(a, 20)}, {0})
        alone = Ticketd(config=self.config(endpoints=[dead]))
        self.instances.append(alone)
        alone.start(wait=False)
        self.assertEqual(alone.proc.wait(timeout=30), 1)
        self.assertIn("no worker ID from etcd", alone.log_text())

    def test_the_mysql_front_end_reports_a_lost_lease_as_read_only_1290(self):
        import pymysql
        a = self.start()
        conn = pymysql.connect(host="127.0.0.1", port=a.mysql_port, user="app",
                               password="s3cret-app", database="tickets", autocommit=True)
        cur = conn.cursor()
        cur.execute("SELECT NEXTVAL(Snowflake64)")
        self.issued.append(cur.fetchone()[0])
        self.etcd.kill()
        deadline = time.time() + TTL_S + 2
        code = None
        while time.time() < deadline and code is None:
            try:
                cur.execute("SELECT NEXTVAL(Snowflake64)")
                self.issued.append(cur.fetchone()[0])
            except pymysql.err.MySQLError as e:
                code = e.args[0]
            time.sleep(0.02)
        self.assertEqual(code, 1290)
        cur.execute("SELECT 1")  # the connection survives
        self.assertEqual(cur.fetchone()[0], 1)
        conn.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
