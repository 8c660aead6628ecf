#!/usr/bin/python3
"""Tests of the nemesis history checker (checker.py).

Each rule gets a small hand-written history that breaks it exactly once, and a near-identical
history that does not: the first must be reported under the rule's name with a message naming
the offending value, the second must pass.  A checker that passes everything is as useless as
one that flags everything, so both directions matter.  Also covered: the availability
measurement with known figures, the command line's exit code, and a scale test.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402


class History:
    """Builds a history: op() appends an invoke and its completion for one process."""

    def __init__(self):
        self.events = []

    def op(self, process, f, t0, t1, type="ok", value=None, invoke_value=None, term=None,
           **fields):
        """fields (server, space, mono) go on both events; term only on the completion."""
        invoke = {"process": process, "type": "invoke", "f": f, "time": t0, **fields}
        if invoke_value is not None:
            invoke["value"] = invoke_value
        done = {"process": process, "type": type, "f": f, "time": t1, **fields}
        if value is not None:
            done["value"] = value
        if term is not None:
            done["term"] = term
        self.events += [invoke, done]
        return self

    def ticket(self, process, value, t0, t1=None, **fields):
        return self.op(process, "ticket", t0, t0 + 0.1 if t1 is None else t1, value=value,
                       **fields)

    def block(self, process, first, last, step, t0, **fields):
        return self.op(process, "block", t0, t0 + 0.1,
                       value={"first": first, "last": last, "step": step}, **fields)

    def reserve(self, process, n, reservation, t0, t1=None, space="g"):
        return self.op(process, "gapless_reserve", t0, t0 + 0.1 if t1 is None else t1,
                       value={"id": n, "reservation": reservation}, space=space)

    def settle(self, process, f, n, reservation, t0, type="ok", t1=None, space="g"):
        """A gapless_commit or gapless_release: invoke and completion carry the value."""
        value = {"id": n, "reservation": reservation}
        return self.op(process, f, t0, t0 + 0.1 if t1 is None else t1, type=type,
                       value=value if type != "info" else None, invoke_value=value, space=space)

    def final(self, committed, voided, through, first=1, t=100.0, space="g"):
        return self.op("auditor", "gapless_final", t, t + 0.1, space=space,
                       value={"committed": committed, "voided": voided,
                              "committed_through": through, "first": first})

    def acquire(self, process, worker, lease, t0, t1, ttl, pool="w"):
        return self.op(process, "worker_acquire", t0, t1, value={
            "pool": pool, "worker_id": worker, "lease_id": lease, "ttl_s": ttl})

    def lease_op(self, process, f, worker, lease, t0, t1, ttl=None, type="ok", pool="w"):
        """A worker_keepalive or worker_release of a lease."""
        value = {"pool": pool, "worker_id": worker, "lease_id": lease}
        if ttl is not None:
            value["ttl_s"] = ttl
        return self.op(process, f, t0, t1, type=type, value=value if type == "ok" else None,
                       invoke_value=value)

    def nemesis(self, f, name, t):
        self.events.append({"process": "nemesis", "type": "info", "f": f, "value": name,
                            "time": t})
        return self


class CheckerTest(unittest.TestCase):
    def assertViolation(self, history, rule, *needles, slack_s=0.0):
        """Exactly the rule is reported, and one of its messages names every needle."""
        result = checker.check(history.events, slack_s=slack_s)
        self.assertFalse(result.ok, "expected a violation, got none")
        rules = {v.rule for v in result.violations}
        self.assertEqual(rules, {rule}, "\n".join(map(str, result.violations)))
        messages = [v.message for v in result.violations]
        self.assertTrue(any(all(str(n) in m for n in needles) for m in messages),
                        f"no message names {needles}: {messages}")
        return result

    def assertPasses(self, history, slack_s=0.0):
        result = checker.check(history.events, slack_s=slack_s)
        self.assertTrue(result.ok, "\n".join(map(str, result.violations)))
        return result


class Unique(CheckerTest):
    def test_duplicate_ticket_across_two_servers(self):
        h = History().ticket("p1", 41, 1.0, server="a", space="s") \
                     .ticket("p2", 41, 1.5, server="b", space="s")
        result = self.assertViolation(h, "unique", "41", "p1", "p2", "server a", "server b")
        self.assertEqual(len(result.violations), 1)
        self.assertEqual([e["process"] for e in result.violations[0].events], ["p1", "p2"])

    def test_distinct_tickets_across_two_servers_pass(self):
        h = History().ticket("p1", 41, 1.0, server="a", space="s") \
                     .ticket("p2", 42, 1.5, server="b", space="s")
        result = self.assertPasses(h)
        self.assertEqual(result.stats["ids"], {"s": 2})

    def test_same_id_in_two_spaces_passes(self):
        h = History().ticket("p1", 41, 1.0, space="s").ticket("p2", 41, 1.5, space="t")
        self.assertPasses(h)

    def test_ticket_inside_another_process_block(self):
        h = History().block("p1", 1001, 2000, 1, 1.0, space="s") \
                     .ticket("p2", 1500, 2.0, space="s")
        self.assertViolation(h, "unique", "1500", "block [1001..2000 step 1]", "p1", "p2")

    def test_ticket_between_values_of_a_strided_block_passes(self):
        # Odd/even servers: an odd block and an even ticket in the same range do not collide.
        h = History().block("p1", 1001, 1999, 2, 1.0, space="s") \
                     .ticket("p2", 1500, 2.0, space="s")
        result = self.assertPasses(h)
        self.assertEqual(result.stats["ids"], {"s": 501})

    def test_overlapping_strided_blocks(self):
        # 1, 3, 5, ... and 4, 7, 10, ... share 7, 13, ..., 97: sixteen values from 7 on.
        h = History().block("p1", 1, 99, 2, 1.0, space="s") \
                     .block("p2", 4, 100, 3, 2.0, space="s")
        self.assertViolation(h, "unique", "ID 7", "16 shared")

    def test_block_intersection_agrees_with_brute_force(self):
        rng = random.Random(7)
        for _ in range(2000):
            a = sorted(rng.sample(range(0, 60), 2)) + [rng.randint(1, 7)]
            b = sorted(rng.sample(range(0, 60), 2)) + [rng.randint(1, 7)]
            a[1] -= (a[1] - a[0]) % a[2]
            b[1] -= (b[1] - b[0]) % b[2]
            common = sorted(set(range(a[0], a[1] + 1, a[2])) & set(range(b[0], b[1] + 1, b[2])))
            expected = (common[0], len(common)) if common else None
            self.assertEqual(checker._common_values(tuple(a), tuple(b)), expected, (a, b))

    def test_interleaved_blocks_pass(self):
        h = History().block("p1", 1, 99, 2, 1.0, space="s") \
                     .block("p2", 2, 100, 2, 2.0, space="s") \
                     .block("p1", 101, 199, 2, 3.0, space="s")
        self.assertPasses(h)

    def test_snowflake_and_ticket_given_as_strings(self):
        big = 2 ** 64 - 1
        h = History().op("p1", "snowflake", 1.0, 1.1, value=str(big)) \
                     .op("p2", "snowflake", 2.0, 2.1, value=big)
        self.assertViolation(h, "unique", str(big))

    def test_failed_and_info_tickets_do_not_count(self):
        h = History().ticket("p1", 7, 1.0).op("p2", "ticket", 2.0, 2.1, type="info", value=7) \
                     .op("p3", "ticket", 3.0, 3.1, type="fail", value=7)
        self.assertPasses(h)

    def test_released_gapless_number_reserved_again_is_not_a_duplicate(self):
        h = History().reserve("p1", 1, "r1", 1.0) \
                     .settle("p1", "gapless_release", 1, "r1", 2.0) \
                     .reserve("p2", 1, "r2", 3.0) \
                     .settle("p2", "gapless_commit", 1, "r2", 4.0)
        self.assertPasses(h)


class Monotonic(CheckerTest):
    def history(self, mono):
        return History().ticket("p1", 5, 1.0, space="s", mono=mono) \
                        .ticket("p1", 3, 2.0, space="s", mono=mono)

    def test_decrease_under_a_mono_key(self):
        self.assertViolation(self.history("cluster"), "monotonic", "value 3", "5", "cluster")

    def test_same_values_without_mono_pass(self):
        self.assertPasses(self.history(None))

    def test_order_is_only_promised_per_server(self):
        # Independent odd/even servers: a lower value from the other server is fine.
        h = History().ticket("p1", 101, 1.0, space="s", mono="a", server="a") \
                     .ticket("p1", 4, 2.0, space="s", mono="b", server="b") \
                     .ticket("p1", 103, 3.0, space="s", mono="a", server="a")
        self.assertPasses(h)

    def test_block_must_lie_above_previous_value(self):
        # 9, 11, 13... does not contain 10 (so no duplicate), but starts below it.
        h = History().ticket("p1", 10, 1.0, space="s", mono="cluster") \
                     .block("p1", 9, 29, 2, 2.0, space="s", mono="cluster")
        self.assertViolation(h, "monotonic", "block [9..29 step 2]", "10")

    def test_ticket_after_block_must_exceed_block_last(self):
        # 11, 13, ..., 19 then 18: not a duplicate, but below the block's last value.
        h = History().block("p1", 11, 19, 2, 1.0, space="s", mono="cluster") \
                     .ticket("p1", 18, 2.0, space="s", mono="cluster")
        self.assertViolation(h, "monotonic", "value 18", "19")

    def test_ticket_above_block_last_passes(self):
        h = History().block("p1", 11, 19, 2, 1.0, space="s", mono="cluster") \
                     .ticket("p1", 20, 2.0, space="s", mono="cluster") \
                     .ticket("p1", 3, 3.0, space="t", mono="cluster")  # another space
        self.assertPasses(h)

    def test_other_processes_do_not_constrain_each_other(self):
        h = History().ticket("p1", 50, 1.0, space="s", mono="cluster") \
                     .ticket("p2", 10, 2.0, space="s", mono="cluster")
        self.assertPasses(h)


class Gapless(CheckerTest):
    def test_number_committed_ok_twice(self):
        h = History().reserve("p1", 3, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 3, "r1", 2.0) \
                     .settle("p1", "gapless_commit", 3, "r1", 3.0)
        self.assertViolation(h, "gapless", "number 3", "committed twice")

    def test_one_ok_commit_after_a_failed_retry_passes(self):
        h = History().reserve("p1", 3, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 3, "r1", 2.0) \
                     .settle("p1", "gapless_commit", 3, "r1", 3.0, type="fail")
        self.assertPasses(h)

    def test_committed_number_reserved_again(self):
        h = History().reserve("p1", 3, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 3, "r1", 2.0) \
                     .reserve("p2", 3, "r2", 2.5)
        self.assertViolation(h, "gapless", "number 3", "reserved again", "r2")

    def test_reserve_invoked_before_the_commit_completed_passes(self):
        # Only a reserve invoked after the commit completed proves the number was reused.
        h = History().reserve("p1", 3, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 3, "r1", 2.0, t1=3.0) \
                     .reserve("p2", 4, "r2", 2.5)
        self.assertPasses(h)

    def test_final_audit_with_a_hole(self):
        h = History()
        for n in (1, 2, 4):
            h.reserve("p1", n, f"r{n}", float(n)).settle("p1", "gapless_commit", n, f"r{n}",
                                                         n + 0.5)
        h.final([1, 2, 4], [], 4)
        self.assertViolation(h, "gapless", "hole: 3")

    def test_final_audit_without_a_hole_passes(self):
        h = History()
        for n in (1, 2, 4):
            h.reserve("p1", n, f"r{n}", float(n)).settle("p1", "gapless_commit", n, f"r{n}",
                                                         n + 0.5)
        h.final([1, 2, 4], [3], 4)
        self.assertPasses(h)

    def test_final_audit_as_a_map_of_spaces(self):
        h = History().reserve("p1", 1, "r1", 1.0).settle("p1", "gapless_commit", 1, "r1", 2.0)
        h.op("auditor", "gapless_final", 9.0, 9.1, value={
            "g": {"committed": [1], "voided": [], "committed_through": 2, "first": 1}})
        self.assertViolation(h, "gapless", "hole: 2")

    def test_final_audit_listing_a_number_twice(self):
        h = History().reserve("p1", 1, "r1", 1.0).settle("p1", "gapless_commit", 1, "r1", 2.0)
        h.final([1, 1], [], 1)
        self.assertViolation(h, "gapless", "more than once", "1")

    def test_final_audit_commits_a_number_nobody_tried_to_commit(self):
        h = History().reserve("p1", 1, "r1", 1.0).settle("p1", "gapless_commit", 1, "r1", 2.0)
        h.final([1, 2], [], 2)
        self.assertViolation(h, "gapless", "number 2", "no client ever tried")

    def test_final_audit_voiding_an_untried_number_passes(self):
        h = History().reserve("p1", 1, "r1", 1.0).settle("p1", "gapless_commit", 1, "r1", 2.0)
        h.final([1], [2], 2)
        self.assertPasses(h)

    def test_info_commit_committed_in_final_passes(self):
        h = History().reserve("p1", 1, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 1, "r1", 2.0, type="info")
        h.final([1], [], 1)
        self.assertPasses(h)

    def test_info_commit_voided_in_final_passes(self):
        h = History().reserve("p1", 1, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 1, "r1", 2.0, type="info")
        h.final([], [1], 1)
        self.assertPasses(h)

    def test_failed_commit_appearing_committed(self):
        h = History().reserve("p1", 1, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 1, "r1", 2.0, type="fail")
        h.final([1], [], 1)
        self.assertViolation(h, "gapless", "number 1", "every commit attempt", "failed")

    def test_failed_commit_then_info_commit_of_another_reservation_passes(self):
        h = History().reserve("p1", 1, "r1", 1.0) \
                     .settle("p1", "gapless_commit", 1, "r1", 2.0, type="fail") \
                     .reserve("p2", 1, "r2", 3.0) \
                     .settle("p2", "gapless_commit", 1, "r2", 4.0, type="info")
        h.final([1], [], 1)
        self.assertPasses(h)

    def test_ok_commit_voided_in_final(self):
        h = History().reserve("p1", 1, "r1", 1.0).settle("p1", "gapless_commit", 1, "r1", 2.0)
        h.final([], [1], 1)
        self.assertViolation(h, "gapless", "number 1", "committed ok", "voided")

    def test_commit_unfinished_at_history_end_counts_as_attempt(self):
        h = History().reserve("p1", 1, "r1", 1.0)
        h.events.append({"process": "p1", "type": "invoke", "f": "gapless_commit", "time": 2.0,
                         "space": "g", "value": {"id": 1, "reservation": "r1"}})
        h.final([1], [], 1)
        self.assertPasses(h)


class Workers(CheckerTest):
    def test_overlapping_leases(self):
        h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                     .acquire("p2", 3, "L2", 5.0, 5.1, 10.0)
        self.assertViolation(h, "workers", "worker 3", "L1", "L2")

    def test_overlap_within_slack_passes(self):
        h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                     .acquire("p2", 3, "L2", 9.5, 9.6, 10.0)
        self.assertPasses(h, slack_s=0.5)
        self.assertViolation(h, "workers", "L1", "L2", slack_s=0.3)

    def test_back_to_back_leases_pass(self):
        # L1 expires at 0.0 + 10 = 10.0, exactly when L2's acquire completes.
        h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                     .acquire("p2", 3, "L2", 9.9, 10.0, 10.0)
        self.assertPasses(h)

    def test_different_workers_or_pools_pass(self):
        h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                     .acquire("p2", 4, "L2", 5.0, 5.1, 10.0) \
                     .acquire("p3", 3, "L3", 5.0, 5.1, 10.0, pool="other")
        self.assertPasses(h)

    def test_ok_keepalive_extends_the_lease(self):
        h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                     .lease_op("p1", "worker_keepalive", 3, "L1", 8.0, 8.1, ttl=10.0) \
                     .acquire("p2", 3, "L2", 11.0, 12.0, 10.0)
        self.assertViolation(h, "workers", "worker 3", "L1", "L2")

    def test_failed_or_unknown_keepalive_does_not_extend(self):
        for outcome in ("fail", "info"):
            with self.subTest(outcome=outcome):
                h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                             .lease_op("p1", "worker_keepalive", 3, "L1", 8.0, 8.1, ttl=10.0,
                                       type=outcome) \
                             .acquire("p2", 3, "L2", 11.0, 12.0, 10.0)
                self.assertPasses(h)

    def test_release_ends_the_period(self):
        # Released at 5.0 (even with an unknown outcome): L2 from 6.0 does not overlap.
        for outcome in ("ok", "info"):
            with self.subTest(outcome=outcome):
                h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                             .lease_op("p1", "worker_release", 3, "L1", 5.0, 5.1, type=outcome) \
                             .acquire("p2", 3, "L2", 5.5, 6.0, 10.0)
                self.assertPasses(h)

    def test_without_the_release_the_same_leases_overlap(self):
        h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                     .acquire("p2", 3, "L2", 5.5, 6.0, 10.0)
        self.assertViolation(h, "workers", "worker 3", "L1", "L2")


class Fencing(CheckerTest):
    def test_old_term_serves_a_request_invoked_after_a_newer_term_served(self):
        h = History().ticket("p1", 100, 9.0, 10.0, server="b", term=2) \
                     .ticket("p2", 7, 11.0, 11.5, server="a", term=1)
        self.assertViolation(h, "fencing", "term 1", "term 2", "p2", "server a")

    def test_old_term_serving_a_request_invoked_before_passes(self):
        # p2's request was already in flight when term 2 first served: not fenced yet.
        h = History().ticket("p1", 100, 9.0, 10.0, server="b", term=2) \
                     .ticket("p2", 7, 9.5, 11.5, server="a", term=1)
        self.assertPasses(h)

    def test_events_without_term_are_not_judged(self):
        h = History().ticket("p1", 100, 9.0, 10.0, server="b", term=2) \
                     .ticket("p2", 7, 11.0, 11.5, server="a")
        self.assertPasses(h)


class WellFormed(CheckerTest):
    def test_completion_without_invoke(self):
        h = History()
        h.events.append({"process": "p1", "type": "ok", "f": "ticket", "value": 1, "time": 1.0})
        self.assertViolation(h, "history", "p1", "completes no pending invoke")

    def test_invoke_while_pending(self):
        h = History()
        h.events += [{"process": "p1", "type": "invoke", "f": "ticket", "time": 1.0},
                     {"process": "p1", "type": "invoke", "f": "ticket", "time": 2.0},
                     {"process": "p1", "type": "ok", "f": "ticket", "value": 5, "time": 2.1}]
        self.assertViolation(h, "history", "p1", "still pending")

    def test_completion_of_another_operation(self):
        h = History()
        h.events += [{"process": "p1", "type": "invoke", "f": "ticket", "time": 1.0},
                     {"process": "p1", "type": "ok", "f": "block", "time": 1.1,
                      "value": {"first": 1, "last": 2, "step": 1}}]
        self.assertViolation(h, "history", "completes an invoke of ticket")

    def test_malformed_values(self):
        h = History().ticket("p1", "twelve", 1.0) \
                     .block("p2", 10, 5, 1, 2.0)
        result = self.assertViolation(h, "history", "twelve")
        self.assertEqual(len(result.violations), 2)

    def test_interleaved_processes_and_unfinished_invoke_pass(self):
        h = History()
        h.events += [{"process": "p1", "type": "invoke", "f": "ticket", "time": 1.0},
                     {"process": "p2", "type": "invoke", "f": "ticket", "time": 1.1},
                     {"process": "p2", "type": "ok", "f": "ticket", "value": 2, "time": 1.2},
                     {"process": "p1", "type": "ok", "f": "ticket", "value": 1, "time": 1.3},
                     {"process": "p1", "type": "invoke", "f": "ticket", "time": 2.0}]
        result = self.assertPasses(h)
        self.assertEqual(result.stats["unfinished"], 1)
        self.assertEqual(result.stats["events"]["ticket ok"], 2)
        json.dumps(result.stats, sort_keys=True)  # the nemesis driver prints it so

    def test_bad_json_line_in_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "h.jsonl")
            with open(path, "w") as f:
                f.write(json.dumps({"process": "p1", "type": "invoke", "f": "ticket",
                                    "time": 1.0}) + "\n")
                f.write('{"process": "p1", "type": "ok", "f": "tic\n')
            result = checker.check(path)
            self.assertEqual([v.rule for v in result.violations], ["history"])
            self.assertIn("line 2", result.violations[0].message)


class Unavailability(CheckerTest):
    def history(self):
        # Ok tickets at 1, 4, 5, 11, 12, 19; the history spans 0..22.
        # partition [6, 8] lies in the window 5..11 (6 s); kill [14, end) covers 12..19 (7 s)
        # and 19..22 (3 s); outside faults the longest window is 1..4 (3 s).
        h = History()
        h.events.append({"process": "p0", "type": "invoke", "f": "ticket", "time": 0.0})
        h.events.append({"process": "p0", "type": "fail", "f": "ticket", "time": 0.5})
        for t in (1.0, 4.0, 5.0, 11.0, 12.0, 19.0):
            h.ticket("p1", int(t), t - 0.5, t)
        h.nemesis("start", "partition-leader-etcd", 6.0).nemesis("stop", "partition-leader-etcd",
                                                                 8.0)
        h.nemesis("start", "kill-leader", 14.0)
        h.events.append({"process": "p2", "type": "invoke", "f": "block", "time": 15.5})
        h.events.append({"process": "p2", "type": "ok", "f": "block", "time": 16.0,
                         "value": {"first": 100, "last": 199, "step": 1}})
        h.events.append({"process": "p0", "type": "invoke", "f": "ticket", "time": 21.0})
        h.events.append({"process": "p0", "type": "info", "f": "ticket", "time": 22.0})
        return h

    def test_longest_windows_per_fault(self):
        figures = checker.unavailability(self.history().events)
        self.assertEqual(figures, {"partition-leader-etcd": 6.0, "kill-leader": 7.0,
                                   "none": 3.0})

    def test_check_reports_the_same_figures(self):
        result = checker.check(self.history().events)
        self.assertTrue(result.ok, result.violations)
        self.assertEqual(result.unavailability["kill-leader"], 7.0)

    def test_other_kinds_count_when_asked(self):
        # The block at 16 splits 12..19 into 12..16 (4 s) and 16..19 (3 s).
        figures = checker.unavailability(self.history().events, f={"ticket", "block"})
        self.assertEqual(figures, {"partition-leader-etcd": 6.0, "kill-leader": 4.0,
                                   "none": 3.0})

    def test_fault_repeated_takes_the_longest_of_its_intervals(self):
        h = self.history().nemesis("start", "partition-leader-etcd", 12.5) \
                          .nemesis("stop", "partition-leader-etcd", 13.0)
        figures = checker.unavailability(h.events)
        self.assertEqual(figures["partition-leader-etcd"], 7.0)


class CommandLine(unittest.TestCase):
    def run_cli(self, events, *args):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "history.jsonl")
            with open(path, "w") as f:
                f.writelines(json.dumps(e) + "\n" for e in events)
            return subprocess.run([sys.executable, os.path.join(HERE, "checker.py"), path,
                                   *args], capture_output=True, text=True, timeout=60)

    def test_exit_1_on_violation(self):
        h = History().ticket("p1", 41, 1.0, server="a").ticket("p2", 41, 1.5, server="b")
        r = self.run_cli(h.events)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("[unique]", r.stdout)
        self.assertIn("41", r.stdout)

    def test_exit_0_when_clean(self):
        h = History().ticket("p1", 41, 1.0, server="a").ticket("p2", 42, 1.5, server="b")
        r = self.run_cli(h.events)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("no violation", r.stdout)
        self.assertIn("ticket ok: 2", r.stdout)

    def test_slack_option(self):
        h = History().acquire("p1", 3, "L1", 0.0, 0.1, 10.0) \
                     .acquire("p2", 3, "L2", 9.5, 9.6, 10.0)
        self.assertEqual(self.run_cli(h.events).returncode, 1)
        self.assertEqual(self.run_cli(h.events, "--slack", "0.5").returncode, 0)


class Scale(unittest.TestCase):
    def test_200000_tickets_in_under_10_seconds(self):
        events, processes = [], 8
        for i in range(200_000):
            process, t = f"p{i % processes}", 1_700_000_000.0 + i * 0.001
            events.append({"process": process, "type": "invoke", "f": "ticket", "time": t,
                           "server": "a", "space": "s", "mono": "cluster"})
            events.append({"process": process, "type": "ok", "f": "ticket", "time": t + 0.0005,
                           "server": "a", "space": "s", "mono": "cluster", "term": 1,
                           "value": i + 1})
        started = time.monotonic()
        result = checker.check(events)
        elapsed = time.monotonic() - started
        self.assertTrue(result.ok, result.violations[:3])
        self.assertEqual(result.stats["ids"], {"s": 200_000})
        self.assertLess(elapsed, 10.0)


if __name__ == "__main__":
    unittest.main()
