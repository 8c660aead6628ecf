"""The nemesis suite: a ticketd pair under real network faults, pauses, kills and clock skew,
every client operation recorded, the whole history checked at the end (checker.py).

    nemesis.py etcd|rocksdb SECONDS [SEED [FAULT,FAULT,...]]

Every process runs in its own network namespace (netlab.py): three etcd members and two ticketd
servers (the `etcd` mode, active/standby on one prefix) or two independent odd/even ticketd
servers on RocksDB (the `rocksdb` mode), and the clients (clients.py) in a namespace of their own.
A seeded schedule (the seed is printed) starts a fault, lets it act for a few seconds, heals it,
and picks the next, for SECONDS. Then every fault is healed, the clients stop, the gapless
sequences settle, and the checker reads the history: no ID acknowledged twice, per-client order,
gapless invoice numbers, worker IDs held once. The longest window without a successful ticket
is reported per fault. Exits 1 on any violation (the history is kept and its path printed).
"""
import http.client
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import checker  # noqa: E402
import etcd_cluster  # noqa: E402
import faked_clock  # noqa: E402
import netlab  # noqa: E402

BINARY = os.environ.get("TICKETD_BINARY", "build/ticketd")
ETCDCTL = "/usr/bin/etcdctl"
LEADER_TTL_S = 3
MYSQL_PORT, HTTP_PORT, ETCD_CLIENT, ETCD_PEER, PROXY_BASE = 3306, 8080, 2379, 2380, 23790

CLIENTS = {
    "etcd": {"mysql_text": 2, "mysql_prepared": 1, "http_next": 2, "http_block": 1,
             "snowflake": 1, "gapless": 2, "worker": 3},
    "rocksdb": {"mysql_text": 2, "mysql_prepared": 2, "http_next": 2, "http_block": 1,
                "snowflake": 2, "gapless": 2, "worker": 6},
}

TICKETD_CONFIG = """
{storage}
log_level: info
mysql:
  listen: {ip}:{mysql}
  users:
    - {{ name: nemesis, password: "{password}" }}
http:
  listen: {ip}:{http}
  tokens: ["{token}"]
sequences:
  - {{ name: Tickets64, kind: ticket, cache: 100{grid} }}
  - {{ name: Invoices, kind: gapless, reservation_ttl_ms: 8000 }}
  - {{ name: Flakes, kind: snowflake }}
worker_pools:
  - {{ name: render, size: 2, min_ttl_s: 1, default_ttl_s: 3 }}
snowflake:
  worker_id: {{ source: static, id: {worker} }}
"""


class Server:
    """One ticketd in its namespace, with a faked realtime clock (libfaketime reads the offset
    from a file the nemesis rewrites: a clock step is a write)."""

    def __init__(self, node, config_text, workdir, name):
        self.node = node
        self.name = name
        self.config_path = os.path.join(workdir, f"{name}.yaml")
        with open(self.config_path, "w") as f:
            f.write(config_text)
        os.chmod(self.config_path, 0o600)
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.clock_path = os.path.join(workdir, f"{name}.faketime")
        self.started = time.time()
        self.set_clock(0.0)
        self.proc = None
        self.paused = False

    def set_clock(self, offset_s, rate=1.0):
        """The faked clock reads real time + offset_s + (now - process start) * (rate - 1)
        (libfaketime's rule: the rate applies from the process' start)."""
        self.offset_s = offset_s
        self.rate = rate
        with open(self.clock_path + ".tmp", "w") as f:
            # The rate is always written: libfaketime keeps the last rate it read when a spec
            # leaves it out (a clock healed to "+2.5" would go on running at 1.5x).
            f.write(f"{offset_s:+.3f} x{rate}\n")
        os.replace(self.clock_path + ".tmp", self.clock_path)

    def skew(self):
        """How far the faked clock reads ahead of real time now."""
        return self.offset_s + (time.time() - self.started) * (self.rate - 1)

    def set_rate(self, rate):
        """Runs the clock at `rate` from now on without a step: the offset absorbs the rate's
        effect since the process started."""
        self.set_clock(self.skew() - (time.time() - self.started) * (rate - 1), rate)

    def start(self):
        env = dict(os.environ, LD_PRELOAD=faked_clock.preload(BINARY),
                   FAKETIME_TIMESTAMP_FILE=self.clock_path, FAKETIME_DONT_FAKE_MONOTONIC="1",
                   FAKETIME_CACHE_DURATION="1",
                   ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
        log = open(self.log_path, "ab")
        self.proc = self.node.popen([BINARY, "--config", self.config_path], stdout=log,
                                    stderr=subprocess.STDOUT, env=env)
        log.close()
        # libfaketime's rate counts from the process' start: a restart begins on real time.
        self.started = time.time()
        self.set_clock(0.0)
        self.paused = False

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            if "ticketd ready" in self.log_text():
                return
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not become ready:\n{self.log_tail()}")

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def log_tail(self, n=3000):
        return self.log_text()[-n:]

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def kill9(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        if self.alive():
            self.signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Etcd:
    """Three etcd members, each in its own namespace."""

    def __init__(self, lab, workdir):
        self.nodes = [lab.add_node(f"e{i}") for i in range(3)]
        self.workdir = workdir
        self.procs = [None] * 3
        self.paused = [False] * 3

    def initial_cluster(self):
        return ",".join(f"m{i}=http://{n.ip}:{ETCD_PEER}" for i, n in enumerate(self.nodes))

    def start(self, i, state="new"):
        n = self.nodes[i]
        log = open(os.path.join(self.workdir, f"etcd{i}.log"), "ab")
        self.procs[i] = n.popen(
            etcd_cluster.member_argv(f"m{i}", f"{self.workdir}/etcd{i}", self.endpoint(i),
                                     f"http://{n.ip}:{ETCD_PEER}", self.initial_cluster(),
                                     state),
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.paused[i] = False

    def endpoint(self, i):
        return f"http://{self.nodes[i].ip}:{ETCD_CLIENT}"

    def ctl(self, i, *args, timeout=10):
        return self.nodes[i].run([ETCDCTL, f"--endpoints={self.endpoint(i)}",
                                  "--command-timeout=3s", *args],
                                 capture_output=True, text=True, timeout=timeout,
                                 env=dict(os.environ, ETCDCTL_API="3"))

    def wait_healthy(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i in range(3):
                if self.alive(i) and self.ctl(i, "endpoint", "health").returncode == 0:
                    return
            time.sleep(0.2)
        raise RuntimeError("etcd did not become healthy")

    def alive(self, i):
        return self.procs[i] is not None and self.procs[i].poll() is None

    def kill9(self, i):
        if self.alive(i):
            self.procs[i].kill()
            self.procs[i].wait()

    def compact(self, via):
        """Compacts at the current revision through member `via`; returns it (or None)."""
        r = self.ctl(via, "endpoint", "status", "--write-out=json")
        if r.returncode != 0:
            return None
        revision = json.loads(r.stdout)[0]["Status"]["header"]["revision"]
        r = self.ctl(via, "compact", str(revision))
        return revision if r.returncode == 0 else None

    def stop_all(self):
        for i in range(3):
            if self.alive(i):
                os.kill(self.procs[i].pid, signal.SIGCONT)
                self.procs[i].terminate()
                try:
                    self.procs[i].wait(10)
                except subprocess.TimeoutExpired:
                    self.procs[i].kill()


class Suite:
    def __init__(self, mode, seconds, seed, only=None):
        self.only = only  # fault names to draw from (the others left out), or None: all
        self.mode = mode
        self.seconds = seconds
        self.seed = seed
        self.rng = random.Random(seed)
        self.workdir = tempfile.mkdtemp(prefix=f"ticketd-nemesis-{mode}-")
        self.events = []  # the nemesis' own events: start/stop of each fault
        self.token = secrets.token_hex(16)
        self.password = secrets.token_hex(12)
        self.lab = netlab.Lab(prefix="ntd")
        self.client_node = self.lab.add_node("cl")
        self.etcd = Etcd(self.lab, self.workdir) if mode == "etcd" else None
        self.server_nodes = [self.lab.add_node(f"t{i}") for i in range(2)]
        self.proxies = [[] for _ in self.server_nodes]  # etcd mode: per server, one per member
        self.servers = []

    # ---- set-up --------------------------------------------------------------------------

    def storage_section(self, i):
        if self.mode == "rocksdb":
            data = os.path.join(self.workdir, f"data{i}")
            os.makedirs(data, exist_ok=True)
            return f"data_dir: {data}"
        endpoints = ", ".join(f"http://127.0.0.1:{PROXY_BASE + m}" for m in range(3))
        return (f"storage:\n  engine: etcd\n  endpoints: [{endpoints}]\n"
                f"  prefix: /ticketd/nemesis/\n  leader_ttl_s: {LEADER_TTL_S}")

    def start(self):
        print(f"nemesis: mode {self.mode}, {self.seconds} s, seed {self.seed}, "
              f"workdir {self.workdir}", flush=True)
        if self.etcd:
            for i in range(3):
                self.etcd.start(i)
            self.etcd.wait_healthy()
            # Each ticketd reaches each member through a proxy in its own namespace, so that
            # delay and loss can be put on one server's etcd link (netem is not in this kernel).
            for s, node in enumerate(self.server_nodes):
                for m, e in enumerate(self.etcd.nodes):
                    self.proxies[s].append(self.lab.proxy(node, PROXY_BASE + m, e.ip, ETCD_CLIENT))
        for i, node in enumerate(self.server_nodes):
            grid = ", increment: 2, offset: %d" % (i + 1) if self.mode == "rocksdb" else ""
            text = TICKETD_CONFIG.format(storage=self.storage_section(i), ip=node.ip,
                                         mysql=MYSQL_PORT, http=HTTP_PORT, password=self.password,
                                         token=self.token, grid=grid,
                                         worker=(i + 1) if self.mode == "rocksdb" else 7)
            self.servers.append(Server(node, text, self.workdir, f"t{i}"))
        for s in self.servers:
            s.start()
        for s in self.servers:
            s.wait_ready()
        if self.etcd:
            self.wait_leader(60)

    # ---- observing ---------------------------------------------------------------------------

    def http(self, server, method, path, body=None, timeout=2):
        """One HTTP call made from the clients' namespace: (status, body) or (0, None)."""
        node = self.servers[server].node
        conn = http.client.HTTPConnection(node.ip, HTTP_PORT, timeout=timeout)
        try:
            conn.sock = self.client_node.create_connection((node.ip, HTTP_PORT), timeout)
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Authorization": f"Bearer {self.token}",
                                  "Content-Type": "application/json"})
            r = conn.getresponse()
            status, text = r.status, r.read().decode()
        except (OSError, http.client.HTTPException):
            return 0, None
        finally:
            conn.close()
        try:
            return status, (json.loads(text) if text.strip() else None)
        except ValueError:
            return status, text

    def leader(self):
        for i, s in enumerate(self.servers):
            if not s.alive() or s.paused:
                continue
            status, view = self.http(i, "GET", "/v1/cluster", timeout=1)
            if status == 200 and view.get("role") == "leader" and view.get("serving"):
                return i
        return None

    def wait_leader(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            i = self.leader()
            if i is not None:
                return i
            time.sleep(0.2)
        raise RuntimeError("no leader:\n" + "\n".join(s.log_tail(1500) for s in self.servers))

    # ---- faults ------------------------------------------------------------------------------

    def faults(self):
        """(name, start, heal) of every fault of this mode; start returns the state heal needs."""
        common = [
            ("partition-server-clients", self.f_cut_clients, self.f_heal_net),
            ("pause-server", self.f_pause_server, self.f_resume_server),
            ("kill-server", self.f_kill_server, self.f_restart_server),
            ("clock-step-forward", lambda: self.f_clock_step(+30), self.f_clock_reset),
            ("clock-step-back", lambda: self.f_clock_step(-30), self.f_clock_reset),
            ("clock-fast", lambda: self.f_clock_rate(1.5), self.f_clock_steady),
            ("clock-slow", lambda: self.f_clock_rate(0.5), self.f_clock_steady),
        ]
        if self.mode == "rocksdb":
            return common
        return common + [
            ("partition-leader-etcd", self.f_cut_leader_etcd, self.f_heal_net),
            ("partition-leader-member", self.f_cut_leader_member, self.f_heal_net),
            ("etcd-split", self.f_etcd_split, self.f_heal_net),
            ("delay-loss-leader-etcd", self.f_delay_leader, self.f_undelay),
            ("pause-etcd-member", self.f_pause_member, self.f_resume_member),
            ("etcd-restart-compact", self.f_kill_member, self.f_compact_restart_member),
        ]

    def target(self):
        """The server a fault aims at: the leader in the etcd mode, either one otherwise."""
        if self.mode == "etcd":
            i = self.leader()
            if i is not None:
                return i
        return self.rng.randrange(len(self.servers))

    def f_cut_clients(self):
        i = self.target()
        self.lab.cut(self.server_nodes[i], self.client_node)
        return i

    def f_heal_net(self, _state):
        self.lab.heal()

    def f_pause_server(self):
        i = self.target()
        self.servers[i].signal(signal.SIGSTOP)
        netlab.wait_stopped(self.servers[i].proc.pid)  # every thread, not just the first
        self.servers[i].paused = True
        return i

    def f_resume_server(self, i):
        self.servers[i].signal(signal.SIGCONT)
        self.servers[i].paused = False

    def f_kill_server(self):
        i = self.target()
        self.servers[i].kill9()
        return i

    def f_restart_server(self, i):
        self.servers[i].start()
        self.servers[i].wait_ready()

    def f_clock_step(self, seconds):
        i = self.target()
        self.servers[i].set_clock(seconds)
        return i

    def f_clock_reset(self, i):
        self.servers[i].set_clock(0.0)

    def f_clock_rate(self, rate):
        i = self.target()
        self.servers[i].set_rate(rate)
        return i

    def f_clock_steady(self, i):
        # Back to real time's rate, keeping what the clock gained or lost (a drifted clock that
        # NTP then slews back is the next fault's business: a step resets it).
        self.servers[i].set_rate(1.0)

    def f_cut_leader_etcd(self):
        i = self.target()
        self.lab.partition([self.server_nodes[i]], self.etcd.nodes)
        return i

    def f_cut_leader_member(self):
        i = self.target()
        self.lab.cut(self.server_nodes[i], self.rng.choice(self.etcd.nodes))
        return i

    def f_etcd_split(self):
        lone = self.rng.randrange(3)
        self.lab.partition([self.etcd.nodes[lone]],
                           [n for j, n in enumerate(self.etcd.nodes) if j != lone])
        return lone

    def f_delay_leader(self):
        i = self.target()
        for p in self.proxies[i]:
            p.set(delay_ms=200, jitter_ms=100, loss=0.10)
        return i

    def f_undelay(self, i):
        for p in self.proxies[i]:
            p.set()

    def f_pause_member(self):
        m = self.rng.randrange(3)
        os.kill(self.etcd.procs[m].pid, signal.SIGSTOP)
        netlab.wait_stopped(self.etcd.procs[m].pid)
        self.etcd.paused[m] = True
        return m

    def f_resume_member(self, m):
        os.kill(self.etcd.procs[m].pid, signal.SIGCONT)
        self.etcd.paused[m] = False

    def f_kill_member(self):
        m = self.rng.randrange(3)
        self.etcd.kill9(m)
        return m

    def f_compact_restart_member(self, m):
        # Compact on a surviving member first: a watcher that comes back to the restarted member
        # (or any member) at an older revision must be told it is compacted and read again.
        others = [j for j in range(3) if j != m and self.etcd.alive(j)]
        revision = self.etcd.compact(others[0]) if others else None
        self.log(f"compacted at revision {revision}")
        self.etcd.start(m, state="existing")

    # ---- the run -------------------------------------------------------------------------------

    def log(self, text):
        print(f"nemesis {time.time() - self.t0:7.1f}s: {text}", flush=True)

    def record(self, f, name):
        self.events.append({"process": "nemesis", "type": "info", "f": f, "value": name,
                            "time": time.time()})

    def run(self):
        self.t0 = time.time()
        self.start()
        spec = {"mode": self.mode, "seconds": self.seconds + 5, "token": self.token,
                "user": "nemesis", "password": self.password, "clients": CLIENTS[self.mode],
                "servers": [{"name": s.name, "ip": s.node.ip, "mysql": MYSQL_PORT,
                             "http": HTTP_PORT} for s in self.servers]}
        spec_path = os.path.join(self.workdir, "clients.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        self.history_path = os.path.join(self.workdir, "history.jsonl")
        clients_log = open(os.path.join(self.workdir, "clients.log"), "wb")
        clients = self.client_node.popen(
            [sys.executable, os.path.join(HERE, "clients.py"), spec_path, self.history_path],
            stdout=clients_log, stderr=subprocess.STDOUT)
        time.sleep(3)  # a quiet start: the first window measures the unfaulted service
        faults = self.faults()
        if self.only:
            # A filter keeps the list's order: a seed replays the schedule it drew from this list.
            unknown = set(self.only) - {f[0] for f in faults}
            if unknown:
                raise RuntimeError(f"no such fault in mode {self.mode}: {sorted(unknown)}")
            faults = [f for f in faults if f[0] in self.only]
        end = time.time() + self.seconds
        counts = {}
        while time.time() < end:
            name, start, heal = self.rng.choice(faults)
            state = start()
            self.record("start", name)
            self.log(f"{name} on {state}")
            time.sleep(self.rng.uniform(2, 2 * LEADER_TTL_S + 2))
            heal(state)
            self.record("stop", name)
            self.log(f"healed {name}")
            counts[name] = counts.get(name, 0) + 1
            if self.etcd:
                self.wait_leader(60)
            time.sleep(self.rng.uniform(1, 3))
        clients.wait(timeout=120)
        clients_log.close()
        self.settle()
        return counts

    def settle(self):
        """Ends every pending gapless reservation (their TTL), uses up the released numbers, and
        records the final audit of each gapless space."""
        targets = [self.wait_leader(60)] if self.etcd else range(len(self.servers))
        # Every reservation ends within its TTL (8 s) on the server's clock, which a clock-rate
        # fault may have left up to 2x slow; a reservation still pending after this is a fault.
        deadline = time.time() + 60
        for i in targets:
            space = "Invoices" if self.etcd else f"Invoices@{self.servers[i].name}"
            while True:
                status, a = self.http(i, "GET", "/v1/sequences/Invoices/audit")
                if status == 200 and not a["pending"]:
                    break
                if time.time() > deadline:
                    raise RuntimeError(f"{space}: reservations still pending 60 s after the "
                                       f"clients stopped: {status} {a}\n"
                                       + self.servers[i].log_tail())
                time.sleep(0.5)
            taken = 0
            while True:
                status, a = self.http(i, "GET", "/v1/sequences/Invoices/audit")
                if status != 200:
                    raise RuntimeError(f"audit of {space}: {status} {a}")
                if not a["released"]:
                    break
                t0 = time.time()
                status, body = self.http(i, "POST", "/v1/sequences/Invoices/next")
                if status != 200:
                    raise RuntimeError(f"settling {space}: {status} {body}\n"
                                       + self.servers[i].log_tail())
                t1 = time.time()
                n = int(body["ids"][0])
                value = {"id": n, "reservation": f"settle-{n}"}
                # A take is a reservation committed at once: recorded as the two operations,
                # one after the other inside the take's own interval.
                times = (t0, t0 + (t1 - t0) / 3, t0 + 2 * (t1 - t0) / 3, t1)
                steps = (("gapless_reserve", "invoke"), ("gapless_reserve", "ok"),
                         ("gapless_commit", "invoke"), ("gapless_commit", "ok"))
                for t, (f, kind) in zip(times, steps):
                    self.events.append({"process": f"settle-{space}", "type": kind, "f": f,
                                        "space": space, "server": self.servers[i].name,
                                        "time": t, "value": value})
                taken += 1
            high = int(a["high"]) if a["high"] is not None else 0
            voided = sorted(int(v["id"]) for v in a.get("voids", []))
            final = {"committed": [n for n in range(1, high + 1) if n not in set(voided)],
                     "voided": voided, "committed_through": int(a["committed_through"] or 0),
                     "first": 1}
            now = time.time()
            for kind in ("invoke", "ok"):
                self.events.append({"process": f"final-{space}", "type": kind, "f": "gapless_final",
                                    "space": space, "time": now,
                                    "value": final if kind == "ok" else None})
            self.log(f"{space}: committed through {final['committed_through']}, "
                     f"{taken} released numbers used up")

    def check(self):
        history = []
        with open(self.history_path) as f:
            for line in f:
                history.append(json.loads(line))
        # Availability is measured while the clients ran: the settling afterwards is not a
        # window without tickets.
        faults = [e for e in self.events if e["process"] == "nemesis"]
        available = checker.unavailability(sorted(history + faults, key=lambda e: e["time"]))
        history += self.events
        history.sort(key=lambda e: e["time"])  # stable: one process' events keep their order
        merged = os.path.join(self.workdir, "history-all.jsonl")
        with open(merged, "w") as f:
            for e in history:
                f.write(json.dumps(e) + "\n")
        result = checker.check(history)
        result.unavailability = available
        return result, merged

    def close(self):
        for s in self.servers:
            s.stop()
        if self.etcd:
            self.etcd.stop_all()
        self.lab.close()


def main():
    mode = sys.argv[1]
    seconds = float(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else random.SystemRandom().randrange(1 << 30)
    only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
    netlab.Lab.probe()  # fails with the reason when namespaces cannot be made: never a skip
    netlab.cleanup_stale("ntd")
    suite = Suite(mode, seconds, seed, only)
    keep = os.environ.get("TICKETD_NEMESIS_KEEP") == "1"
    try:
        counts = suite.run()
        for s in suite.servers:
            if not s.alive():
                raise RuntimeError(f"{s.name} is not running at the end:\n{s.log_tail()}")
        result, merged = suite.check()
    finally:
        suite.close()
    stats = result.stats
    print(f"nemesis: seed {seed}: faults {json.dumps(counts, sort_keys=True)}")
    print(f"nemesis: operations {json.dumps(stats, sort_keys=True, default=str)}")
    print("nemesis: longest window without a ticket, per fault (leader_ttl_s "
          f"{LEADER_TTL_S}): " + json.dumps({k: round(v, 2) for k, v in
                                             sorted(result.unavailability.items())}))
    if not result.ok:
        for v in result.violations[:20]:
            print(f"VIOLATION {v.rule}: {v.message}")
        print(f"nemesis: {len(result.violations)} violations; history kept in {merged} "
              f"(seed {seed})")
        sys.exit(1)
    print(f"nemesis: 0 violations (seed {seed})")
    if not keep:
        shutil.rmtree(suite.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
