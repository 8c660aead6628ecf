#!/usr/bin/python3
"""Drives bench/mysql.sh: starts MariaDB (temporary data dir, loopback, binlog off) and ticketd,
runs bench/sysbench/tickets.lua against each at 1, 16 and 64 threads, and prints one table."""
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LUA = os.path.join(ROOT, "bench", "sysbench", "tickets.lua")
SECONDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
THREADS = (1, 16, 64)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit("server did not start")


def start_mariadb(tmp):
    data = os.path.join(tmp, "mariadb")
    port = free_port()
    subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, capture_output=True)
    proc = subprocess.Popen(
        ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={data}", "--user=root",
         f"--port={port}", "--bind-address=127.0.0.1", f"--socket={tmp}/mariadb.sock",
         "--skip-log-bin", "--innodb-flush-log-at-trx-commit=1", "--max-connections=500",
         "--innodb-buffer-pool-size=256M", "--skip-name-resolve"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "mariadb.err"), "w"))
    wait_port(port, proc)
    setup = """
CREATE DATABASE tickets;
CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'bench';
GRANT ALL ON tickets.* TO 'bench'@'127.0.0.1';
USE tickets;
CREATE TABLE Tickets64 (id bigint(20) unsigned NOT NULL auto_increment,
  stub char(1) NOT NULL default '', PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB;
CREATE TABLE Tickets64m (id bigint(20) unsigned NOT NULL auto_increment,
  stub char(1) NOT NULL default '', PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=MyISAM;
"""
    subprocess.run(["mariadb", f"--socket={tmp}/mariadb.sock", "-uroot"], input=setup, text=True,
                   check=True)
    return proc, port


def start_ticketd(tmp):
    port = free_port()
    cfg = os.path.join(tmp, "ticketd.yaml")
    with open(cfg, "w") as f:
        f.write(f"""data_dir: {tmp}/ticketd
mysql:
  listen: 127.0.0.1:{port}
  max_connections: 11000
  users:
    - {{ name: bench, password: bench }}
http:
  listen: 127.0.0.1:{free_port()}
sequences:
  - {{ name: Tickets64, kind: ticket }}
""")
    proc = subprocess.Popen([os.path.join(ROOT, "build", "ticketd"), "--config", cfg],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    return proc, port


def sysbench_argv(lua, port, *options):
    """The sysbench command line every benchmark runs: LUA against ticketd or MariaDB on
    127.0.0.1:PORT as bench/bench in database tickets, then OPTIONS, then `run`."""
    return ["sysbench", lua, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={port}",
            "--mysql-user=bench", "--mysql-password=bench", "--mysql-db=tickets", *options, "run"]


def sysbench(port, threads, mode, table):
    r = subprocess.run(
        sysbench_argv(LUA, port, f"--threads={threads}", f"--time={SECONDS}", "--percentile=99",
                      f"--mode={mode}", f"--table={table}", "--mysql-ignore-errors=1213,1205"),
        capture_output=True, text=True)
    out = r.stdout + r.stderr
    tps = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out)
    p99 = re.search(r"99th percentile:\s+([\d.]+)", out)
    errs = re.search(r"ignored errors:\s+(\d+)", out)
    if r.returncode != 0 or not tps:
        return None, None, out.strip().splitlines()[-1] if out.strip() else "failed"
    return float(tps.group(1)), float(p99.group(1)), int(errs.group(1)) if errs else 0


WRK_LUA = os.path.join(ROOT, "bench", "wrk", "post_json.lua")


def write_bench_config(path, data_dir, port, http_port, threads=None, cache=None):
    """The benchmarks' ticketd config: loopback listeners, user bench/bench, one ticket sequence
    Tickets64 (`cache` values per synced write when given), log_level warn, mode 0600."""
    with open(path, "w") as f:
        f.write(f"data_dir: {data_dir}\nlog_level: warn\n")
        if threads is not None:
            f.write(f"threads: {threads}\n")
        f.write(f"""mysql:
  listen: 127.0.0.1:{port}
  users:
    - {{ name: bench, password: bench }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Tickets64, kind: ticket{'' if cache is None else f', cache: {cache}'} }}
""")
    os.chmod(path, 0o600)


def wrk(port, path, body, ids_per_request, seconds, connections=64, threads=2):
    """wrk with bench/wrk/post_json.lua: (IDs/s, p99 ms, note); (None, None, why) on failure.
    The note counts non-2xx answers and socket errors."""
    r = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s",
         WRK_LUA, f"http://127.0.0.1:{port}", "--", path, body], capture_output=True, text=True)
    m = re.search(r"^RESULT (.*)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        return None, None, (r.stdout + r.stderr).strip()[-200:] or "wrk failed"
    v = {k: float(x) for k, x in (f.split("=") for f in m.group(1).split())}
    bad = v["non2xx"] + v["socket_errors"]
    note = f"{bad:.0f} non-2xx/socket errors" if bad else ""
    return v["rps"] * ids_per_request, v["p99_us"] / 1000, note


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def idle_connections(port, pid, n=10000):
    """Opens n authenticated, idle MySQL connections and returns ticketd's RSS before/after."""
    import pymysql
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    before = rss_kib(pid)
    conns = []
    for _ in range(n):
        conns.append(pymysql.connect(host="127.0.0.1", port=port, user="bench",
                                     password="bench", database="tickets"))
    after = rss_kib(pid)
    ok = conns[-1].cursor().execute("SELECT 1") == 1
    for c in conns:
        c.close()
    return before, after, ok


def main():
    tmp = tempfile.mkdtemp(prefix="ticketd-bench-")
    procs = []
    try:
        maria, mport = start_mariadb(tmp)
        procs.append(maria)
        ticketd, tport = start_ticketd(tmp)
        procs.append(ticketd)
        runs = [
            ("ticketd text (durable)", tport, "text", "Tickets64"),
            ("ticketd prepared (durable)", tport, "prepared", "Tickets64"),
            ("MariaDB InnoDB text (flush=1)", mport, "text", "Tickets64"),
            ("MariaDB InnoDB prepared", mport, "prepared", "Tickets64"),
            ("MariaDB MyISAM text", mport, "text", "Tickets64m"),
            ("MariaDB floor (SELECT 1 + LAST_INSERT_ID)", mport, "floor", "Tickets64"),
        ]
        results = {}
        print(f"sysbench tickets.lua, {SECONDS}s per run, 2-core machine shared with sysbench")
        print(f"{'target':44} {'threads':>7} {'tickets/s':>11} {'p99 ms':>8}  note")
        for threads in THREADS:
            for name, port, mode, table in runs:
                tps, p99, note = sysbench(port, threads, mode, table)
                results[(name, threads)] = (tps, p99)
                tps_s = f"{tps:11.0f}" if tps else f"{'-':>11}"
                p99_s = f"{p99:8.2f}" if p99 is not None else f"{'-':>8}"
                note_s = f"{note} deadlock/timeout errors ignored" if isinstance(note, int) and note else (
                    "" if isinstance(note, int) else note)
                print(f"{name:44} {threads:7d} {tps_s} {p99_s}  {note_s}", flush=True)
        print()
        print("ratios (same run):")
        for threads in THREADS:
            t = results[("ticketd text (durable)", threads)][0]
            tp = results[("ticketd prepared (durable)", threads)][0]
            for base in ("MariaDB InnoDB text (flush=1)", "MariaDB MyISAM text",
                         "MariaDB floor (SELECT 1 + LAST_INSERT_ID)"):
                b = results[(base, threads)][0]
                if t and b:
                    print(f"  {threads:2d} threads: ticketd text / {base}: {t / b:6.2f}x"
                          f"   (prepared: {tp / b:6.2f}x)" if tp else "")
        t64 = results[("ticketd text (durable)", 64)][0] or 0
        myisam = results[("MariaDB MyISAM text", 64)][0] or 1
        floor = results[("MariaDB floor (SELECT 1 + LAST_INSERT_ID)", 64)][0] or 1
        p99_16 = results[("ticketd text (durable)", 16)][1]
        print()
        print("goals:")
        print(f"  64 threads >= 3x MariaDB-MyISAM:        {t64 / myisam:5.2f}x  "
              f"{'met' if t64 >= 3 * myisam else 'NOT met'}")
        print(f"  64 threads >= 1.5x MariaDB floor:       {t64 / floor:5.2f}x  "
              f"{'met' if t64 >= 1.5 * floor else 'NOT met'}")
        print(f"  p99 < 1 ms at 16 threads:               {p99_16} ms  "
              f"{'met' if p99_16 is not None and p99_16 < 1 else 'NOT met'}")
        maria.terminate()
        maria.wait()
        procs.remove(maria)
        before, after, ok = idle_connections(tport, ticketd.pid)
        print(f"  10,000 idle connections: ticketd RSS {before / 1024:.0f} MB -> "
              f"{after / 1024:.0f} MB (goal < 200 MB: {'met' if after < 200 * 1024 else 'NOT met'})"
              f"{'' if ok else '  (last connection did not answer!)'}")
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
