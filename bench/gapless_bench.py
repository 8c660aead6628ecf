#!/usr/bin/python3
"""Drives bench/gapless.sh: one MariaDB and one ticketd, bench/sysbench/gapless.lua against each
at 1, 16 and 64 clients, one table of commits/s, p99 and (ticketd) synced writes per number."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysql_bench as mb  # noqa: E402

LUA = os.path.join(mb.ROOT, "bench", "sysbench", "gapless.lua")
SECONDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
THREADS = (1, 16, 64)


def start_ticketd(tmp):
    port, http_port = mb.free_port(), mb.free_port()
    cfg = os.path.join(tmp, "ticketd.yaml")
    with open(cfg, "w") as f:
        f.write(f"""data_dir: {tmp}/ticketd
mysql:
  listen: 127.0.0.1:{port}
  users:
    - {{ name: bench, password: bench }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Invoices, kind: gapless, order: relaxed }}
  - {{ name: StrictInvoices, kind: gapless, order: strict, strict_wait_ms: 60000 }}
""")
    proc = subprocess.Popen([os.path.join(mb.ROOT, "build", "ticketd"), "--config", cfg],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mb.wait_port(port, proc)
    return proc, port, http_port


def metric(http_port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics").read().decode()
    m = re.search(rf"^{name}(?:{{[^}}]*}})? ([\d.e+]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def sysbench(port, threads, target, table):
    r = subprocess.run(
        mb.sysbench_argv(LUA, port, f"--threads={threads}", f"--time={SECONDS}", "--percentile=99",
                         f"--target={target}", f"--table={table}",
                         "--mysql-ignore-errors=1213,1205"),
        capture_output=True, text=True)
    out = r.stdout + r.stderr
    tps = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
    p99 = re.search(r"99th percentile:\s+([\d.]+)", out)
    if r.returncode != 0 or not tps:
        return None, None, None, (out.strip().splitlines() or ["failed"])[-1]
    return int(tps.group(1)), float(tps.group(2)), float(p99.group(1)), ""


def main():
    tmp = tempfile.mkdtemp(prefix="ticketd-gapless-bench-")
    procs = []
    try:
        maria, mport = mb.start_mariadb(tmp)
        procs.append(maria)
        subprocess.run(["mariadb", f"--socket={tmp}/mariadb.sock", "-uroot", "tickets"],
                       input="CREATE TABLE counters (name varchar(16) PRIMARY KEY, "
                             "value bigint NOT NULL) ENGINE=InnoDB;"
                             "INSERT INTO counters VALUES ('inv', 1);",
                       text=True, check=True)
        ticketd, tport, hport = start_ticketd(tmp)
        procs.append(ticketd)
        runs = [("ticketd gapless relaxed", tport, "ticketd", "Invoices"),
                ("ticketd gapless strict", tport, "ticketd", "StrictInvoices"),
                ("MariaDB FOR UPDATE (flush=1)", mport, "mariadb", "counters")]
        print(f"sysbench gapless.lua, {SECONDS}s per run, 2-core machine shared with sysbench")
        print(f"{'target':32} {'clients':>7} {'commits/s':>10} {'p99 ms':>8} {'syncs/number':>13}")
        results = {}
        for threads in THREADS:
            for name, port, target, table in runs:
                w0 = metric(hport, "ticketd_durable_writes_total") if target == "ticketd" else 0
                n, tps, p99, note = sysbench(port, threads, target, table)
                syncs = ""
                if target == "ticketd" and n:
                    w1 = metric(hport, "ticketd_durable_writes_total")
                    syncs = f"{(w1 - w0) / n:13.3f}"
                results[(name, threads)] = (tps, p99)
                tps_s = f"{tps:10.0f}" if tps else f"{'-':>10}"
                p99_s = f"{p99:8.2f}" if p99 is not None else f"{'-':>8}"
                print(f"{name:32} {threads:7d} {tps_s} {p99_s} {syncs:>13} {note}", flush=True)
        print()
        print("ratios (same run):")
        for threads in THREADS:
            base = results[("MariaDB FOR UPDATE (flush=1)", threads)][0]
            for name in ("ticketd gapless relaxed", "ticketd gapless strict"):
                t = results[(name, threads)][0]
                if t and base:
                    print(f"  {threads:2d} clients: {name} / MariaDB: {t / base:6.2f}x")
        r16 = results[("ticketd gapless relaxed", 16)][0] or 0
        m16 = results[("MariaDB FOR UPDATE (flush=1)", 16)][0] or 1
        print()
        print(f"goal: relaxed at 16 clients >= 5x MariaDB: {r16 / m16:5.2f}x  "
              f"{'met' if r16 >= 5 * m16 else 'NOT met'}")
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
