#!/usr/bin/python3
"""Checks a nemesis history: did ticketd keep its promises while it was being partitioned,
paused, killed and clock-skewed?

A nemesis run has client processes record every operation they make as a JSON line: an
"invoke" event before the request is sent and exactly one completion ("ok", "fail" or "info")
after the answer (or the lack of one: "info" means the outcome is unknown).  The nemesis itself
logs "start"/"stop" events naming each fault.  This module reads such a history and reports
every violation of the server's promises, each under a rule name:

  unique      within an ID space no ID is acknowledged twice, whatever process, server or kind
              (ticket, snowflake, or any value of a block) acknowledged it.
  monotonic   one process sees strictly increasing values per (space, mono) key when the
              operation carries a mono key (a block must lie entirely above what came before).
  gapless     no number is committed twice, a committed number is never reserved again, and the
              server's final audit is one unbroken run of committed and voided numbers that
              agrees with what the clients saw (an ok commit is committed; a committed number
              had at least one commit attempt that did not fail).
  workers     no worker ID is held by two leases at once, judging each lease's holding period
              as its holder believes it (acquire completion until ttl expiry or release).
  fencing     once an ok carrying leadership term T2 completed, no ok with an older term T1 < T2
              may have been invoked after it (a deposed leader serving fresh requests).
  history     the history itself is well-formed (invoke/completion pairing, parsable values),
              since a checker fed a garbled history would otherwise silently pass it.

Why these rules: they are exactly what a ticket server must never do, even under faults,
while "info" outcomes make the checker give the server the benefit of the doubt wherever the
client cannot know what happened.  Unavailability is measured, not judged: for each fault, the
longest stretch without an ok answer that overlaps the fault.

Usage:
    result = check(history, slack_s=0.0)     # list of dicts, or a path to a .jsonl file
    result.ok, result.violations, result.stats, result.unavailability
        stats: "events" {"f type": count}, "ids" {space: IDs checked}, "operations",
        "processes", "unfinished", "nemesis_events", "violations" {rule: count}
    python3 checker.py HISTORY.jsonl [--slack S]   # exits 1 on any violation
"""

import argparse
import bisect
import contextlib
import gc
import heapq
import json
import math
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

# Rule names, as reported in Violation.rule.
UNIQUE = "unique"
MONOTONIC = "monotonic"
GAPLESS = "gapless"
WORKERS = "workers"
FENCING = "fencing"
HISTORY = "history"

COMPLETION_TYPES = ("ok", "fail", "info")
EVENT_TYPES = ("invoke",) + COMPLETION_TYPES
# Operations whose ok values are IDs that must be unique (and, with mono, increasing).
ID_KINDS = ("ticket", "block", "snowflake")
NEMESIS = "nemesis"
# How many examples a single message lists before summarising the rest.
LIST_LIMIT = 10


@dataclass
class Violation:
    """One broken promise: the rule, a human-readable explanation and the events involved."""
    rule: str
    message: str
    events: list = field(default_factory=list)

    def __str__(self):
        return f"[{self.rule}] {self.message}"


@dataclass
class Result:
    """What check() found.  ok is True when there is no violation at all."""
    violations: list
    stats: dict
    unavailability: dict

    @property
    def ok(self):
        return not self.violations


class Op:
    """One operation: an invoke paired with its completion.

    type is the completion's type; an operation that never completed (the history ended, or
    the process invoked again without completing) stays "info": its outcome is unknown.
    """
    __slots__ = ("process", "f", "type", "invoke", "complete")

    def __init__(self, invoke):
        self.process = invoke["process"]
        self.f = invoke.get("f")
        self.type = "info"
        self.invoke = invoke
        self.complete = None

    @property
    def invoke_time(self):
        return self.invoke["time"]

    @property
    def complete_time(self):
        return self.complete["time"] if self.complete is not None else None

    def get(self, key):
        """A field of the completion, falling back to the invoke's (value, server, space...)."""
        if self.complete is not None:
            v = self.complete.get(key)
            if v is not None:
                return v
        return self.invoke.get(key)

    @property
    def events(self):
        return [e for e in (self.invoke, self.complete) if e is not None]

    def describe(self):
        """e.g. "ticket ok by p1 on server a (invoked 12.000000, completed 12.100000)"."""
        server = self.get("server")
        where = f" on server {server}" if server is not None else ""
        done = self.complete_time
        done = f"completed {done:.6f}" if done is not None else "never completed"
        return (f"{self.f} {self.type} by {self.process}{where} "
                f"(invoked {self.invoke_time:.6f}, {done})")


# ---------------------------------------------------------------------------------------------
# Reading and pairing


def _read_jsonl(path):
    """Events of a JSON lines file, plus (line number, error) for each line that is not JSON."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    # Fast path: parse all lines as one JSON array, which is several times quicker than one
    # json.loads per line and shares the repeated key strings.  A line holding more than one
    # value would be mis-split this way, so the count must match the non-blank lines.
    numbered = [(lineno, line) for lineno, line in enumerate(lines, 1) if line.strip()]
    try:
        events = json.loads("[" + ",".join(line for _, line in numbered) + "]")
        if len(events) == len(numbered):
            return events, []
    except json.JSONDecodeError:
        pass
    # Slow path: find the bad lines one by one.
    events, bad = [], []
    for lineno, line in numbered:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as e:
            bad.append((lineno, str(e)))
    return events, bad


def _load(history):
    if isinstance(history, (str, bytes, os.PathLike)):
        return _read_jsonl(history)
    return list(history), []


def load_history(history):
    """The events of a history (list of dicts or .jsonl path); raises on a non-JSON line."""
    events, bad = _load(history)
    if bad:
        raise ValueError(f"{history}: line {bad[0][0]} is not JSON: {bad[0][1]}")
    return events


def _is_time(t):
    """A finite int or float (bool excluded); x - x is 0 except for inf and nan."""
    return type(t) is int or (type(t) is float and t - t == 0)


def _as_int(v):
    """An integer given as int or decimal string (64-bit IDs may arrive as strings); else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        s = v.strip()
        if s.isdigit() or (s[:1] == "-" and s[1:].isdigit()):
            return int(s)
    return None


def _key(v):
    """A stats key: the value as text, "-" when absent (a history without spaces, say)."""
    return "-" if v is None else str(v)


def _pair(events, violations):
    """Pairs each process's invokes with their completions, reporting malformed sequences.

    Returns (ops in invoke order, nemesis events, counts per (f, type)).  Because a process is
    sequential, the ops of one process are also in its completion order.
    """
    ops, nemesis, counts = [], [], Counter()
    pending = {}  # process -> its Op awaiting a completion
    # Local names: this loop runs once per event, millions of times.
    get_pending, add_op, add_nemesis = pending.get, ops.append, nemesis.append
    for ev in events:
        if not isinstance(ev, dict):
            violations.append(Violation(HISTORY, f"event is not an object: {ev!r}", []))
            continue
        get = ev.get
        process, etype, t = get("process"), get("type"), get("time")
        counts[(get("f"), etype)] += 1
        if process == NEMESIS:
            add_nemesis(ev)
            continue
        if type(process) is not str or etype not in EVENT_TYPES or not _is_time(t):
            violations.append(Violation(
                HISTORY, f"event lacks a valid process, type or time: {ev!r}", [ev]))
            continue
        if etype == "invoke":
            previous = get_pending(process)
            if previous is not None:
                # The earlier operation's outcome is unknown; it stays "info".
                violations.append(Violation(
                    HISTORY, f"process {process} invoked {ev.get('f')} at {t:.6f} while its "
                    f"{previous.f} invoked at {previous.invoke_time:.6f} was still pending",
                    [previous.invoke, ev]))
            op = Op(ev)
            add_op(op)
            pending[process] = op
            continue
        op = pending.pop(process, None)
        if op is None:
            violations.append(Violation(
                HISTORY, f"process {process}: {etype} {ev.get('f')} at {t:.6f} completes no "
                "pending invoke", [ev]))
            continue
        if get("f") != op.f:
            violations.append(Violation(
                HISTORY, f"process {process}: {etype} {get('f')} at {t:.6f} completes an "
                f"invoke of {op.f}", [op.invoke, ev]))
            continue
        op.type = etype
        op.complete = ev
    return ops, nemesis, counts


def _malformed(violations, op, what):
    violations.append(Violation(
        HISTORY, f"malformed {what} in {op.describe()}: {op.get('value')!r}", op.events))


# ---------------------------------------------------------------------------------------------
# Rule 1 (unique) and rule 2 (monotonic)


def _id_value(op, violations):
    """The IDs an ok ticket/snowflake/block acknowledged: (first, last, step), or None."""
    value = op.get("value")
    if op.f == "block":
        if not isinstance(value, dict):
            _malformed(violations, op, "block")
            return None
        first, last = _as_int(value.get("first")), _as_int(value.get("last"))
        step = _as_int(value.get("step", 1))
        if first is None or last is None or step is None or step < 1 or last < first \
                or (last - first) % step:
            _malformed(violations, op, "block")
            return None
        return first, last, step
    v = _as_int(value)
    if v is None:
        _malformed(violations, op, op.f)
        return None
    return v, v, 1


def _common_values(a, b):
    """The first common value and how many values two blocks share, or None.

    Each block is the arithmetic progression first, first+step, ..., last; the common values of
    two progressions form a progression of period lcm(step_a, step_b) (Chinese remainder).
    """
    (f1, l1, s1), (f2, l2, s2) = a, b
    lo, hi = max(f1, f2), min(l1, l2)
    if lo > hi:
        return None
    g = math.gcd(s1, s2)
    if (f2 - f1) % g:
        return None
    # Solve f1 + s1*k = f2 (mod s2): (s1/g)*k = (f2-f1)/g (mod s2/g).
    m = s2 // g
    k = ((f2 - f1) // g) * pow(s1 // g, -1, m) % m if m > 1 else 0
    x0, period = f1 + s1 * k, s1 // g * s2
    x = lo + (x0 - lo) % period
    if x > hi:
        return None
    return x, (hi - x) // period + 1


def _block_text(first, last, step):
    return f"block [{first}..{last} step {step}]" if last != first or step != 1 else f"{first}"


def _check_unique_and_monotonic(ops, violations, stats):
    singles = defaultdict(dict)   # space -> value -> first Op acknowledging it
    blocks = defaultdict(list)    # space -> [((first, last, step), Op)]
    ids_per_space = Counter()
    last_seen = {}                # (process, space, mono) -> (highest value, Op)

    for op in ops:
        if op.type != "ok" or op.f not in ID_KINDS:
            continue
        ids = _id_value(op, violations)
        if ids is None:
            continue
        first, last, step = ids
        space = op.get("space")
        ids_per_space[space] += (last - first) // step + 1
        if op.f == "block":
            blocks[space].append((ids, op))
        else:
            earlier = singles[space].get(first)
            if earlier is None:
                singles[space][first] = op
            else:
                violations.append(Violation(
                    UNIQUE, f"ID {first} in space {space} acknowledged twice: "
                    f"{earlier.describe()} and {op.describe()}", [earlier.complete, op.complete]))

        # Rule 2: per (process, space, mono) values strictly increase in completion order.
        mono = op.get("mono")
        if mono is not None:
            key = (op.process, space, mono)
            previous = last_seen.get(key)
            if previous is not None and first <= previous[0]:
                shown = _block_text(first, last, step) if op.f == "block" else f"value {first}"
                violations.append(Violation(
                    MONOTONIC, f"process {op.process}, space {space}, mono {mono}: {shown} "
                    f"from {op.describe()} is not above {previous[0]} seen earlier from "
                    f"{previous[1].describe()}", [previous[1].complete, op.complete]))
            if previous is None or last > previous[0]:
                last_seen[key] = (last, op)

    for space, space_blocks in blocks.items():
        # Block against block: sweep by first value, keeping the blocks still reaching it.
        space_blocks.sort(key=lambda b: (b[0][0], b[0][1]))
        active = []  # heap of (last, index)
        for i, (ids, op) in enumerate(space_blocks):
            while active and active[0][0] < ids[0]:
                heapq.heappop(active)
            for _, j in sorted(active, key=lambda a: a[1]):
                other_ids, other = space_blocks[j]
                common = _common_values(other_ids, ids)
                if common is not None:
                    violations.append(Violation(
                        UNIQUE, f"ID {common[0]} in space {space} acknowledged twice ({common[1]}"
                        f" shared value(s)): {_block_text(*other_ids)} from {other.describe()} "
                        f"and {_block_text(*ids)} from {op.describe()}",
                        [other.complete, op.complete]))
            heapq.heappush(active, (ids[1], i))

        # Block against single IDs: only the singles within the block's range can collide.
        values = sorted(singles.get(space, ()))
        for (first, last, step), op in space_blocks:
            for k in range(bisect.bisect_left(values, first), bisect.bisect_right(values, last)):
                v = values[k]
                if (v - first) % step == 0:
                    single = singles[space][v]
                    violations.append(Violation(
                        UNIQUE, f"ID {v} in space {space} acknowledged twice: "
                        f"{single.describe()} and inside {_block_text(first, last, step)} from "
                        f"{op.describe()}", [single.complete, op.complete]))

    stats["ids"] = {_key(space): n for space, n in ids_per_space.items()}


# ---------------------------------------------------------------------------------------------
# Rule 3 (gapless)


def _gapless_number(op, violations):
    value = op.get("value")
    n = _as_int(value.get("id")) if isinstance(value, dict) else None
    if n is None:
        _malformed(violations, op, f"{op.f} value")
    return n


def _runs(numbers):
    """Sorted numbers as compact text: 3, 5..9, 12."""
    out, start, prev = [], None, None
    for n in numbers:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append((start, prev))
            start = prev = n
    if start is not None:
        out.append((start, prev))
    return out


def _runs_text(numbers):
    runs = _runs(numbers)
    text = ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in runs[:LIST_LIMIT])
    if len(runs) > LIST_LIMIT:
        text += f" and {len(runs) - LIST_LIMIT} more run(s)"
    return text


def _check_gapless(ops, violations):
    attempts = defaultdict(lambda: defaultdict(list))  # space -> number -> commit Ops
    reserves = []                                       # (space, number, Op) of ok reserves
    finals = []                                         # (space, audit dict, Op)

    for op in ops:
        if op.f == "gapless_commit":
            n = _gapless_number(op, violations)
            if n is not None:
                attempts[op.get("space")][n].append(op)
        elif op.f == "gapless_reserve" and op.type == "ok":
            n = _gapless_number(op, violations)
            if n is not None:
                reserves.append((op.get("space"), n, op))
        elif op.f == "gapless_final" and op.type == "ok":
            value = op.get("value")
            if isinstance(value, dict) and "committed" in value:
                finals.append((op.get("space"), value, op))
            elif isinstance(value, dict):  # {space: audit} in one event
                finals.extend((space, audit, op) for space, audit in value.items())
            else:
                _malformed(violations, op, "gapless_final value")

    # a. A number committed ok twice.  Also remember when each number was first committed.
    committed_at = {}  # (space, number) -> (completion time, Op) of its earliest ok commit
    for space, numbers in attempts.items():
        for n, commit_ops in numbers.items():
            oks = [op for op in commit_ops if op.type == "ok"]
            if not oks:
                continue
            oks.sort(key=lambda op: op.complete_time)
            committed_at[(space, n)] = (oks[0].complete_time, oks[0])
            for again in oks[1:]:
                violations.append(Violation(
                    GAPLESS, f"number {n} in space {space} committed twice: "
                    f"{_reservation(oks[0])} by {oks[0].describe()} and {_reservation(again)} "
                    f"by {again.describe()}", [oks[0].complete, again.complete]))

    # b. A committed number handed out again by a reserve invoked after the commit completed.
    for space, n, op in reserves:
        commit = committed_at.get((space, n))
        if commit is not None and op.invoke_time > commit[0]:
            violations.append(Violation(
                GAPLESS, f"number {n} in space {space} reserved again ({_reservation(op)} by "
                f"{op.describe()}) after its commit completed at {commit[0]:.6f} "
                f"({commit[1].describe()})", [commit[1].complete, op.invoke, op.complete]))

    # c. The server's final audit.
    for space, audit, op in finals:
        _check_final(space, audit, op, attempts.get(space, {}), committed_at, violations)


def _reservation(op):
    value = op.get("value")
    r = value.get("reservation") if isinstance(value, dict) else None
    return f"reservation {r}"


def _check_final(space, audit, op, attempts, committed_at, violations):
    committed_list = audit.get("committed") if isinstance(audit, dict) else None
    voided_list = audit.get("voided") if isinstance(audit, dict) else None
    through = _as_int(audit.get("committed_through")) if isinstance(audit, dict) else None
    first = _as_int(audit.get("first", 1)) if isinstance(audit, dict) else None
    if not isinstance(committed_list, list) or not isinstance(voided_list, list) \
            or through is None or first is None:
        _malformed(violations, op, f"gapless_final audit for space {space}")
        return
    committed = [_as_int(n) for n in committed_list]
    voided = [_as_int(n) for n in voided_list]
    if None in committed or None in voided:
        _malformed(violations, op, f"gapless_final audit for space {space}")
        return
    where = f"final audit of space {space} ({op.describe()})"

    def report(message):
        violations.append(Violation(GAPLESS, f"{where}: {message}", op.events))

    committed_set, voided_set = set(committed), set(voided)
    twice = sorted(n for n, c in Counter(committed).items() if c > 1)
    if twice:
        report(f"number(s) listed as committed more than once: {_runs_text(twice)}")
    both = sorted(committed_set & voided_set)
    if both:
        report(f"number(s) both committed and voided: {_runs_text(both)}")

    # One unbroken run first..committed_through: no hole, nothing outside it.
    settled = committed_set | voided_set
    holes = sorted(set(range(first, through + 1)) - settled)
    for a, b in _runs(holes):
        report(f"hole: {a if a == b else f'{a}..{b}'} neither committed nor voided "
               f"(committed_through {through}, first {first})")
    outside = sorted(n for n in settled if n < first or n > through)
    if outside:
        report(f"number(s) settled outside {first}..{through}: {_runs_text(outside)}")

    # Every ok commit seen by a client must be committed.
    for (s, n), (_, commit_op) in sorted(committed_at.items(), key=lambda kv: kv[0][1]):
        if s != space or n in committed_set:
            continue
        state = "voided" if n in voided_set else "missing"
        violations.append(Violation(
            GAPLESS, f"{where}: number {n} was committed ok ({_reservation(commit_op)} by "
            f"{commit_op.describe()}) but is {state}", op.events + [commit_op.complete]))

    # Every committed number needs a commit attempt that may have happened (ok or info).
    for n in sorted(committed_set):
        tried = attempts.get(n, [])
        if any(a.type in ("ok", "info") for a in tried):
            continue
        if not tried:
            report(f"number {n} is committed but no client ever tried to commit it")
        else:
            violations.append(Violation(
                GAPLESS, f"{where}: number {n} is committed though every commit attempt of it "
                f"failed: " + "; ".join(f"{_reservation(a)} by {a.describe()}" for a in tried),
                op.events + [e for a in tried for e in a.events]))


# ---------------------------------------------------------------------------------------------
# Rule 4 (workers)


class _Lease:
    """A worker lease's holding period as its holder believes it."""
    __slots__ = ("acquire", "start", "renewed", "ttl", "release")

    def __init__(self, acquire, ttl):
        self.acquire = acquire        # the ok worker_acquire Op
        self.start = acquire.complete_time
        self.renewed = acquire        # latest (by invoke time) ok acquire/keepalive Op
        self.ttl = ttl
        self.release = None           # earliest worker_release Op, whatever its outcome

    @property
    def expiry(self):
        return self.renewed.invoke_time + self.ttl

    @property
    def end(self):
        end = self.expiry
        if self.release is not None:
            end = min(end, self.release.invoke_time)
        return max(end, self.start)

    def describe(self, key):
        released = self.release is not None and self.release.invoke_time < self.expiry
        return (f"lease {key[2]} of {self.acquire.process} held {self.start:.6f}.."
                f"{self.end:.6f} ({'until its release' if released else 'until its ttl expiry'})")

    def events(self):
        ops = [self.acquire, self.renewed] + ([self.release] if self.release else [])
        seen, out = set(), []
        for op in ops:
            for e in op.events:
                if id(e) not in seen:
                    seen.add(id(e))
                    out.append(e)
        return out


def _lease_key(op, violations):
    value = op.get("value")
    if not isinstance(value, dict):
        _malformed(violations, op, f"{op.f} value")
        return None, None
    worker = _as_int(value.get("worker_id"))
    lease_id = value.get("lease_id")
    if worker is None or lease_id is None:
        _malformed(violations, op, f"{op.f} value")
        return None, None
    return (value.get("pool"), worker, str(lease_id)), _as_float(value.get("ttl_s"))


def _as_float(v):
    """A finite number given as int, float or string; else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return None
    try:
        v = float(v)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _check_workers(ops, violations, slack_s):
    leases = {}  # (pool, worker_id, lease_id) -> _Lease
    for op in ops:
        if op.f == "worker_acquire" and op.type == "ok":
            key, ttl = _lease_key(op, violations)
            if key is None:
                continue
            if ttl is None:
                _malformed(violations, op, "worker_acquire ttl_s")
                continue
            lease = leases.get(key)
            if lease is None:
                leases[key] = _Lease(op, ttl)
            else:  # the same lease acquired again: it is held from the first acquire
                lease.start = min(lease.start, op.complete_time)
                if op.invoke_time > lease.renewed.invoke_time:
                    lease.renewed, lease.ttl = op, ttl
    for op in ops:
        if op.f == "worker_keepalive" and op.type == "ok":
            key, ttl = _lease_key(op, violations)
            lease = leases.get(key) if key is not None else None
            if lease is not None and op.invoke_time > lease.renewed.invoke_time:
                lease.renewed, lease.ttl = op, ttl if ttl is not None else lease.ttl
        elif op.f == "worker_release":
            key, _ = _lease_key(op, violations)
            lease = leases.get(key) if key is not None else None
            if lease is not None and (lease.release is None
                                      or op.invoke_time < lease.release.invoke_time):
                lease.release = op

    by_worker = defaultdict(list)
    for key, lease in leases.items():
        by_worker[key[:2]].append((lease.start, lease.end, key, lease))
    for (pool, worker), periods in sorted(by_worker.items(), key=lambda kv: repr(kv[0])):
        periods.sort(key=lambda p: (p[0], p[1]))
        active = []  # periods that may still overlap later ones
        for start, end, key, lease in periods:
            active = [p for p in active if p[1] > start]
            for _, other_end, other_key, other in active:
                overlap = min(end, other_end) - start
                if overlap > slack_s:
                    violations.append(Violation(
                        WORKERS, f"worker {worker} of pool {pool} held by two leases at once for "
                        f"{overlap:.6f} s (slack {slack_s} s): {other.describe(other_key)} and "
                        f"{lease.describe(key)}", other.events() + lease.events()))
            active.append((start, end, key, lease))


# ---------------------------------------------------------------------------------------------
# Rule 5 (fencing)


def _check_fencing(ops, violations):
    termed = []
    for op in ops:
        if op.type != "ok" or op.complete.get("term") is None:
            continue
        term = _as_int(op.complete.get("term"))
        if term is None:
            violations.append(Violation(
                HISTORY, f"malformed term in {op.describe()}: {op.complete.get('term')!r}",
                op.events))
            continue
        termed.append((term, op))
    if not termed:
        return
    # For every op, the highest term among oks completed strictly before its invoke.
    by_completion = sorted(termed, key=lambda t: t[1].complete_time)
    by_invoke = sorted(termed, key=lambda t: t[1].invoke_time)
    best, i = None, 0  # (term, Op) with the highest term completed so far
    for term, op in by_invoke:
        while i < len(by_completion) and by_completion[i][1].complete_time < op.invoke_time:
            if best is None or by_completion[i][0] > best[0]:
                best = by_completion[i]
            i += 1
        if best is not None and best[0] > term:
            violations.append(Violation(
                FENCING, f"term {term} served {op.describe()}, invoked after term {best[0]} had "
                f"served {best[1].describe()}", [best[1].complete, op.invoke, op.complete]))


# ---------------------------------------------------------------------------------------------
# Availability


def _kinds(f):
    return {f} if isinstance(f, str) else set(f)


def _unavailability(events, kinds):
    times, oks = [], []
    for ev in events:
        if not isinstance(ev, dict):
            continue
        t = ev.get("time")
        if not _is_time(t):
            continue
        times.append(t)
        if ev.get("type") == "ok" and ev.get("f") in kinds and ev.get("process") != NEMESIS:
            oks.append(t)
    if not times:
        return {"none": 0.0}
    begin, end = min(times), max(times)

    # Fault intervals: each stop closes the earliest still-open start of the same fault.
    intervals = defaultdict(list)
    open_faults = defaultdict(list)
    nemesis = sorted((ev for ev in events if isinstance(ev, dict)
                      and ev.get("process") == NEMESIS and _is_time(ev.get("time"))
                      and ev.get("f") in ("start", "stop")), key=lambda ev: ev["time"])
    for ev in nemesis:
        name = str(ev.get("value"))
        if ev["f"] == "start":
            open_faults[name].append(ev["time"])
        elif open_faults[name]:
            intervals[name].append((open_faults[name].pop(0), ev["time"]))
        else:
            intervals.setdefault(name, [])  # a stop without a start: known, never active
    for name, starts in open_faults.items():
        intervals[name].extend((s, end) for s in starts)

    # Windows between consecutive ok completions, bounded by the history's first and last event.
    points = [begin] + sorted(oks) + [end]
    gaps = [b - a for a, b in zip(points, points[1:])]

    def windows(s, e):
        """Index range [lo, hi) of the windows (points[i], points[i+1]) overlapping [s, e]."""
        lo = max(bisect.bisect_right(points, s) - 1, 0)
        hi = min(bisect.bisect_left(points, e), len(gaps))
        if s == e:  # an instantaneous fault overlaps the window containing it
            hi = max(hi, min(lo + 1, len(gaps)))
        return lo, hi

    result, covered = {}, []
    for name, spans in intervals.items():
        longest = 0.0
        for s, e in spans:
            lo, hi = windows(s, e)
            if lo < hi:
                longest = max(longest, max(gaps[lo:hi]))
                covered.append((lo, hi))
        result[name] = longest
    # Windows overlapping no fault at all.
    longest, cursor = 0.0, 0
    for lo, hi in sorted(covered):
        if lo > cursor:
            longest = max(longest, max(gaps[cursor:lo]))
        cursor = max(cursor, hi)
    if cursor < len(gaps):
        longest = max(longest, max(gaps[cursor:]))
    result["none"] = longest
    return result


def unavailability(history, f="ticket"):
    """For each fault name, the longest window (s) without an ok of kind(s) f that overlaps one
    of the fault's active intervals; "none": the longest window overlapping no fault.

    Windows lie between consecutive ok completion times, bounded by the history's first and
    last event times.  f is a kind or a collection of kinds.  A fault never stopped is active
    until the history ends.
    """
    with _no_cyclic_gc():
        events, _ = _load(history)
        return _unavailability(events, _kinds(f))


# ---------------------------------------------------------------------------------------------
# Entry points


@contextlib.contextmanager
def _no_cyclic_gc():
    """Pauses the cyclic garbage collector: building millions of dicts otherwise triggers
    full collections over and over (about half the run time); nothing here makes cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def check(history, slack_s=0.0, availability_f="ticket"):
    """Checks a history (list of event dicts, or path to a .jsonl file); returns a Result."""
    with _no_cyclic_gc():
        events, bad_lines = _load(history)
        violations = [Violation(HISTORY, f"line {lineno} is not JSON: {error}", [])
                      for lineno, error in bad_lines]
        ops, nemesis, counts = _pair(events, violations)
        stats = {
            # "f type" -> count, e.g. "ticket ok"; string keys keep stats JSON-serialisable.
            "events": {f"{_key(f)} {_key(t)}": n for (f, t), n in counts.items()},
            "operations": len(ops),
            "processes": len({op.process for op in ops}),
            "unfinished": sum(1 for op in ops if op.complete is None),
            "nemesis_events": len(nemesis),
        }
        _check_unique_and_monotonic(ops, violations, stats)
        _check_gapless(ops, violations)
        _check_workers(ops, violations, slack_s)
        _check_fencing(ops, violations)
        stats["violations"] = dict(Counter(v.rule for v in violations))
        return Result(violations, stats, _unavailability(events, _kinds(availability_f)))


def _summary(result, limit=20):
    lines = [f"operations: {result.stats['operations']} by {result.stats['processes']} "
             f"process(es), {result.stats['unfinished']} unfinished, "
             f"{result.stats['nemesis_events']} nemesis event(s)", "events:"]
    for name, n in sorted(result.stats["events"].items()):
        lines.append(f"  {name}: {n}")
    lines.append("IDs checked per space:")
    for space, n in sorted(result.stats["ids"].items()):
        lines.append(f"  {space}: {n}")
    lines.append("longest window without an ok (s):")
    for name, seconds in sorted(result.unavailability.items()):
        lines.append(f"  {name}: {seconds:.3f}")
    if result.ok:
        lines.append("no violation")
    else:
        per_rule = ", ".join(f"{r}: {n}" for r, n in sorted(result.stats["violations"].items()))
        lines.append(f"{len(result.violations)} violation(s) ({per_rule}); "
                     f"showing up to {limit}:")
        lines.extend(f"  {v}" for v in result.violations[:limit])
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check a ticketd nemesis history.")
    parser.add_argument("history", help="JSON lines history file")
    parser.add_argument("--slack", type=float, default=0.0,
                        help="seconds two worker leases may overlap before it is a violation")
    parser.add_argument("--available", default="ticket",
                        help="comma-separated kinds whose oks count for availability")
    args = parser.parse_args(argv)
    result = check(args.history, slack_s=args.slack,
                   availability_f=[k for k in args.available.split(",") if k])
    print(_summary(result))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
