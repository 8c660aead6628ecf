#!/usr/bin/python3
"""Snowflake sequences of a real ticketd under a wall clock faked by libfaketime (Debian's), one
test method per row of docs/clocks.md (the rows' Snowflake column), plus the check that keeps that
table true: every test it names exists, and its alert example reads only metrics ticketd exports.

The clock is stepped while ticketd runs (libfaketime reads an offset, and a rate, from a file on
every call); the monotonic clock stays real, as under NTP. Each row runs once per clock policy
(`snowflake.clock.policy`) and checks what the caller sees (IDs, 503 `clock_moved_backwards`),
how long a refusal lasts (a lower bound from the fake clock, never a speed), and the
`ticketd_snowflake_events_total` / `ticketd_snowflake_ahead_seconds` series. The oldest test here,
SnowflakeClockStepBack, kills ticketd (-9) while issuing and restarts it 10 s behind.

Helpers for the ULID and UUIDv7 files (ulid_clock_test.py, uuidv7_clock_test.py) live here too:
FakedClock, Client, RowHarness."""
import ast
import datetime
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "monitoring"))
from faked_clock import LIBFAKETIME_MT as LIBFAKETIME, preload  # noqa: E402
from ticketd_process import BINARY, Ticketd  # noqa: E402
from promql_names import exported_names, metric_names  # noqa: E402

import pymysql  # noqa: E402
import yaml  # noqa: E402

# The pthread build: it serializes the clock calls of ticketd's threads. The other one keeps
# what it reads from the offset file in unguarded statics, so one thread may use a half-parsed
# offset while another re-reads the file.
POLICIES = ("wait", "fail", "logical")
DOC = os.path.join(SOURCE, "docs", "clocks.md")
# The classes whose every test method is a row of docs/clocks.md (file, class).
ROW_CLASSES = (("tests/protocol/snowflake_clock_test.py", "SnowflakeClockRows"),
               ("tests/protocol/ulid_clock_test.py", "UlidClockRows"),
               ("tests/protocol/uuidv7_clock_test.py", "UuidV7ClockRows"))
# One millisecond of slack in a bound read off the fake clock: IDs carry whole milliseconds.
TRUNCATION_S = 0.002
SMALL_STEP_S = 0.100  # within max_backward_ms (200 in these tests)


class FakedClock:
    """The wall clock of the ticketd processes a test starts: libfaketime reads an offset and a
    rate from a file on every clock call (FAKETIME_NO_CACHE), so a test steps the clock of a
    running ticketd. The monotonic clock stays real (FAKETIME_DONT_FAKE_MONOTONIC), as under
    NTP: timers wait real time. A rate other than 1 counts from the start of the process, so it
    is set before ticketd starts and left alone while it runs."""

    def __init__(self):
        if not os.path.exists(LIBFAKETIME):
            raise AssertionError(f"{LIBFAKETIME} is missing: scripts/setup installs libfaketime")
        self.dir = tempfile.TemporaryDirectory(prefix="ticketd-clock-")
        self.path = os.path.join(self.dir.name, "faketime")
        self.set(0)

    def set(self, offset_s, rate=1):
        with open(self.path + ".tmp", "w") as f:
            f.write(f"{offset_s:+.3f} x{rate}\n")
        os.replace(self.path + ".tmp", self.path)

    def env(self):
        # The sanitizer build must accept a preloaded library ahead of its runtime.
        asan = (os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
        return {"LD_PRELOAD": preload(BINARY, LIBFAKETIME), "FAKETIME_TIMESTAMP_FILE": self.path,
                "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1",
                "ASAN_OPTIONS": asan}

    def cleanup(self):
        self.dir.cleanup()


class Answer:
    """One POST .../next: when it was sent and answered (real time, seconds), status, body."""

    def __init__(self, sent, received, status, body):
        self.sent, self.received, self.status, self.body = sent, received, status, body

    @property
    def ok(self):
        return self.status == 200

    @property
    def code(self):
        return self.body.get("error", {}).get("code")

    @property
    def message(self):
        return self.body.get("error", {}).get("message", "")

    def __repr__(self):
        return f"Answer({self.status}, {json.dumps(self.body)[:300]})"


class Client:
    """A keep-alive HTTP connection to one ticketd."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def call(self, method, path, body=None):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            self.conn.request(method, path, json.dumps(body) if body is not None else None,
                              headers)
            r = self.conn.getresponse()
            return r.status, r.read().decode()
        except (http.client.HTTPException, OSError):
            self.close()
            raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def next(self, sequence, count=1):
        sent = time.time()
        status, text = self.call("POST", f"/v1/sequences/{sequence}/next", {"count": count})
        return Answer(sent, time.time(), status, json.loads(text))

    def samples(self):
        """[(name, {label: value}, value)] of /metrics (http.metrics_public)."""
        status, text = self.call("GET", "/metrics")
        if status != 200:
            raise AssertionError(f"/metrics: {status} {text[:200]}")
        out = []
        for line in text.splitlines():
            m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
            if m and not line.startswith("#"):
                labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
                out.append((m.group(1), labels, float(m.group(3))))
        return out

    def snowflake_events(self, sequence="Snowflake64"):
        """{event: count} of ticketd_snowflake_events_total for one sequence."""
        return {labels["event"]: value for name, labels, value in self.samples()
                if name == "ticketd_snowflake_events_total" and labels.get("sequence") == sequence}

    def snowflake_ahead_s(self, sequence="Snowflake64"):
        for name, labels, value in self.samples():
            if name == "ticketd_snowflake_ahead_seconds" and labels.get("sequence") == sequence:
                return value
        raise AssertionError("no ticketd_snowflake_ahead_seconds for " + sequence)


class RowHarness:
    """What every row test does, whatever the kind: start ticketd under a FakedClock with a
    policy, take IDs, step the clock, take IDs until enough arrive or a deadline passes. A
    subclass (also a TestCase) sets CONFIG (YAML with POLICY and MAX_BACKWARD in it), SEQUENCE,
    and ms_of(id) / key_of(id): the millisecond an ID carries and what it sorts by."""

    CONFIG = None
    SEQUENCE = None

    def setUp(self):
        self.clock = FakedClock()
        self.daemons = []
        self.waited = []  # measured: seconds from the last ID before a step to the first after

    def tearDown(self):
        for t in self.daemons:
            t.cleanup()
        self.clock.cleanup()
        if self.waited:
            sys.stderr.write(f"\n  {self.id().split('.', 1)[1]}: first ID after "
                             + ", ".join(f"{w:.3f}" for w in self.waited) + " s ")

    def start(self, policy, max_backward_ms=5, offset_s=0, rate=1):
        self.clock.set(offset_s, rate)
        config = self.CONFIG.replace("POLICY", policy).replace("MAX_BACKWARD",
                                                                str(max_backward_ms))
        t = Ticketd(config=config, env=self.clock.env())
        self.daemons.append(t)
        t.start()
        t.client = Client(t.http_port)
        return t

    def restart(self, t, offset_s):
        """Starts `t` again on its data directory with the clock at `offset_s`."""
        t.client.close()
        self.clock.set(offset_s)
        t.start()
        t.client = Client(t.http_port)

    def finish(self, t):
        t.client.close()
        t.cleanup()
        self.daemons.remove(t)

    def issue(self, t, n=20):
        """n answers in a row, each one ID; all must succeed."""
        answers = []
        for _ in range(n):
            a = t.client.next(self.SEQUENCE)
            self.assertEqual(a.status, 200, a)
            answers.append(a)
        return answers

    def until_issued(self, t, n, timeout_s):
        """Answers until n IDs have come (refusals kept), or fails at the deadline. Polls: a
        refused caller asks again at once, as a client would, so refusals are many."""
        answers = []
        deadline = time.time() + timeout_s
        while sum(a.ok for a in answers) < n:
            self.assertLess(time.time(), deadline,
                            f"{n} IDs did not come in {timeout_s} s: last {answers[-1:]}")
            answers.append(t.client.next(self.SEQUENCE))
        return answers

    def ids(self, answers):
        return [a.body["ids"][0] for a in answers if a.ok]

    def first_ok(self, answers):
        return next(a for a in answers if a.ok)

    def assert_in_order(self, *runs):
        """Every ID of the runs strictly after the previous one, none twice."""
        keys = [self.key_of(i) for run in runs for i in self.ids(run)]
        self.assertEqual(len(keys), len(set(keys)), "an ID was issued twice")
        for a, b in zip(keys, keys[1:]):
            self.assertLess(a, b, "out of order")

    def assert_refusals(self, answers, policy, reference="the last"):
        """The refused answers: 503 clock_moved_backwards naming the policy; at least one."""
        refused = [a for a in answers if not a.ok]
        self.assertTrue(refused, "a clock behind the last ID must be refused under " + policy)
        for a in refused:
            self.assertEqual((a.status, a.code), (503, "clock_moved_backwards"), a)
            self.assertIn(f"behind {reference}", a.message)
            self.assertIn("policy " + policy, a.message)
        return refused

    def small_step_back(self, policy):
        """SMALL_STEP_S back right after an ID, with max_backward_ms 200: (before, after). The
        step leaves the next call 100 ms to come in while the clock is still behind."""
        t = self.start(policy, max_backward_ms=200)
        before = self.issue(t)
        self.clock.set(-SMALL_STEP_S)
        after = self.until_issued(t, 20, 10)
        self.assert_in_order(before, after)
        return t, before, after

    def step_back_and_wait_out(self, policy, step_s):
        """step_s back right after an ID (max_backward_ms 5), then IDs until the clock allows:
        (before, after)."""
        t = self.start(policy)
        before = self.issue(t)
        self.clock.set(-step_s)
        after = self.until_issued(t, 10, step_s + 15)
        self.assert_in_order(before, after)
        return t, before, after

    def assert_held_for(self, before, after, at_least_s):
        """The first ID after the step came no earlier than `at_least_s` after the last one
        before it was asked for: on the fake clock, no sooner can the policy allow it."""
        waited = self.first_ok(after).received - before[-1].sent
        self.assertGreaterEqual(waited, at_least_s - TRUNCATION_S)
        return waited

    def slew(self, policy, rate):
        """ticketd on a clock running at `rate` from its start, never stepped: IDs for about
        0.6 s; their milliseconds advance at the clock's rate."""
        t = self.start(policy, rate=rate)
        answers = self.issue(t, 5)
        deadline = time.time() + 0.6
        while time.time() < deadline:
            answers += self.issue(t, 10)
        self.assert_in_order(answers)
        first, last = answers[0], answers[-1]
        span_ms = self.ms_of(last.body["ids"][0]) - self.ms_of(first.body["ids"][0])
        self.assertGreaterEqual(span_ms, rate * (last.sent - first.received) * 1000 - 2)
        self.assertLessEqual(span_ms, rate * (last.received - first.sent) * 1000 + 2)
        return t, answers

    def jump_forward(self, policy, jump_s=3600):
        """Forward jump_s right after an ID: (t, before, after); the IDs follow the clock."""
        t = self.start(policy)
        before = self.issue(t)
        self.clock.set(jump_s)
        after = self.issue(t)
        self.assert_in_order(before, after)
        self.assertGreaterEqual(self.ms_of(after[0].body["ids"][0]),
                                int((after[0].sent + jump_s) * 1000) - 1)
        return t, before, after

    def jump_forward_then_back(self, policy, jump_s=3600):
        """Forward jump_s, IDs, then back to the real time (a wrong step corrected):
        (t, jumped, after) with after the next 20 answers, refused or not."""
        t, _, jumped = self.jump_forward(policy, jump_s)
        self.clock.set(0)
        after = [t.client.next(self.SEQUENCE) for _ in range(20)]
        self.assert_in_order(jumped, after)
        return t, jumped, after

    def assert_refused_until_the_jumped_ids(self, after, jumped, policy):
        """Every answer refused, and the refusal names when it ends: at the last jumped ID."""
        self.assertTrue(all(not a.ok for a in after), after)
        self.assert_refusals(after, policy)
        until = re.search(r"refuses until (\S+Z)", after[-1].message).group(1)
        until_s = datetime.datetime.strptime(until, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        self.assertGreaterEqual(round(until_s * 1000), self.ms_of(jumped[-1].body["ids"][0]))


def snowflake_ms(snowflake_id):
    """The millisecond of an ID of ROW_CONFIG's layout: the default 41/10/12 bits, epoch 2026."""
    return (int(snowflake_id) >> 22) + 1767225600000


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
  epoch: "2026-01-01T00:00:00Z"
  worker_id: {{ source: static, id: 3 }}
  clock: {{ policy: POLICY, max_backward_ms: MAX_BACKWARD }}
sequences:
  - {{ name: Snowflake64, kind: snowflake }}
"""


class SnowflakeClockRows(RowHarness, unittest.TestCase):
    """docs/clocks.md, Snowflake rows: one method per row, each over every clock policy."""

    CONFIG = ROW_CONFIG
    SEQUENCE = "Snowflake64"

    def ms_of(self, i):
        return snowflake_ms(i)

    def key_of(self, i):
        return int(i)

    def test_small_step_back(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t, before, after = self.small_step_back(policy)
                events = t.client.snowflake_events()
                self.assertEqual(events["clock_backward"], 1)
                if policy == "wait":
                    self.assertTrue(all(a.ok for a in after), after)
                    self.waited.append(self.assert_held_for(before, after, SMALL_STEP_S))
                    self.assertGreaterEqual(events["clock_backward_wait"], 1)
                    self.assertEqual(events["clock_backward_refused"], 0)
                elif policy == "fail":
                    self.assert_refusals(after, policy)
                    self.waited.append(self.assert_held_for(before, after, SMALL_STEP_S))
                    self.assertGreaterEqual(events["clock_backward_refused"], 1)
                    self.assertEqual(events["clock_backward_wait"], 0)
                else:
                    self.assertTrue(all(a.ok for a in after), after)
                    self.assertGreaterEqual(self.ms_of(after[0].body["ids"][0]),
                                            self.ms_of(before[-1].body["ids"][0]))
                    self.assertGreaterEqual(events["logical_id"], 1)
                    self.assertEqual(events["clock_backward_wait"], 0)
                    self.assertEqual(events["clock_backward_refused"], 0)
                self.finish(t)

    def check_wait_out(self, policy, step_s):
        t, before, after = self.step_back_and_wait_out(policy, step_s)
        events = t.client.snowflake_events()
        self.assertEqual(events["clock_backward"], 1)
        if policy == "logical":
            self.assertTrue(all(a.ok for a in after), after)
            ahead_s = t.client.snowflake_ahead_s()
            self.assertGreater(ahead_s, step_s / 2)
            self.assertGreaterEqual(self.ms_of(after[0].body["ids"][0]),
                                    self.ms_of(before[-1].body["ids"][0]))
            self.assertGreaterEqual(events["logical_id"], 1)
            self.assertEqual(events["clock_backward_refused"], 0)
        else:
            self.assert_refusals(after, policy)
            # wait stops refusing 5 ms (max_backward_ms) early and holds the rest: the first ID
            # comes when the clock is back at the last one, under both policies.
            self.waited.append(self.assert_held_for(before, after, step_s))
            self.assertGreaterEqual(events["clock_backward_refused"], 1)
            self.assertEqual(events["logical_id"], 0)
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
                    t, answers = self.slew(policy, rate)
                    events = t.client.snowflake_events()
                    for event in ("clock_backward", "clock_backward_wait",
                                  "clock_backward_refused", "logical_id", "restart_wait"):
                        self.assertEqual(events[event], 0, event)
                    self.finish(t)

    def test_jump_forward(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t = self.start(policy)
                self.issue(t)
                writes = t.client.snowflake_events()["hwm_write"]
                self.clock.set(3600)
                jumped = self.issue(t)
                self.assertGreaterEqual(self.ms_of(jumped[0].body["ids"][0]),
                                        int((jumped[0].sent + 3600) * 1000) - 1)
                events = t.client.snowflake_events()
                self.assertGreater(events["hwm_write"], writes, "the mark follows the jump")
                for event in ("clock_backward", "clock_backward_refused", "logical_id"):
                    self.assertEqual(events[event], 0, event)
                self.assertEqual(t.client.snowflake_ahead_s(), 0)
                self.finish(t)

    def test_jump_forward_then_back(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t, jumped, after = self.jump_forward_then_back(policy)
                events = t.client.snowflake_events()
                self.assertEqual(events["clock_backward"], 1)
                if policy == "logical":
                    self.assertTrue(all(a.ok for a in after), after)
                    self.assertGreaterEqual(self.ms_of(after[0].body["ids"][0]),
                                            self.ms_of(jumped[-1].body["ids"][0]))
                    self.assertGreater(t.client.snowflake_ahead_s(), 3590)
                else:
                    self.assert_refused_until_the_jumped_ids(after, jumped, policy)
                self.finish(t)

    def test_restart_after_kill9_clock_unchanged(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                t = self.start(policy)
                before = self.issue(t, 200)
                t.kill9()
                self.restart(t, 0)
                after = self.issue(t, 10)
                self.assert_in_order(before, after)
                self.waited.append(after[0].received - before[-1].sent)  # restart included
                events = t.client.snowflake_events()
                self.assertEqual(events["clock_backward"], 0)
                if policy == "logical":
                    # At once, above the stored mark: ahead of the clock.
                    self.assertEqual(events["restart_wait"], 0)
                    self.assertGreaterEqual(events["logical_id"], 1)
                else:
                    # Held until the clock passes the previous run's mark (<= hwm margin, 2 s).
                    self.assertGreaterEqual(events["restart_wait"], 1)
                    self.assertEqual(events["logical_id"], 0)
                    self.assertGreater(self.ms_of(after[0].body["ids"][0]),
                                       self.ms_of(before[-1].body["ids"][0]) + 500)
                self.finish(t)

    def check_restart_behind(self, policy, clean, step_s=3):
        t = self.start(policy)
        before = self.issue(t, 200)
        if clean:
            t.stop()
        else:
            t.kill9()
        self.restart(t, -step_s)
        after = self.until_issued(t, 10, step_s + 15)
        self.assert_in_order(before, after)
        self.assertIn("clock moved back", t.log_text())
        events = t.client.snowflake_events()
        self.assertEqual(events["clock_backward"], 1)
        if policy == "logical":
            self.assertTrue(all(a.ok for a in after), after)
            self.assertGreater(t.client.snowflake_ahead_s(), step_s - 1)
            self.assertGreaterEqual(events["logical_id"], 1)
        else:
            self.assert_refusals(after, policy, reference="the previous run")
            self.assertGreaterEqual(events["clock_backward_refused"], 1)
            # Refused (and after a kill then held) until the clock passes the stored mark: the
            # last ID after a clean stop, which lowers the mark to it; after a kill, the mark
            # as the run left it, normally 1-2 s beyond its last ID.
            self.waited.append(self.assert_held_for(before, after, step_s))
        self.finish(t)

    def test_restart_after_kill9_with_clock_behind(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                self.check_restart_behind(policy, clean=False)

    def test_restart_after_clean_stop_with_clock_behind(self):
        for policy in POLICIES:
            with self.subTest(policy=policy):
                self.check_restart_behind(policy, clean=True)


class ClocksDoc(unittest.TestCase):
    """docs/clocks.md stays true: every test its table names exists, every row names one,
    every method of the row classes is named by a row, and the alert rules it shows load in
    promtool and read only metric names a running ticketd exports."""

    ROW_REF = re.compile(r"`(tests/[\w/.-]+\.(?:py|cpp))::(\w+)\.(\w+)`")

    @classmethod
    def setUpClass(cls):
        with open(DOC, encoding="utf-8") as f:
            cls.text = f.read()

    def table_rows(self):
        """The data rows of every table whose header has a "proved by" column: (line, last
        cell)."""
        rows, in_table = [], False
        for number, line in enumerate(self.text.split("\n"), 1):
            if not line.startswith("|"):
                in_table = False
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not in_table:
                in_table = cells[-1].lower() == "proved by"
                header = True
                continue
            if header:  # the |---| line
                header = False
                continue
            rows.append((number, cells[-1]))
        return rows

    def test_every_row_names_tests_that_exist(self):
        rows = self.table_rows()
        self.assertGreaterEqual(len(rows), 20, "the table of docs/clocks.md was not found")
        for number, cell in rows:
            refs = self.ROW_REF.findall(cell)
            self.assertTrue(refs, f"docs/clocks.md:{number} names no test")
            for path, scope, name in refs:
                full = os.path.join(SOURCE, path)
                self.assertTrue(os.path.exists(full), f"docs/clocks.md:{number}: no {path}")
                with open(full, encoding="utf-8") as f:
                    source = f.read()
                if path.endswith(".py"):
                    found = any(isinstance(node, ast.ClassDef) and node.name == scope and any(
                        isinstance(m, ast.FunctionDef) and m.name == name for m in node.body)
                        for node in ast.walk(ast.parse(source)))
                else:
                    found = re.search(rf"\bTEST(?:_F)?\(\s*{scope}\s*,\s*{name}\s*\)", source)
                self.assertTrue(found, f"docs/clocks.md:{number}: {path} has no {scope}.{name}")

    def test_every_row_test_is_in_the_table(self):
        named = {ref for _, cell in self.table_rows() for ref in self.ROW_REF.findall(cell)}
        for path, cls in ROW_CLASSES:
            with open(os.path.join(SOURCE, path), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            methods = [m.name for node in ast.walk(tree)
                       if isinstance(node, ast.ClassDef) and node.name == cls
                       for m in node.body
                       if isinstance(m, ast.FunctionDef) and m.name.startswith("test_")]
            self.assertTrue(methods, f"{path} has no {cls}")
            for m in methods:
                self.assertIn((path, cls, m), named, f"{path}::{cls}.{m} is in no row")

    def rule_blocks(self):
        blocks = re.findall(r"^```yaml\n(.*?)^```", self.text, re.M | re.S)
        return [yaml.safe_load(b) for b in blocks if re.search(r"^groups:", b, re.M)]

    def test_alert_examples_load_and_read_only_exported_metrics(self):
        rules = self.rule_blocks()
        self.assertTrue(rules, "docs/clocks.md shows no alert rules")
        exprs = [(r["alert"], r["expr"]) for doc in rules for g in doc["groups"]
                 for r in g["rules"]]
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            for doc in rules:
                yaml.safe_dump(doc, f)
            f.flush()
            r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        t = Ticketd(config=ROW_CONFIG.replace("POLICY", "wait").replace("MAX_BACKWARD", "5")
                    .replace("kind: snowflake }}", "kind: snowflake }}\n"
                             "  - {{ name: Events, kind: ulid }}\n"
                             "  - {{ name: EventIds, kind: uuidv7 }}"))
        try:
            t.start()
            client = Client(t.http_port)
            for sequence in ("Snowflake64", "Events", "EventIds"):
                self.assertTrue(client.next(sequence).ok, sequence)
            self.assertFalse(client.next("NoSuchSequence").ok)
            exported = exported_names(client.call("GET", "/metrics")[1])
            client.close()
        finally:
            t.cleanup()
        for alert, expr in exprs:
            names = metric_names(expr)
            self.assertTrue(names, alert)
            self.assertEqual(names - exported, set(), f"{alert} reads what ticketd does not export")


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
            os.environ["LD_PRELOAD"] = preload(BINARY, LIBFAKETIME)
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
