#!/usr/bin/python3
"""A ULID sequence under a wall clock stepped back 10 s while ticketd runs (libfaketime reading
its offset from a file), once per clock policy (`snowflake.clock.policy`, max_backward_ms 5):
- `wait` and `fail`: requests are refused while the clock is behind the last ID (503, "behind"),
  and once the clock is back every ID sorts after all issued before;
- `logical`: IDs go on at once, each after the previous one, their time held at the last
  millisecond issued (ahead of the faked clock) until the clock catches up.
No ID is ever issued twice or out of order within the process, whatever the policy.

UlidClockRows: the ULID rows of docs/clocks.md, one method per row, each over every policy (the
harness is snowflake_clock_test.RowHarness: the clock faked the same way, from a file)."""
import http.client
import json
import os
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from faked_clock import LIBFAKETIME_MT as LIBFAKETIME, preload  # noqa: E402
from ticketd_process import BINARY, Ticketd  # noqa: E402
from snowflake_clock_test import POLICIES, SMALL_STEP_S, RowHarness  # noqa: E402

# The pthread build (see snowflake_clock_test.py): ticketd reads the clock from many threads.
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
                    env={"LD_PRELOAD": preload(BINARY, LIBFAKETIME),
                         "FAKETIME_TIMESTAMP_FILE": self.clock_path,
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


ROW_CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
  metrics_public: true
snowflake:
  clock: {{ policy: POLICY, max_backward_ms: MAX_BACKWARD }}
sequences:
  - {{ name: Events, kind: ulid }}
"""


class UlidClockRows(RowHarness, unittest.TestCase):
    """docs/clocks.md, ULID rows: one method per row, each over every clock policy. What is
    checked is what callers get (IDs and their milliseconds, 503 clock_moved_backwards, how
    long until the first ID)."""

    CONFIG = ROW_CONFIG
    SEQUENCE = "Events"

    def ms_of(self, i):
        return ulid_ms(i)

    def key_of(self, i):
        return i

    def test_small_step_back(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t, before, after = self.small_step_back(policy)
                if policy == "fail":
                    self.assert_refusals(after, policy)
                else:
                    self.assertTrue(all(a.ok for a in after), after)
                if policy == "logical":
                    # At once, in the last ID's millisecond (the clock is 100 ms behind it).
                    self.assertEqual(self.ms_of(after[0].body["ids"][0]),
                                     self.ms_of(before[-1].body["ids"][0]))
                else:
                    self.waited.append(self.assert_held_for(before, after, SMALL_STEP_S))
                self.finish(t)

    def check_wait_out(self, policy, step_s):
        t, before, after = self.step_back_and_wait_out(policy, step_s)
        if policy == "logical":
            self.assertTrue(all(a.ok for a in after), after)
            self.assertEqual({self.ms_of(i) for i in self.ids(after)},
                             {self.ms_of(before[-1].body["ids"][0])})
        else:
            self.assert_refusals(after, policy)
            self.waited.append(self.assert_held_for(before, after, step_s))
        self.finish(t)

    def test_large_step_back(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                self.check_wait_out(policy, 2)

    def test_leap_second_stepped(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                self.check_wait_out(policy, 1)

    def test_slew(self):
        for rate in (0.9, 1.1):
            for policy in POLICIES:
                with self.subTest(policy=policy, rate=rate):
                    t, _ = self.slew(policy, rate)
                    self.finish(t)

    def test_jump_forward(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t, _, _ = self.jump_forward(policy)
                self.finish(t)

    def test_jump_forward_then_back(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t, jumped, after = self.jump_forward_then_back(policy)
                if policy == "logical":
                    self.assertTrue(all(a.ok for a in after), after)
                    self.assertEqual({self.ms_of(i) for i in self.ids(after)},
                                     {self.ms_of(jumped[-1].body["ids"][0])})
                else:
                    self.assert_refused_until_the_jumped_ids(after, jumped, policy)
                self.finish(t)

    def test_restart_with_clock_behind(self):
        # The durable mark (ulid/<name>/mark) holds across the kill: the restart resumes above
        # every ID of the previous run, as a Snowflake generator above its high-water mark. A
        # clock behind the previous run's last reading is a regression the policy judges.
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t = self.start(policy)
                before = self.issue(t, 200)
                t.kill9()
                self.restart(t, -3)
                after = self.until_issued(t, 10, 3 + 15)
                self.assert_in_order(before, after)
                if policy == "logical":
                    self.assertTrue(all(a.ok for a in after), after)
                    self.assertGreater(self.ms_of(after[0].body["ids"][0]),
                                       int(after[0].received * 1000) - 3000 + 1000)
                else:
                    self.assert_refusals(after, policy, reference="the previous run")
                    self.waited.append(self.assert_held_for(before, after, 3))
                self.finish(t)


if __name__ == "__main__":
    unittest.main(verbosity=2)
