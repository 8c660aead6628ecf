#!/usr/bin/python3
"""A/B of two ticketd binaries on the hot paths: each binary serves on its own data dir and
ports, and every workload runs on A then B, round after round (interleaved, so the machine's
noise falls on both alike), at 64 connections. One table: medians per binary and B/A.
Usage: ab_bench.py BINARY_A BINARY_B [seconds per run] [rounds] — see bench/ab.sh.
AB_ONLY=TEXT runs only the workloads whose name contains TEXT (case-insensitive)."""
import os
import statistics
import subprocess
import sys
import tempfile

sys.argv, _args = sys.argv[:1], sys.argv[1:]  # mysql_bench reads sys.argv[1] on import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysql_bench as mb  # noqa: E402

BINARIES = _args[0:2]
SECONDS = int(_args[2]) if len(_args) > 2 else 10
ROUNDS = int(_args[3]) if len(_args) > 3 else 3
CONNECTIONS = 64
run_seconds = SECONDS  # 2 during the warm-up


def start(binary, work):
    port, http_port = mb.free_port(), mb.free_port()
    cfg = os.path.join(work, "ticketd.yaml")
    mb.write_bench_config(cfg, f"{work}/data", port, http_port)
    proc = subprocess.Popen([binary, "--config", cfg], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "ticketd.log"), "w"))
    mb.wait_port(port, proc)
    mb.wait_port(http_port, proc)
    return proc, port, http_port


def wrk(port, path, body, ids_per_request):
    ids, _p99, note = mb.wrk(port, path, body, ids_per_request, run_seconds, CONNECTIONS)
    if ids is None or note:
        raise SystemExit(f"wrk {path}: {note}")
    return ids


def sysbench(port, mode):
    mb.SECONDS = run_seconds
    tps, _p99, note = mb.sysbench(port, CONNECTIONS, mode, "Tickets64")
    if tps is None:
        raise SystemExit(f"sysbench {mode} failed: {note}")
    return tps


WORKLOADS = [
    ("MySQL SELECT NEXTVAL, text (IDs/s)", lambda s: sysbench(s[1], "nextval")),
    ("MySQL SELECT NEXTVAL, prepared (IDs/s)", lambda s: sysbench(s[1], "nextval_prepared")),
    ("MySQL Flickr REPLACE + LAST_INSERT_ID (IDs/s)", lambda s: sysbench(s[1], "text")),
    ("HTTP POST .../next (IDs/s)", lambda s: wrk(s[2], "/v1/sequences/Tickets64/next", "{}", 1)),
    ("HTTP blocks of 1,000 (M IDs/s)",
     lambda s: wrk(s[2], "/v1/sequences/Tickets64/blocks", '{"size":1000}', 1000) / 1e6),
]
if os.environ.get("AB_ONLY"):
    WORKLOADS = [w for w in WORKLOADS if os.environ["AB_ONLY"].lower() in w[0].lower()]


def main():
    global run_seconds
    if len(BINARIES) != 2:
        raise SystemExit(__doc__)
    if not WORKLOADS:
        raise SystemExit(f"AB_ONLY={os.environ['AB_ONLY']!r} matches no workload")
    with tempfile.TemporaryDirectory(prefix="ticketd-ab.") as work:
        servers = []
        try:
            for i, binary in enumerate(BINARIES):
                os.mkdir(os.path.join(work, str(i)))
                servers.append(start(binary, os.path.join(work, str(i))))
            results = {name: ([], []) for name, _ in WORKLOADS}
            run_seconds = 2
            for name, run in WORKLOADS:  # warm-up: one short pass each
                for s in servers:
                    run(s)
            run_seconds = SECONDS
            for r in range(ROUNDS):
                for name, run in WORKLOADS:
                    for i, s in enumerate(servers):
                        results[name][i].append(run(s))
                print(f"round {r + 1}/{ROUNDS} done", flush=True)
        finally:
            for proc, _, _ in servers:
                proc.terminate()
                proc.wait()
    print(f"\nA = {BINARIES[0]}\nB = {BINARIES[1]}")
    print(f"{CONNECTIONS} connections, {ROUNDS} rounds x {SECONDS} s, medians (each round: A, B)")
    print(f"{'workload':48} {'A':>12} {'B':>12} {'B/A':>6}")
    for name, _ in WORKLOADS:
        a, b = (statistics.median(v) for v in results[name])
        fmt = (lambda x: f"{x:12.1f}") if "M IDs" in name else (lambda x: f"{x:12,.0f}")
        print(f"{name:48} {fmt(a)} {fmt(b)} {b / a:6.2f}")


if __name__ == "__main__":
    main()
