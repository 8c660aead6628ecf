#!/usr/bin/python3
"""A ULID sequence under a wall clock stepped back 10 s while ticketd runs (libfaketime reading
its offset from a file), once per clock policy (`snowflake.clock.policy`, max_backward_ms 5):
- `wait` and `fail`: requests are refused while the clock is behind the last ID (503, "behind"),
  and once the clock is back every ID sorts after all issued before;
- `logical`: IDs go on at once, each after the previous one, their time held at the last
  millisecond issued (ahead of the faked clock) until the clock catches up.
No ID is ever issued twice or out of order within the process, whatever the policy."""
import http.client
import json
import os
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
snowflake:
  clock: {{ policy: POLICY, max_backward_ms: 5 }}
sequences:
  - {{ name: Events, kind: ulid }}
"""


def ulid_ms(ulid):
    ms = 0
    for c in ulid[:10]:
        ms = ms * 32 + ALPHABET.index(c)
    return ms


def next_ids(port, count):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/v1/sequences/Events/next", body=json.dumps({"count": count}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return r.status, body


class UlidClockStepBack(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(LIBFAKETIME), "faketime is installed by scripts/setup")
        self.work = tempfile.TemporaryDirectory(prefix="ticketd-ulid-clock-")
        self.clock_path = os.path.join(self.work.name, "faketime")

    def tearDown(self):
        self.work.cleanup()

    def set_offset(self, seconds):
        with open(self.clock_path + ".tmp", "w") as f:
            f.write(f"{seconds:+.3f} x1\n")
        os.replace(self.clock_path + ".tmp", self.clock_path)

    def start(self, policy):
        self.set_offset(0)
        # The sanitizer build must accept a preloaded library ahead of its runtime.
        asan = (os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
        t = Ticketd(config=CONFIG.replace("POLICY", policy),
                    env={"LD_PRELOAD": LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE": self.clock_path,
                         "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1",
                         "ASAN_OPTIONS": asan})
        return t.start()

    def issue(self, t, issued, count=200):
        status, body = next_ids(t.http_port, count)
        self.assertEqual(status, 200, body)
        issued += body["ids"]
        return body["ids"]

    def run_policy(self, policy):
        t = self.start(policy)
        try:
            issued = []
            self.issue(t, issued)
            last_before = issued[-1]
            self.set_offset(-10)
            if policy == "logical":
                during = self.issue(t, issued)
                # Held at the last millisecond issued, not the faked clock's.
                self.assertGreaterEqual(ulid_ms(during[0]), ulid_ms(last_before))
                self.assertGreater(ulid_ms(during[0]), time.time() * 1000 - 10000 + 5000)
            else:
                status, body = next_ids(t.http_port, 1)
                self.assertEqual(status, 503, body)
                self.assertIn("behind", body["error"]["message"])
            self.set_offset(0)
            deadline = time.time() + 10
            while True:
                status, body = next_ids(t.http_port, 100)
                if status == 200:
                    issued += body["ids"]
                    break
                self.assertLess(time.time(), deadline, body)
                time.sleep(0.05)
            self.issue(t, issued)
            self.assertEqual(issued, sorted(issued), f"{policy}: out of order")
            self.assertEqual(len(set(issued)), len(issued), f"{policy}: an ID twice")
            self.assertTrue(all(len(i) == 26 for i in issued))
        finally:
            t.cleanup()

    def test_wait(self):
        self.run_policy("wait")

    def test_fail(self):
        self.run_policy("fail")

    def test_logical(self):
        self.run_policy("logical")


if __name__ == "__main__":
    unittest.main(verbosity=2)
