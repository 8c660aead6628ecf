#!/usr/bin/python3
"""A UUIDv7 sequence of a real ticketd under a wall clock faked by libfaketime: the UUIDv7 rows of
docs/clocks.md, one test method per row (the harness is snowflake_clock_test.RowHarness).

A UUIDv7 generator has no clock policy: each row runs under every `snowflake.clock.policy` and
gets the same answers. A clock behind the newest UUID keeps that UUID's millisecond and counts on
in the 12 rand_a bits (RFC 9562 method 1), moving one millisecond ahead when the counter runs out;
so callers are never refused or held, and every UUID of a process sorts after the previous one.
Nothing is stored: a restart starts from the clock."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from snowflake_clock_test import POLICIES, RowHarness  # noqa: E402

CONFIG = """
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
  - {{ name: EventIds, kind: uuidv7 }}
"""


def uuid_ms(text):
    """The 48-bit unix_ms field of a canonical UUID string."""
    return int(text.replace("-", "")[:12], 16)


class UuidV7ClockRows(RowHarness, unittest.TestCase):
    """docs/clocks.md, UUIDv7 rows: one method per row, each under every configured policy."""

    CONFIG = CONFIG
    SEQUENCE = "EventIds"

    def ms_of(self, i):
        return uuid_ms(i)

    def key_of(self, i):
        return i

    def assert_held_at(self, answers, ms):
        """Every answer an ID, all in millisecond `ms` (a few IDs never fill its counter)."""
        self.assertTrue(all(a.ok for a in answers), answers)
        self.assertEqual({self.ms_of(i) for i in self.ids(answers)}, {ms})

    def test_small_step_back(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t, before, after = self.small_step_back(policy)
                self.assert_held_at(after, self.ms_of(before[-1].body["ids"][0]))
                self.finish(t)

    def check_step(self, policy, step_s):
        t, before, after = self.step_back_and_wait_out(policy, step_s)
        self.assert_held_at(after, self.ms_of(before[-1].body["ids"][0]))
        self.finish(t)

    def test_large_step_back(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                self.check_step(policy, 2)

    def test_leap_second_stepped(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                self.check_step(policy, 1)

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
                self.assert_held_at(after, self.ms_of(jumped[-1].body["ids"][0]))
                self.finish(t)

    def test_restart_with_clock_behind(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t = self.start(policy)
                before = self.issue(t, 200)
                t.kill9()
                self.restart(t, -3)
                after = self.issue(t, 10)
                self.assert_in_order(after)
                self.assertLess(after[0].body["ids"][0], before[-1].body["ids"][0])
                self.assertLess(self.ms_of(after[0].body["ids"][0]),
                                int(after[0].received * 1000) - 2900)
                self.assertEqual(set(self.ids(before)) & set(self.ids(after)), set())
                self.finish(t)


if __name__ == "__main__":
    unittest.main(verbosity=2)
