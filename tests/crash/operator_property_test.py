#!/usr/bin/python3
"""Never a value twice, whatever the operator does: a seeded random schedule of operator actions
against an odd/even pair of real ticketd servers under load.

Two independent servers (RocksDB, each its own data dir) serve the ticket sequence Tickets64 on
increment 2, offsets 1 and 2, while client threads keep taking tickets from both over HTTP
(`POST /v1/sequences/Tickets64/next`) and MySQL (`SELECT NEXTVAL(Tickets64)` and the Flickr
`REPLACE INTO` recipe). Every acknowledged value is recorded with the server and connection it
came from and the times it was asked for and answered. Each step of the schedule picks one of:

- reload (SIGHUP or POST /v1/admin/reload) of a config with a changed cache and max_rate, which
  must apply when the rate is not raised; a higher max_rate must be refused (the whole reload,
  naming `--force-rate-raise`: a restore bounds what was issued since a backup by the backup's
  rate), and so must a changed increment/offset (naming `ticketd restride`) unless a restride
  already set the grid, when the stored grid is kept (docs/operations.md "Live reload",
  docs/restride.md "Config");
- a restart with `--force-rate-raise` and a higher max_rate in the config, which applies; the
  backups taken before it are no longer restored with `--skip-ahead auto` (docs/durability.md);
- `ticketd restride` of the pair onto three servers (a third one started for it), or back onto
  two (the third one fenced at its ceiling and retired first, the floor above it);
- a fence (`PATCH {"fence": F}`), or lifting it (`"0"`);
- a backup (online, `POST /v1/admin/backup`, or offline, `ticketd backup` of a stopped server);
- a restore of one of the server's backups into its data dir (stopped by SIGTERM or kill -9,
  `ticketd restore` with the default `--skip-ahead auto`, started again);
- kill -9 of one server under load, and a restart;
- a burst: one client takes a block of up to 100,000 values in one call.

At the end (and per action where the docs promise something at once) it checks:
- no value was acknowledged twice, across all servers and all time;
- each connection saw its server's values strictly increase, and, stronger, each server's
  values increase in real time: a value answered after another one was received is larger
  (a sequence is strictly increasing; restarts resume above the durable ceiling; a restride's
  new grid starts above the fence floor; a restore skips past what may have been issued);
- each value lies on its server's grid for the range it falls in (below the first restride's
  floor on 2/k, between floors on that restride's grid, ...);
- while a fence F is set on a server nothing above F is acknowledged by it, across kill -9;
- no request failed other than by a documented refusal (fenced, retry later) or because its
  server was being stopped; each server still serves after each action; SIGTERM exits 0 and
  `ticketd verify` passes on every data dir.

The seed comes from TICKETD_PROPERTY_SEED (else random) and is printed at the start and in every
failure message; TICKETD_PROPERTY_STEPS (default 40) sets the schedule's length. Every wait is a
poll with a deadline.
"""
import bisect
import collections
import http.client
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from json_client import JsonClient  # noqa: E402
from ticketd_process import BINARY, Ticketd  # noqa: E402

import pymysql  # noqa: E402

SEED = int(os.environ.get("TICKETD_PROPERTY_SEED") or random.SystemRandom().randrange(2**32))
STEPS = int(os.environ.get("TICKETD_PROPERTY_STEPS") or 40)

TOKEN = "operator-property-token-0123456789"
SEQ = "Tickets64"
# How long one action, a reload or a server's progress may take before the test calls it hung.
DEADLINE_S = 20
# Values each serving server must acknowledge after an action before the next one: the load
# reaches every state the schedule creates.
PROGRESS_VALUES = 30
# How many values each serving server acknowledges between two actions, at random.
DWELL_VALUES = (PROGRESS_VALUES, 500, 3000)
CACHES = (7, 20, 50, 200)
# A low max_rate keeps `--skip-ahead auto` (max_rate x (age + window + 60 s)) small enough to
# matter; the highest is the default. The load may hit the lower ones: 503 / 1205 retry later.
MAX_RATES = (2000, 20000, 100000000)
RESTRIDE_MARGIN = 100000
# How often each action is picked. A restride is rarer: after the first one a changed grid in a
# reload is kept, no longer refused, and older backups are no longer restored.
ACTION_WEIGHTS = {"reload": 3, "fence": 2, "backup": 3, "restore": 3, "kill9": 2, "burst": 2,
                  "restride": 1, "rate_raise": 1}

# {data_dir}, {mysql_port} and {http_port} are Ticketd's; the rest is filled in here.
CONFIG = """data_dir: {{data_dir}}
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  users:
    - {{{{ name: app, password: s3cret-app }}}}
http:
  listen: 127.0.0.1:{{http_port}}
  tokens: [ "{token}" ]
backup: {{{{ dir: {backup_dir} }}}}
sequences:
{sequences}
"""
PAIR_SEQUENCE = ("  - {{{{ name: Tickets64, kind: ticket, increment: {increment}, "
                 "offset: {offset}, cache: {cache}, max_rate: {max_rate} }}}}")
# The third server starts without Tickets64: `ticketd restride` creates it on its grid
# (docs/restride.md "The procedure").
THIRD_SEQUENCES = "  - {{ name: Other, kind: ticket }}"

# The line that ends a SIGHUP reload (tests/app/reload_test.py).
DONE_LINE = re.compile(r"^\S+ (info  reload: applied .*|error reload: .*)$", re.M)


def context(step=None):
    where = f", step {step}" if step is not None else ""
    return (f"[seed {SEED}{where}; reproduce with TICKETD_PROPERTY_SEED={SEED} "
            f"TICKETD_PROPERTY_STEPS={STEPS}]")


class Server:
    """One ticketd of the group and what the schedule knows of it: its grid, settings, fence,
    backups, and whether it is up (for the load threads)."""

    def __init__(self, name, index, root, grid, cache, max_rate):
        self.name = name
        self.index = index  # 0, 1: the pair; 2: the third server
        self.backup_dir = os.path.join(root, f"backups-{name}")
        os.makedirs(self.backup_dir)
        self.grid = grid  # (increment, offset) of Tickets64, or None before it exists
        self.cache = cache
        self.max_rate = max_rate
        self.fence = None  # the fence the schedule set (or a restore brought back), or None
        self.fence_window = None  # index into the run's fence windows while fenced
        self.backups = []  # (path, monotonic time taken, fence at that time)
        self.t = Ticketd(config=CONFIG.format(token=TOKEN, backup_dir=self.backup_dir,
                                              sequences=self.sequences()),
                         data_dir=os.path.join(root, f"data-{name}"))
        self.generation = 0  # bumped at every start: a failure of an older one is the stop's
        self.up = threading.Event()
        self.active = threading.Event()  # load threads take tickets only while set
        self.serving = threading.Event()  # up and active

    def sequences(self, grid=None):
        grid = grid or self.grid
        if self.index == 2:
            return THIRD_SEQUENCES
        return PAIR_SEQUENCE.format(increment=grid[0], offset=grid[1], cache=self.cache,
                                    max_rate=self.max_rate)

    def config_text(self, grid=None):
        t = self.t
        return CONFIG.format(token=TOKEN, backup_dir=self.backup_dir,
                             sequences=self.sequences(grid)).format(
            data_dir=t.data_dir, mysql_port=t.mysql_port, http_port=t.http_port)

    def write_config(self, grid=None):
        """Rewrites the config file in place (same path, still mode 0600)."""
        with open(self.t.config_path, "w") as f:
            f.write(self.config_text(grid))

    def _update(self):
        if self.up.is_set() and self.active.is_set():
            self.serving.set()
        else:
            self.serving.clear()

    def going_down(self):
        self.up.clear()
        self._update()

    def start(self):
        self.t.start()
        self.generation += 1
        self.up.set()
        self._update()

    def activate(self, on):
        (self.active.set if on else self.active.clear)()
        self._update()

    def address(self):
        return f"127.0.0.1:{self.t.http_port}"


class Load:
    """Client threads taking tickets from every serving server; each acknowledged value is one
    record (server index, connection, sent, received, value), times from time.monotonic()."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records = []
        self.acked = collections.Counter()  # server index -> values acknowledged
        # server index -> values acknowledged and requests refused for max_rate: what a server
        # answers while it is held to its max_rate (a raise of max_rate shrinks the burst it
        # allows, and retry_later can then last for seconds).
        self.answered = collections.Counter()
        self.refused = collections.Counter()  # (server name, reason) -> documented refusals
        self.stopped = collections.Counter()  # server name -> failures of a stopping server
        self.unexpected = []
        self.stop = threading.Event()
        self.threads = []
        self.ids = itertools.count()

    def record(self, server, conn, sent, received, values):
        with self.lock:
            for v in values:
                self.records.append((server.index, conn, sent, received, v))
            self.acked[server.index] += len(values)
            self.answered[server.index] += len(values)

    def failed(self, server, generation, conn, what):
        """A failed request: expected while its server is stopped or restarted, else a finding."""
        if not server.up.is_set() or server.generation != generation:
            with self.lock:
                self.stopped[server.name] += 1
        else:
            with self.lock:
                self.unexpected.append(f"{conn}: {what}")

    def refuse(self, server, reason):
        with self.lock:
            self.refused[(server.name, reason)] += 1
            if reason == "retry_later":
                self.answered[server.index] += 1
        # Pace a client that keeps hitting a fence or max_rate (the answer is immediate).
        self.stop.wait(0.005)

    def start(self, servers, rng):
        for s in servers:
            for kind in ("http", "http", "mysql"):
                worker = self.http_worker if kind == "http" else self.mysql_worker
                th = threading.Thread(target=worker, args=(s, random.Random(rng.random())),
                                      daemon=True)
                th.start()
                self.threads.append(th)

    def http_worker(self, server, rng):
        while not self.stop.is_set():
            if not server.serving.wait(0.1):
                continue
            generation = server.generation
            conn = f"{server.name}/http{next(self.ids)}"
            client = JsonClient(server.t.http_port, token=TOKEN, timeout=DEADLINE_S)
            try:
                while not self.stop.is_set() and server.serving.is_set():
                    # Mostly single tickets, sometimes a few in one call.
                    count = 1 if rng.random() < 0.8 else rng.randint(2, 5)
                    sent = time.monotonic()
                    try:
                        resp, body, text = client.call(
                            "POST", f"/v1/sequences/{SEQ}/next", {"count": count})
                    except (OSError, http.client.HTTPException, ValueError) as e:
                        self.failed(server, generation, conn, repr(e))
                        break
                    received = time.monotonic()
                    if resp.status == 200:
                        self.record(server, conn, sent, received, [int(i) for i in body["ids"]])
                    elif resp.status == 409 and "fenced at" in text:
                        self.refuse(server, "fenced")
                    elif resp.status == 503 and "retry_later" in text:
                        self.refuse(server, "retry_later")
                    else:
                        self.failed(server, generation, conn, f"HTTP {resp.status} {text}")
                        break
            finally:
                client.close()

    def mysql_worker(self, server, rng):
        while not self.stop.is_set():
            if not server.serving.wait(0.1):
                continue
            generation = server.generation
            recipe = rng.choice(("nextval", "replace"))
            conn = f"{server.name}/mysql-{recipe}{next(self.ids)}"
            try:
                db = pymysql.connect(host="127.0.0.1", port=server.t.mysql_port, user="app",
                                     password="s3cret-app", database="tickets", autocommit=True,
                                     connect_timeout=5, read_timeout=DEADLINE_S,
                                     write_timeout=DEADLINE_S)
            except (pymysql.err.MySQLError, OSError) as e:
                self.failed(server, generation, conn, f"connect: {e!r}")
                continue
            try:
                with db.cursor() as cur:
                    while not self.stop.is_set() and server.serving.is_set():
                        sent = time.monotonic()
                        try:
                            if recipe == "nextval":
                                cur.execute(f"SELECT NEXTVAL({SEQ})")
                                value = int(cur.fetchone()[0])
                            else:
                                cur.execute(f"REPLACE INTO {SEQ} (stub) VALUES ('a')")
                                value = cur.lastrowid
                        except pymysql.err.MySQLError as e:
                            code = e.args[0] if e.args else None
                            message = str(e.args[1]) if len(e.args) > 1 else ""
                            if "fenced at" in message:
                                self.refuse(server, "fenced")
                            elif code == 1205:
                                self.refuse(server, "retry_later")
                            else:
                                self.failed(server, generation, conn, repr(e))
                                break
                            continue
                        except OSError as e:
                            self.failed(server, generation, conn, repr(e))
                            break
                        self.record(server, conn, sent, time.monotonic(), [value])
            finally:
                try:
                    db.close()
                except Exception:  # noqa: BLE001 - the server may be gone
                    pass

    def finish(self):
        self.stop.set()
        for th in self.threads:
            th.join(DEADLINE_S + 10)


def api(server, method, path, body=None, timeout=DEADLINE_S):
    """(status, parsed JSON or text) of one HTTP request with the token."""
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(f"http://127.0.0.1:{server.t.http_port}{path}", data=data,
                                 method=method, headers={"Authorization": "Bearer " + TOKEN,
                                                         "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read().decode(errors="replace")
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw


def run(args, timeout=120, env=None):
    return subprocess.run([BINARY] + args, capture_output=True, text=True, timeout=timeout,
                          env=env)


class OperatorProperty(unittest.TestCase):
    def setUp(self):
        print(f"operator property test: seed {SEED}, {STEPS} steps "
              f"(TICKETD_PROPERTY_SEED={SEED} to repeat)", flush=True)
        self.rng = random.Random(SEED)
        self.began = time.monotonic()
        self.step = None
        self.root = tempfile.mkdtemp(prefix="ticketd-property-")
        self.servers = []
        self.load = Load()
        self.fence_windows = []  # [server index, F, from, until or None]
        self.epochs = [(0, {0: (2, 1), 1: (2, 2)})]  # (floor, server index -> grid above it)
        self.third = None
        self.actions = collections.Counter()
        self.timeline = []  # (monotonic time, step, what the schedule did)
        self.addCleanup(self.cleanup)

    def cleanup(self):
        self.load.finish()
        for s in self.servers:
            s.t.stop(timeout=10)
            s.t.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)

    # ----- helpers -----

    def msg(self, text):
        return f"{context(self.step)} {text}"

    def say(self, text):
        self.timeline.append((time.monotonic(), self.step, text))
        print(f"[{time.monotonic() - self.began:6.1f}s] step {self.step}: {text}", flush=True)

    def info(self, s):
        status, body = api(s, "GET", f"/v1/sequences/{SEQ}")
        self.assertEqual(status, 200, self.msg(f"{s.name}: GET: {body}"))
        return body

    def group(self):
        """The servers that share Tickets64's value space right now."""
        return [s for s in self.servers if s.active.is_set()]

    def wait_progress(self, servers, what, values=PROGRESS_VALUES):
        """Each server that is not fenced answers `values` more requests with values (or with
        retry_later, held to its max_rate): the load reaches the state the action left, and the
        server still serves."""
        want = {s.index: self.load.answered[s.index] + values for s in servers
                if "fence" not in self.info(s)}
        deadline = time.monotonic() + DEADLINE_S
        while any(self.load.answered[i] < n for i, n in want.items()):
            self.assertLess(time.monotonic(), deadline, self.msg(
                f"after {what}: a server stopped serving: answered "
                f"{dict(self.load.answered)}, wanted {want}; errors {self.load.unexpected[:5]}"))
            time.sleep(0.01)

    def restart(self, s, how):
        """Stops `s` (SIGTERM, which must exit 0, or kill -9) and returns once it is down."""
        s.going_down()
        if how == "kill9":
            s.t.kill9()
        else:
            self.assertEqual(s.t.stop(), 0, self.msg(f"{s.name}: SIGTERM:\n"
                                                    + s.t.log_text()[-3000:]))

    def close_fence_window(self, s, when):
        if s.fence_window is not None:
            self.fence_windows[s.fence_window][3] = when
            s.fence_window = None

    def open_fence_window(self, s, fence, when):
        s.fence_window = len(self.fence_windows)
        self.fence_windows.append([s.index, fence, when, None])

    # ----- actions -----

    def act_reload(self, s):
        """A changed cache and max_rate must apply; a changed grid too must be refused unless a
        restride set the stored grid (then it is kept), and never while fenced."""
        before = self.info(s)
        cache = self.rng.choice([c for c in CACHES if c != s.cache])
        max_rate = self.rng.choice(MAX_RATES)
        change_grid = self.rng.random() < 0.4
        grid = s.grid
        if change_grid:
            grid = self.rng.choice([(i, o) for i in (2, 3, 4) for o in range(1, i + 1)
                                    if (i, o) != s.grid])
        old_cache, old_rate = s.cache, s.max_rate
        s.cache, s.max_rate = cache, max_rate
        s.write_config(grid)
        via = self.rng.choice(("sighup", "post"))
        self.say(f"reload {s.name} by {via}: cache {old_cache}->{cache}, max_rate "
                 f"{old_rate}->{max_rate}" + (f", grid {s.grid}->{grid}" if change_grid else ""))
        if via == "sighup":
            before_lines = len(DONE_LINE.findall(s.t.log_text()))
            s.t.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + DEADLINE_S
            while len(DONE_LINE.findall(s.t.log_text())) <= before_lines:
                self.assertLess(time.monotonic(), deadline, self.msg(
                    f"{s.name}: the reload did not end:\n" + s.t.log_text()[-3000:]))
                self.assertIsNone(s.t.proc.poll(), self.msg(f"{s.name} exited"))
                time.sleep(0.02)
            line = DONE_LINE.findall(s.t.log_text())[before_lines]
            applied = "reload: applied" in line
        else:
            status, body = api(s, "POST", "/v1/admin/reload")
            self.assertIn(status, (200, 422), self.msg(f"{s.name}: reload: {status} {body}"))
            applied = status == 200
            line = json.dumps(body)
        grid_refused = change_grid and ("fence" in before or not before.get("restrided"))
        rate_refused = max_rate > before["max_rate"]
        refused_expected = grid_refused or rate_refused
        after = self.info(s)
        self.assertEqual((after["increment"], after["offset"]), s.grid,
                         self.msg(f"{s.name}: a reload moved the grid: {line}"))
        if refused_expected:
            self.assertFalse(applied, self.msg(f"{s.name}: a grid change or a rate raise was "
                                               f"applied: {line}"))
            self.assertIn("sequences.Tickets64", line, self.msg(line))
            # The grid is checked first: a refusal names the first reason.
            self.assertIn("ticketd restride" if grid_refused else "--force-rate-raise", line,
                          self.msg(line))
            self.assertIn("nothing changed", line, self.msg(line))
            self.assertEqual((after["cache"], after["max_rate"]),
                             (before["cache"], before["max_rate"]),
                             self.msg(f"{s.name}: a refused reload changed settings"))
            # The operator puts the file back as it was.
            s.cache, s.max_rate = old_cache, old_rate
        else:
            self.assertTrue(applied, self.msg(f"{s.name}: the reload was refused: {line}"))
            self.assertIn("sequences.Tickets64 (settings applied)", line, self.msg(line))
            self.assertEqual((after["cache"], after["max_rate"]), (cache, max_rate),
                             self.msg(f"{s.name}: the reload did not apply: {after}"))
            if change_grid:
                self.assertIn("keeping the restrided grid", s.t.log_text(), self.msg(line))
        s.write_config()
        if refused_expected:
            return "reload (grid refused)" if grid_refused else "reload (rate raise refused)"
        return "reload (grid kept)" if change_grid else "reload (applied)"

    def act_rate_raise(self, s):
        """A higher max_rate applies only at a start with --force-rate-raise; the backups taken
        before it bound the values issued since by the old rate, so they are not restored with
        `--skip-ahead auto` any more (docs/durability.md)."""
        higher = [r for r in MAX_RATES if r > s.max_rate]
        old_rate, s.max_rate = s.max_rate, self.rng.choice(higher)
        self.say(f"restart {s.name} with --force-rate-raise: max_rate {old_rate}->{s.max_rate}")
        self.restart(s, "sigterm")
        s.write_config()
        s.t.extra_args = ["--force-rate-raise", SEQ]
        s.start()
        s.t.extra_args = []
        after = self.info(s)
        self.assertEqual(after["max_rate"], s.max_rate, self.msg(f"{s.name}: {after}"))
        self.assertIn("max_rate raised by a forced config change", s.t.log_text(), self.msg(s.t.log_text()[-3000:]))
        s.backups.clear()
        return "rate raise (forced)"

    def act_restride(self):
        """Grows the pair to three servers, or shrinks three back to the pair."""
        a, b = self.servers[0], self.servers[1]
        if self.third is None or not self.third.active.is_set():
            if self.third is None:
                self.third = Server("C", 2, self.root, None, None, None)
                self.servers.append(self.third)
                self.third.start()
            members, margin = [a, b, self.third], RESTRIDE_MARGIN
            what = "restride to three"
        else:
            c = self.third
            # Retire the third server: no more clients, then a fence at its own ceiling (the
            # documented bound: nothing above it ever again), and the pair's floor above it.
            c.activate(False)
            ceiling = self.fence_above_ceiling(c, 0)
            pair_ceiling = max(int(self.info(s)["durable_ceiling"]) for s in (a, b))
            members = [a, b]
            margin = RESTRIDE_MARGIN + max(0, ceiling - pair_ceiling)
            what = f"restride back to two (C fenced at {ceiling})"
        self.say(what)
        n = len(members)
        started = time.monotonic()
        for s in members:
            self.close_fence_window(s, started)  # the command raises any fence
        r = run(["restride", "--sequence", SEQ, "--servers",
                 ",".join(s.address() for s in members), "--margin", str(margin)],
                env=dict(os.environ, TICKETD_TOKEN=TOKEN))
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, self.msg(f"{what}: {out}"))
        floors = [int(line.split()[2]) for line in r.stdout.splitlines()
                  if line.startswith("restride: floor ")]
        self.assertTrue(floors, self.msg(out))
        floor = max(floors)
        self.assertGreater(floor, self.epochs[-1][0], self.msg(out))
        if n == 2:
            self.assertGreater(floor, ceiling, self.msg(f"the pair's floor is below C's: {out}"))
        grids = {}
        for i, s in enumerate(members):
            s.grid = (n, i + 1)
            grids[s.index] = s.grid
            s.fence = None
            info = self.info(s)
            self.assertEqual((info["increment"], info["offset"]), s.grid, self.msg(f"{info}"))
            self.assertNotIn("fence", info, self.msg(f"{s.name}: still fenced: {info}"))
            self.assertTrue(info.get("restrided"), self.msg(f"{info}"))
            self.assertGreater(int(info["next_value"]), floor, self.msg(f"{info}"))
            # The operator updates the config to the new grid (docs/restride.md "Config").
            s.write_config()
            # A backup holds the old grid and a ceiling below the floor, a forward move no
            # restore can see (docs/operations.md "Restoring": skip past a restride floor by
            # name): the schedule restores only backups taken after the last restride.
            s.backups.clear()
        self.epochs.append((floor, grids))
        if n == 3:
            self.third.activate(True)
        return "restride to three" if n == 3 else "restride back to two"

    def fence_above_ceiling(self, s, ahead):
        """Fences `s` at its durable ceiling + `ahead`; returns the fence. The load may raise
        the ceiling between the read and the PATCH: the fence is then refused (422, naming the
        ceiling written or in flight, which must be above it) and tried again further ahead."""
        for _ in range(10):
            fence = int(self.info(s)["durable_ceiling"]) + ahead
            status, body = api(s, "PATCH", f"/v1/sequences/{SEQ}", {"fence": str(fence)})
            if status == 200:
                self.assertEqual(body.get("fence"), str(fence), self.msg(f"{body}"))
                return fence
            self.assertEqual(status, 422, self.msg(f"{s.name}: fence {fence}: {body}"))
            stated = re.search(r"is below the durable ceiling (\d+)", json.dumps(body))
            self.assertTrue(stated, self.msg(f"{s.name}: fence {fence}: {body}"))
            self.assertGreater(int(stated.group(1)), fence, self.msg(
                f"{s.name}: fence {fence} refused, yet not below the ceiling: {body}"))
            ahead = max(4 * ahead, 10 * (s.cache or 1000))
        self.fail(self.msg(f"{s.name}: fence refused 10 times"))

    def act_fence(self, s):
        if s.fence is not None:
            self.say(f"lift the fence {s.fence} of {s.name}")
            self.close_fence_window(s, time.monotonic())
            status, body = api(s, "PATCH", f"/v1/sequences/{SEQ}", {"fence": "0"})
            self.assertEqual(status, 200, self.msg(f"{s.name}: lifting the fence: {body}"))
            self.assertNotIn("fence", body, self.msg(f"{body}"))
            s.fence = None
            return "fence lifted"
        # Sometimes within reach of the load (it hits the fence: 409 / fenced), sometimes not.
        fence = self.fence_above_ceiling(s, self.rng.choice((0, 1, 10, 3 * s.cache, 100000)))
        self.say(f"fence {s.name} at {fence}")
        s.fence = fence
        self.open_fence_window(s, fence, time.monotonic())
        return "fence set"

    def act_backup(self, s):
        if self.rng.random() < 0.75:
            status, body = api(s, "POST", "/v1/admin/backup", timeout=60)
            self.assertEqual(status, 200, self.msg(f"{s.name}: backup: {body}"))
            path = body["path"]
            kind = "online"
        else:
            # Offline: `ticketd backup` of the stopped server.
            self.restart(s, "sigterm")
            path = os.path.join(s.backup_dir, f"offline-{len(os.listdir(s.backup_dir))}")
            r = run(["backup", "--data-dir", s.t.data_dir, "--to", path])
            self.assertEqual(r.returncode, 0, self.msg(f"{s.name}: backup: {r.stdout}{r.stderr}"))
            s.start()
            kind = "offline"
        self.assertTrue(os.path.isfile(os.path.join(path, "ticketd-backup.json")), self.msg(path))
        s.backups.append((path, time.monotonic(), s.fence))
        self.say(f"{kind} backup of {s.name}: {os.path.basename(path)}")
        return f"backup ({kind})"

    def act_restore(self, s):
        path, taken, fence = self.rng.choice(s.backups)
        how = self.rng.choice(("sigterm", "kill9"))
        self.say(f"restore {s.name} ({how}) from {os.path.basename(path)}, "
                 f"{time.monotonic() - taken:.1f} s old")
        self.restart(s, how)
        self.close_fence_window(s, time.monotonic())
        shutil.rmtree(s.t.data_dir)
        r = run(["restore", "--from", path, "--data-dir", s.t.data_dir])
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, self.msg(f"{s.name}: restore: {out}"))
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith(f"restore: {SEQ}: ")),
                    None)
        self.assertIsNotNone(line, self.msg(out))
        self.assertIn("auto: max_rate", line, self.msg(out))
        s.start()
        # The backup's fence comes back with it (it is in the sequence's record).
        s.fence = fence
        if fence is not None:
            self.open_fence_window(s, fence, time.monotonic())
        # The restore's skip is a forward move that the older backups cannot see
        # (docs/operations.md "Restoring"): only backups taken from now on are restored later.
        s.backups.clear()
        return f"restore (after {how})"

    def act_kill9(self, s):
        self.say(f"kill -9 {s.name} under load")
        self.restart(s, "kill9")
        s.start()
        return "kill -9 and restart"

    def act_burst(self, s):
        """One client takes a few large blocks (the most one call may take: 100,000)."""
        calls = self.rng.randint(1, 4)
        count = self.rng.choice((1000, 20000, 100000))
        conn = f"{s.name}/burst{next(self.load.ids)}"
        client = JsonClient(s.t.http_port, token=TOKEN, timeout=60)
        statuses = []
        try:
            for _ in range(calls):
                sent = time.monotonic()
                resp, body, text = client.call("POST", f"/v1/sequences/{SEQ}/next",
                                               {"count": count})
                received = time.monotonic()
                statuses.append(resp.status)
                if resp.status == 200:
                    ids = [int(i) for i in body["ids"]]
                    self.assertEqual(len(ids), count, self.msg(text[:200]))
                    self.load.record(s, conn, sent, received, ids)
                    continue
                # Refused by a fence or by max_rate, both documented.
                self.assertTrue((resp.status == 409 and "fenced at" in text)
                                or (resp.status == 503 and "retry_later" in text),
                                self.msg(f"{s.name}: burst: {resp.status} {text}"))
        finally:
            client.close()
        self.say(f"burst of {calls} x {count} from {s.name}: {statuses}")
        return "burst" if 200 in statuses else "burst (refused)"

    # ----- the test -----

    def test_a_random_operator_schedule_never_issues_a_value_twice(self):
        pair = [Server(name, i, self.root, (2, i + 1), self.rng.choice(CACHES),
                       self.rng.choice(MAX_RATES)) for i, name in enumerate("AB")]
        self.servers.extend(pair)
        for s in pair:
            s.start()
            s.activate(True)
        self.load.start(pair, self.rng)
        self.step = 0
        self.wait_progress(pair, "the start")
        third_started = False
        for self.step in range(1, STEPS + 1):
            s = self.rng.choice(self.group())
            weights = dict(ACTION_WEIGHTS)
            if s.index == 2:
                # The third server only joins and leaves by restride, and is killed.
                weights = {a: w for a, w in weights.items() if a in ("kill9", "burst", "restride")}
            if not s.backups:
                weights.pop("restore", None)
            if s.max_rate == max(MAX_RATES):
                weights.pop("rate_raise", None)
            action = self.rng.choices(list(weights), list(weights.values()))[0]
            if action == "restride":
                result = self.act_restride()
                if self.third is not None and not third_started:
                    third_started = True
                    self.load.start([self.third], self.rng)
            else:
                result = getattr(self, "act_" + action)(s)
            self.actions[result] += 1
            # Then the load runs on the new state for a while (a random amount of it), so that
            # the next action meets clients in flight.
            self.wait_progress(self.group(), result, self.rng.choice(DWELL_VALUES))
        self.step = "end"
        self.load.finish()
        self.check_records()
        for s in self.servers:
            s.going_down()
            self.assertEqual(s.t.stop(), 0, self.msg(f"{s.name}: SIGTERM at the end:\n"
                                                    + s.t.log_text()[-3000:]))
            v = run(["verify", "--data-dir", s.t.data_dir])
            self.assertEqual(v.returncode, 0, self.msg(f"{s.name}: verify: {v.stdout}{v.stderr}"))
        bursts = sum(1 for r in self.load.records if "/burst" in r[1])
        print(f"seed {SEED}: {len(self.load.records)} values checked "
              f"({len(self.load.records) - bursts} from client threads, {bursts} from bursts) in "
              f"{time.monotonic() - self.began:.1f} s; actions {dict(self.actions)}; "
              f"refusals {dict(self.load.refused)}; failures while stopping "
              f"{dict(self.load.stopped)}; restride floors {[f for f, _ in self.epochs[1:]]}",
              flush=True)

    def explain(self, record):
        """A record in words: server, connection, value, and the last action before it."""
        index, conn, sent, received, value = record
        name = next(s.name for s in self.servers if s.index == index)
        times = [t for t, _, _ in self.timeline]
        k = bisect.bisect_right(times, received) - 1
        after = f"step {self.timeline[k][1]} ({self.timeline[k][2]})" if k >= 0 else "the start"
        return (f"{value} from {name} on {conn}, answered {received - self.began:.2f} s in, "
                f"after {after}")

    def check_records(self):
        records = list(self.load.records)
        names = {s.index: s.name for s in self.servers}
        self.assertEqual(self.load.unexpected, [], self.msg("requests failed"))
        self.assertGreater(len(records), 1000, self.msg("too little load to show anything"))

        # Never twice, across servers and time.
        seen = {}
        duplicates = []
        for r in records:
            if r[4] in seen:
                duplicates.append((seen[r[4]], r))
            else:
                seen[r[4]] = r
        self.assertEqual([(self.explain(a), self.explain(b)) for a, b in duplicates[:5]], [],
                         self.msg(f"{len(duplicates)} values acknowledged twice"))

        # Per connection: strictly increasing, in the order the client asked.
        by_conn = collections.defaultdict(list)
        for r in records:
            by_conn[r[1]].append(r[4])
        for conn, values in by_conn.items():
            bad = [(x, y) for x, y in zip(values, values[1:]) if y <= x]
            self.assertEqual(bad[:5], [], self.msg(f"{conn}: not increasing"))

        # Per server, in real time: a value asked for after another was received is larger.
        for index in names:
            mine = [r for r in records if r[0] == index]
            by_received = sorted(mine, key=lambda r: r[3])
            received_times = [r[3] for r in by_received]
            running_max = list(itertools.accumulate((r[4] for r in by_received), max))
            for r in mine:
                k = bisect.bisect_left(received_times, r[2])  # received strictly before sent
                if k:
                    self.assertGreater(r[4], running_max[k - 1], self.msg(
                        f"server {names[index]}: {r} is not above {running_max[k - 1]}, "
                        f"acknowledged before it was asked for"))

        # Grids: each value on its server's grid of the range it falls in.
        floors = [f for f, _ in self.epochs]
        for index, conn, _, _, v in records:
            floor, grids = self.epochs[bisect.bisect_left(floors, v) - 1]
            self.assertIn(index, grids, self.msg(
                f"{names[index]} issued {v} above floor {floor}, where it is not in the group"))
            inc, off = grids[index]
            self.assertEqual(v % inc, off % inc, self.msg(
                f"{names[index]} ({conn}) issued {v} off its grid {inc}/{off} above {floor}"))

        # Fences: nothing above F from a request sent after the fence was set and answered
        # before it was lifted (or a restride raised it, or a restore replaced the store).
        for index, fence, since, until in self.fence_windows:
            for r in records:
                if r[0] == index and r[2] > since and (until is None or r[3] < until):
                    self.assertLessEqual(r[4], fence, self.msg(
                        f"{names[index]} issued {r} above its fence {fence}"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
