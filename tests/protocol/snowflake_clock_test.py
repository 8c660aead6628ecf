#!/usr/bin/python3
"""A Snowflake restart under a clock set back by 10 s (libfaketime from Debian) never repeats an
ID. ticketd is killed (-9) while issuing, then restarted with its wall clock 10 s behind:
- policy `wait` (max_backward_ms 5): requests are refused with a clear clock error (the clock is
  further behind the previous run than the policy allows), and no ID at or below the last one is
  ever issued;
- policy `logical`: IDs continue at once, above the previous run's, ahead of the (fake) clock;
- back on the real clock with policy `wait`: IDs continue above everything issued before."""
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

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
snowflake:
  worker_id: {{ source: static, id: 3 }}
  clock: {{ policy: POLICY, max_backward_ms: 5 }}
sequences:
  - {{ name: Snowflake64, kind: snowflake }}
"""


def http_next(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/v1/sequences/Snowflake64/next", body="{}",
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return r.status, body


def mysql_conn(t):
    return pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="app",
                           password="s3cret-app", database="tickets", autocommit=True)


def take_mysql(cur):
    cur.execute("REPLACE INTO Snowflake64 (stub) VALUES ('a')")
    cur.execute("SELECT LAST_INSERT_ID()")
    return cur.fetchone()[0]


class SnowflakeClockStepBack(unittest.TestCase):
    def start(self, t, policy, fake_offset=None):
        with open(t.config_path, "w") as f:
            f.write(t.config_text.replace("POLICY", policy))
        saved = dict(os.environ)
        if fake_offset:
            os.environ["LD_PRELOAD"] = LIBFAKETIME
            os.environ["FAKETIME"] = fake_offset
            os.environ["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            os.environ["FAKETIME_NO_CACHE"] = "1"
            # The sanitizer build must accept a preloaded library ahead of its runtime.
            os.environ["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "") +
                                          ":verify_asan_link_order=0").lstrip(":")
        try:
            t.start()
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_restart_with_clock_set_back_10s_never_repeats(self):
        self.assertTrue(os.path.exists(LIBFAKETIME), "faketime is installed by scripts/setup")
        t = Ticketd(config=CONFIG)
        try:
            # Run 1, real clock: issue through both front ends, then kill -9 mid-stream.
            self.start(t, "wait")
            conn = mysql_conn(t)
            cur = conn.cursor()
            issued = [take_mysql(cur) for _ in range(2000)]
            for _ in range(200):
                status, body = http_next(t.http_port)
                self.assertEqual(status, 200, body)
                issued.append(int(body["ids"][0]))
            conn.close()
            t.kill9()
            self.assertEqual(len(issued), len(set(issued)))
            highest = max(issued)

            # Run 2, clock 10 s behind, policy wait: clear refusals, never an old ID.
            self.start(t, "wait", "-10s")
            conn = mysql_conn(t)
            cur = conn.cursor()
            cur.execute("SELECT NOW()")
            server_now = time.mktime(time.strptime(str(cur.fetchone()[0]), "%Y-%m-%d %H:%M:%S"))
            real_now = time.mktime(time.gmtime())
            self.assertGreater(real_now - server_now, 8, "faketime did not set the clock back")
            refusals = 0
            deadline = time.time() + 1.5
            while time.time() < deadline:
                try:
                    v = take_mysql(cur)
                    self.assertGreater(v, highest, "an ID at or below the previous run's")
                    issued.append(v)
                except pymysql.err.MySQLError as e:
                    refusals += 1
                    self.assertIn("behind", str(e))
                status, body = http_next(t.http_port)
                if status == 200:
                    v = int(body["ids"][0])
                    self.assertGreater(v, highest)
                    issued.append(v)
                else:
                    refusals += 1
                    self.assertIn("behind", body["error"]["message"])
            self.assertGreater(refusals, 0, "a clock 10 s behind must be noticed")
            conn.close()
            self.assertIn("clock moved back", t.log_text())
            t.kill9()

            # Run 3, still 10 s behind, policy logical: IDs at once, above everything before.
            self.start(t, "logical", "-10s")
            conn = mysql_conn(t)
            cur = conn.cursor()
            run3 = [take_mysql(cur) for _ in range(1000)]
            conn.close()
            self.assertEqual(run3, sorted(run3))
            self.assertGreater(min(run3), max(issued))
            issued += run3
            t.kill9()

            # Run 4, real clock again: still above everything.
            self.start(t, "wait")
            conn = mysql_conn(t)
            cur = conn.cursor()
            run4 = []
            deadline = time.time() + 30
            while len(run4) < 1000 and time.time() < deadline:
                try:
                    run4.append(take_mysql(cur))
                except pymysql.err.MySQLError:
                    time.sleep(0.05)  # a logical run may have left the mark ahead: wait for it
            conn.close()
            self.assertEqual(len(run4), 1000)
            self.assertGreater(min(run4), max(issued))
            issued += run4
            self.assertEqual(len(issued), len(set(issued)), "an ID was issued twice")
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
