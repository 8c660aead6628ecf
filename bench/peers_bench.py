#!/usr/bin/python3
"""Drives bench/peers.sh: ticketd against what a team would run instead, on the same box, in the
same run. Starts on 127.0.0.1, each with a private data dir under WORK (made and removed by
peers.sh): ticketd (build/ticketd, shipped defaults), MariaDB (bench/mysql_bench.start_mariadb:
MyISAM and InnoDB Flickr tables), Redis (appendonly, appendfsync always), PostgreSQL (fsync=on)
and nginx (`return 200` with a body shaped like ticketd's `next` answer). Every workload runs
once as a warm-up, then ROUNDS times interleaved (round 1: all workloads, round 2: all ...), so
a neighbour's compile burst spreads over every row instead of landing on one. Prints one table
of medians and the goals of issue 13 as ratios of this run.

Usage: peers_bench.py SECONDS ROUNDS WORK. Each server's pid is appended to WORK/pids as it
starts, so peers.sh's trap can stop what a killed driver left behind."""
import glob
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysql_bench as mb  # noqa: E402

# Seconds first: mysql_bench reads sys.argv[1] as its own seconds when imported.
SECONDS = int(sys.argv[1])
ROUNDS = int(sys.argv[2])
WORK = sys.argv[3]
CONNECTIONS = 64
FLICKR_P99_CONNECTIONS = 16
NEXT_PATH = "/v1/sequences/Tickets64/next"
BLOCKS_PATH = "/v1/sequences/Tickets64/blocks"
PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1] if glob.glob(
    "/usr/lib/postgresql/*/bin") else ""
CLIENT_THREADS = 2  # wrk -t, pgbench -j, redis-benchmark --threads: one per core


def remember(proc):
    with open(os.path.join(WORK, "pids"), "a") as f:
        f.write(f"{proc.pid}\n")
    return proc


def log(name):
    return open(os.path.join(WORK, f"{name}.log"), "w")


# --- servers ------------------------------------------------------------------------------------

def start_ticketd():
    port, http_port = mb.free_port(), mb.free_port()
    cfg = os.path.join(WORK, "ticketd.yaml")
    mb.write_bench_config(cfg, f"{WORK}/ticketd", port, http_port)
    proc = remember(subprocess.Popen([os.path.join(mb.ROOT, "build", "ticketd"), "--config", cfg],
                                     stdout=log("ticketd"), stderr=subprocess.STDOUT))
    mb.wait_port(port, proc)
    mb.wait_port(http_port, proc)
    return proc, port, http_port


def start_mariadb():
    proc, port = mb.start_mariadb(WORK)
    remember(proc)
    return proc, port


def start_redis():
    port = mb.free_port()
    data = os.path.join(WORK, "redis")
    os.mkdir(data)
    # Durable per reply, like ticketd's synced writes: the AOF is fsynced before INCR answers.
    proc = remember(subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", data,
         "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
         "--logfile", os.path.join(WORK, "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
    mb.wait_port(port, proc)
    return proc, port


def start_postgres():
    """PostgreSQL refuses to run as root: as root, its dirs belong to the `postgres` user that
    Debian's package creates, and initdb and postgres run as that user."""
    port = mb.free_port()
    base = os.path.join(WORK, "pg")
    os.mkdir(base)
    as_user = {}
    if os.geteuid() == 0:
        import pwd
        pw = pwd.getpwnam("postgres")
        os.chmod(WORK, 0o711)
        os.chown(base, pw.pw_uid, pw.pw_gid)
        as_user = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    data = os.path.join(base, "data")
    subprocess.run([f"{PG_BIN}/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                    "--no-sync"], check=True, capture_output=True, cwd=base, **as_user)
    proc = remember(subprocess.Popen(
        [f"{PG_BIN}/postgres", "-D", data, "-p", str(port), "-c", "listen_addresses=127.0.0.1",
         "-c", f"unix_socket_directories={base}", "-c", "fsync=on", "-c",
         "synchronous_commit=on", "-c", "max_connections=200", "-c", "shared_buffers=128MB"],
        stdout=log("postgres"), stderr=subprocess.STDOUT, cwd=base, **as_user))
    mb.wait_port(port, proc)
    for _ in range(100):
        r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d",
                            "postgres", "-qc", "CREATE SEQUENCE s"], capture_output=True, text=True)
        if r.returncode == 0:
            break
        time.sleep(0.1)  # the port opens before the database accepts connections
    else:
        raise SystemExit(f"PostgreSQL: {r.stderr.strip()}")
    return proc, port


def start_nginx(ticketd_http_port):
    """nginx answering every request with the bytes ticketd's `next` answers with (status line
    aside): the HTTP floor of this box for the same wrk script."""
    port = mb.free_port()
    with urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{ticketd_http_port}{NEXT_PATH}", data=b"{}",
            headers={"Content-Type": "application/json"})) as r:
        body = r.read().decode()
        content_type = r.headers.get("Content-Type", "application/json")
    prefix = os.path.join(WORK, "nginx")
    os.mkdir(prefix)
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes {os.cpu_count() or 2};
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
  # nginx closes a keep-alive connection after 1000 requests by default; ticketd does not.
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      default_type {content_type};
      return 200 '{body}';
    }}
  }}
}}
""")
    proc = remember(subprocess.Popen(["nginx", "-p", prefix, "-e", f"{prefix}/error.log", "-c",
                                      conf], stdout=log("nginx"), stderr=subprocess.STDOUT))
    mb.wait_port(port, proc)
    return proc, port


def checked_settings(r_port, p_port, n_port, t_http):
    """Asks the servers themselves what the table's notes claim, so a default that changed or a
    flag that was ignored shows in the output instead of in the figures."""
    def out(cmd):
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()

    redis = out(["redis-cli", "-h", "127.0.0.1", "-p", str(r_port), "CONFIG", "GET", "append*"])
    redis = dict(zip(redis[::2], redis[1::2]))
    pg = out(["psql", "-h", "127.0.0.1", "-p", str(p_port), "-U", "postgres", "-d", "postgres",
              "-Atc", "SELECT current_setting('fsync'), current_setting('synchronous_commit')"])
    pg_fsync, pg_commit = pg[0].split("|")

    def post(port):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{NEXT_PATH}", data=b"{}",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            return r.read().decode()

    ours, floor = post(t_http), post(n_port)
    if re.sub(r"\d+", "N", ours) != re.sub(r"\d+", "N", floor):
        raise SystemExit(f"nginx answers {floor!r}, not shaped like ticketd's {ours!r}")
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", WORK], capture_output=True,
                        text=True).stdout.strip() or "?"
    return (f"checked: Redis appendonly={redis.get('appendonly')} "
            f"appendfsync={redis.get('appendfsync')}; PostgreSQL fsync={pg_fsync} "
            f"synchronous_commit={pg_commit}; nginx body {floor}; data dirs on {fs}")


# --- load generators: each returns (IDs/s, p99 ms, note) -------------------------------------

def wrk(port, path, body, ids_per_request, seconds, connections=CONNECTIONS):
    return mb.wrk(port, path, body, ids_per_request, seconds, connections, CLIENT_THREADS)


def durable_counters(http_port):
    """ticketd's synced-commit counters from /metrics: commits, seconds in them, blocks leased."""
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    total = {"ticketd_durable_writes_total": 0.0, "ticketd_durable_write_seconds_total": 0.0,
             "ticketd_blocks_leased_total": 0.0}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in total:
            total[name] += float(line.rsplit(" ", 1)[1])
    return total


def hilo(http_port, seconds):
    """Blocks of 1,000 over HTTP; the note says what bounds it: every block waits for a synced
    commit, so IDs/s <= blocks per commit x 1,000 / commit latency."""
    before = durable_counters(http_port)
    ids, p99, note = wrk(http_port, BLOCKS_PATH, '{"size":1000}', 1000, seconds)
    after = durable_counters(http_port)
    commits = after["ticketd_durable_writes_total"] - before["ticketd_durable_writes_total"]
    if ids is not None and commits > 0:
        blocks = after["ticketd_blocks_leased_total"] - before["ticketd_blocks_leased_total"]
        spent = (after["ticketd_durable_write_seconds_total"] -
                 before["ticketd_durable_write_seconds_total"])
        note = "; ".join(filter(None, [note, f"{blocks / commits:.0f} blocks per synced commit of "
                                       f"{1000 * spent / commits:.2f} ms mean"]))
    return ids, p99, note


def sysbench(port, mode, table, seconds, connections=CONNECTIONS):
    mb.SECONDS = seconds
    tps, p99, note = mb.sysbench(port, connections, mode, table)
    if isinstance(note, int):
        note = f"{note} deadlock/timeout errors ignored" if note else ""
    return tps, p99, note


def redis_incr(port, seconds, rate_hint):
    """redis-benchmark runs a request count, not a duration: the count is sized from the rate
    of the previous run (or the warm-up) so each run lasts about SECONDS."""
    n = max(10_000, int((rate_hint or 50_000) * seconds))
    r = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(CONNECTIONS),
         "--threads", str(CLIENT_THREADS), "-n", str(n), "-t", "incr", "--csv"],
        capture_output=True, text=True)
    for line in r.stdout.splitlines():
        cols = [c.strip('"') for c in line.split(",")]
        if cols[0] == "INCR":
            return float(cols[1]), float(cols[6]), ""
    return None, None, (r.stdout + r.stderr).strip()[-200:] or "redis-benchmark failed"


def pgbench_nextval(port, seconds):
    script = os.path.join(WORK, "nextval.sql")
    with open(script, "w") as f:
        f.write("SELECT nextval('s');\n")
    logs = os.path.join(WORK, "pgbench-log")
    shutil.rmtree(logs, ignore_errors=True)
    os.mkdir(logs)
    r = subprocess.run(
        ["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-n", "-M", "prepared",
         "-c", str(CONNECTIONS), "-j", str(CLIENT_THREADS), "-T", str(seconds), "-f", script,
         "-l", "--log-prefix", os.path.join(logs, "tx"), "postgres"],
        capture_output=True, text=True, cwd=logs)
    m = re.search(r"^tps = ([\d.]+)", r.stdout, re.M)
    if r.returncode != 0 or not m:
        return None, None, (r.stdout + r.stderr).strip()[-200:] or "pgbench failed"
    # Per-transaction log: client_id transaction_no latency_us script_no epoch_s epoch_us
    lat = []
    for path in glob.glob(os.path.join(logs, "tx*")):
        with open(path) as f:
            lat.extend(int(line.split()[2]) for line in f)
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1000 if lat else None
    return float(m.group(1)), p99, ""


# --- the run ------------------------------------------------------------------------------------

def fmt_rate(v):
    return f"{v:,.0f}" if v is not None else "-"


def fmt_ms(v):
    return f"{v:.2f}" if v is not None else "-"


def main():
    procs = []
    fast_stop = []

    def stop(*_):
        raise SystemExit(130)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        ticketd, t_mysql, t_http = start_ticketd()
        procs.append(ticketd)
        maria, m_port = start_mariadb()
        procs.append(maria)
        redis, r_port = start_redis()
        procs.append(redis)
        pg, p_port = start_postgres()
        procs.append(pg)
        fast_stop.append(pg)
        nginx, n_port = start_nginx(t_http)
        procs.append(nginx)

        settings = checked_settings(r_port, p_port, n_port, t_http)
        redis_rate = {}

        def redis_run(seconds):
            result = redis_incr(r_port, seconds, redis_rate.get("last"))
            if result[0]:
                redis_rate["last"] = result[0]
            return result

        # key, label, run(seconds) -> (IDs/s, p99 ms, note)
        workloads = [
            ("http", f"ticketd HTTP POST {NEXT_PATH} (wrk)",
             lambda s: wrk(t_http, NEXT_PATH, "{}", 1, s)),
            ("nginx", "nginx return 200, ticket-shaped JSON (wrk)",
             lambda s: wrk(n_port, NEXT_PATH, "{}", 1, s)),
            ("nextval", "ticketd MySQL SELECT NEXTVAL text (sysbench)",
             lambda s: sysbench(t_mysql, "nextval", "Tickets64", s)),
            ("nextval_p", "ticketd MySQL SELECT NEXTVAL prepared (sysbench)",
             lambda s: sysbench(t_mysql, "nextval_prepared", "Tickets64", s)),
            ("redis", "Redis INCR, appendfsync always (redis-benchmark)", redis_run),
            ("pg", "PostgreSQL SELECT nextval('s'), prepared (pgbench)",
             lambda s: pgbench_nextval(p_port, s)),
            ("flickr", "ticketd MySQL Flickr REPLACE + LAST_INSERT_ID (sysbench)",
             lambda s: sysbench(t_mysql, "text", "Tickets64", s)),
            ("floor", "MariaDB no-write floor SELECT 1 + LAST_INSERT_ID",
             lambda s: sysbench(m_port, "floor", "Tickets64", s)),
            ("myisam", "MariaDB MyISAM Flickr REPLACE + LAST_INSERT_ID",
             lambda s: sysbench(m_port, "text", "Tickets64m", s)),
            ("flickr16", f"ticketd MySQL Flickr, {FLICKR_P99_CONNECTIONS} connections",
             lambda s: sysbench(t_mysql, "text", "Tickets64", s, FLICKR_P99_CONNECTIONS)),
            ("hilo", "ticketd HTTP hi-lo blocks of 1,000 (wrk)",
             lambda s: hilo(t_http, s)),
        ]
        print(f"bench/peers.sh: {len(workloads)} workloads x {ROUNDS} rounds x {SECONDS} s,"
              f" {CONNECTIONS} connections unless noted, load generators on the same"
              f" {os.cpu_count()} cores as the servers", flush=True)
        print(settings, flush=True)
        print("warm-up ...", flush=True)
        for key, _, run in workloads:
            run(1)
        results = {key: [] for key, _, _ in workloads}
        notes = {key: set() for key, _, _ in workloads}
        for rnd in range(1, ROUNDS + 1):
            line = []
            for key, _, run in workloads:
                ids, p99, note = run(SECONDS)
                if ids is not None:
                    results[key].append((ids, p99))
                if note:
                    notes[key].add(note)
                line.append(f"{key} {fmt_rate(ids)}")
            print(f"round {rnd}: " + ", ".join(line), flush=True)
        for p in procs:
            if p.poll() is not None:
                print(f"WARNING: a server exited during the run (pid {p.pid}, "
                      f"code {p.returncode}); see its log", flush=True)

        med = {}
        for key, rs in results.items():
            med[key] = ((statistics.median(r[0] for r in rs),
                         statistics.median(r[1] for r in rs if r[1] is not None)
                         if any(r[1] is not None for r in rs) else None)
                        if rs else (None, None))

        print()
        print(f"medians of {ROUNDS} rounds")
        print(f"{'workload':58} {'IDs/s':>14} {'p99 ms':>8}  note")
        for key, label, _ in workloads:
            ids, p99 = med[key]
            print(f"{label:58} {fmt_rate(ids):>14} {fmt_ms(p99):>8}  "
                  f"{'; '.join(sorted(notes[key]))}")

        def ratio(a, b):
            x, y = med[a][0], med[b][0]
            return x / y if x and y else None

        goals = [
            ("HTTP next / nginx floor", ratio("http", "nginx"), 0.8, "x"),
            ("HTTP next p99 (ms, < 2)", med["http"][1], 2, "<"),
            ("NEXTVAL text / Redis INCR always", ratio("nextval", "redis"), 1.5, "x"),
            ("NEXTVAL prepared / Redis INCR always", ratio("nextval_p", "redis"), 1.5, "x"),
            ("NEXTVAL text / PostgreSQL nextval", ratio("nextval", "pg"), 2.5, "x"),
            ("NEXTVAL prepared / PostgreSQL nextval", ratio("nextval_p", "pg"), 2.5, "x"),
            ("Flickr / MariaDB no-write floor", ratio("flickr", "floor"), 1.5, "x"),
            ("Flickr / MariaDB MyISAM", ratio("flickr", "myisam"), 3, "x"),
            (f"Flickr p99 at {FLICKR_P99_CONNECTIONS} connections (ms, < 1)", med["flickr16"][1],
             1, "<"),
            ("hi-lo blocks of 1,000 (M IDs/s, >= 50)",
             med["hilo"][0] / 1e6 if med["hilo"][0] else None, 50, ">="),
        ]
        print()
        print("goals (issue 13), ratios of medians of this run")
        for name, value, goal, kind in goals:
            if value is None:
                print(f"  {name:50} {'-':>7}   not measured")
                continue
            met = value < goal if kind == "<" else value >= goal
            shown = f"{value:6.2f}x" if kind == "x" else f"{value:7.2f}"
            want = f"goal >= {goal:g}x" if kind == "x" else (
                f"goal < {goal:g}" if kind == "<" else f"goal >= {goal:g}")
            print(f"  {name:50} {shown:>7}   {want:12} {'met' if met else 'missed'}")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                # PostgreSQL's fast shutdown is SIGINT; its SIGTERM waits for clients to leave.
                p.send_signal(signal.SIGINT if p in fast_stop else signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if os.path.exists(os.path.join(WORK, "pids")):
            os.remove(os.path.join(WORK, "pids"))


if __name__ == "__main__":
    main()
