#!/usr/bin/python3
"""Drives bench/cpu_split.sh: where the CPU of a MySQL round trip goes on this box. Starts a
private MariaDB and a Release ticketd, runs sysbench (bench/sysbench/tickets.lua) against each
and reads /proc/<pid>/stat of the server and of sysbench over the middle of every run: user and
system CPU per event (µs) on both sides, and context switches per event machine-wide. When the
two cores are full, IDs/s is 2 cores / (server + client) µs per event, so these say whether a
ratio is bounded by the server or by the client it shares the cores with.
Usage: cpu_split_bench.py [seconds] [threads ...]"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysql_bench as mb  # noqa: E402

SECONDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
THREADS = [int(t) for t in sys.argv[2:]] or [64, 16]
TICKS = os.sysconf("SC_CLK_TCK")
SETTLE = 1.0  # seconds left out at each end of a run (login, ramp-up, shutdown)


def cpu_ticks(pid):
    """(user, system) clock ticks of a process, all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def context_switches():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return 0


def run(server_pid, port, threads, mode):
    sb = subprocess.Popen(
        mb.sysbench_argv(mb.LUA, port, f"--threads={threads}", f"--time={SECONDS}",
                         f"--mode={mode}", "--table=Tickets64", "--report-interval=1"),
        stdout=subprocess.PIPE, text=True)
    time.sleep(SETTLE)
    s0, c0, x0, t0 = cpu_ticks(server_pid), cpu_ticks(sb.pid), context_switches(), time.time()
    time.sleep(SECONDS - 2 * SETTLE)
    s1, c1, x1, t1 = cpu_ticks(server_pid), cpu_ticks(sb.pid), context_switches(), time.time()
    out = sb.communicate()[0]
    # The rate over the measured window, from sysbench's per-second reports inside it.
    rates = [float(m.group(2)) for m in re.finditer(r"\[ (\d+)s \].*?tps: ([\d.]+)", out)
             if SETTLE < int(m.group(1)) <= SECONDS - SETTLE]
    if sb.returncode != 0 or not rates:
        raise SystemExit(f"sysbench failed: {out.strip()[-300:]}")
    events = sum(rates) / len(rates) * (t1 - t0)

    def per_event(a, b):
        return (b - a) / TICKS / events * 1e6

    return {
        "rate": events / (t1 - t0),
        "server": (per_event(s0[0], s1[0]), per_event(s0[1], s1[1])),
        "client": (per_event(c0[0], c1[0]), per_event(c0[1], c1[1])),
        "ctxsw": (x1 - x0) / events,
    }


def main():
    tmp = tempfile.mkdtemp(prefix="ticketd-cpu-split-")
    procs = []
    try:
        mariadb, m_port = mb.start_mariadb(tmp)
        procs.append(mariadb)
        t_port, t_http = mb.free_port(), mb.free_port()
        cfg = os.path.join(tmp, "ticketd.yaml")
        mb.write_bench_config(cfg, os.path.join(tmp, "data"), t_port, t_http, cache=1000)
        ticketd = subprocess.Popen([os.path.join(mb.ROOT, "build", "ticketd"), "--config", cfg],
                                   stdout=open(os.path.join(tmp, "ticketd.log"), "w"),
                                   stderr=subprocess.STDOUT)
        procs.append(ticketd)
        mb.wait_port(t_port, ticketd)
        workloads = [
            ("MariaDB floor (SELECT 1 + LAST_INSERT_ID)", mariadb.pid, m_port, "floor"),
            ("ticketd floor (SELECT 1 + LAST_INSERT_ID)", ticketd.pid, t_port, "floor"),
            ("ticketd Flickr (REPLACE + LAST_INSERT_ID)", ticketd.pid, t_port, "text"),
            ("ticketd SELECT NEXTVAL", ticketd.pid, t_port, "nextval"),
        ]
        print(f"CPU per sysbench event (µs, /proc/<pid>/stat over the middle {SECONDS - 2 * SETTLE:.0f}"
              f" s of {SECONDS} s runs), {os.cpu_count()} cores shared by server and client")
        print(f"{'workload':44} {'conns':>5} {'events/s':>9}  {'server usr':>10} {'sys':>5}"
              f"  {'sysbench usr':>12} {'sys':>5}  {'total':>6}  ctxsw/event")
        for threads in THREADS:
            for name, pid, port, mode in workloads:
                r = run(pid, port, threads, mode)
                total = sum(r["server"]) + sum(r["client"])
                print(f"{name:44} {threads:5} {r['rate']:9.0f}  {r['server'][0]:10.1f} "
                      f"{r['server'][1]:5.1f}  {r['client'][0]:12.1f} {r['client'][1]:5.1f}  "
                      f"{total:6.1f}  {r['ctxsw']:6.2f}", flush=True)
        return 0
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
