#!/usr/bin/python3
"""Instructions per request inside ticketd, counted by callgrind (stable on a noisy machine).
For each hot path, starts the binary under valgrind with one I/O thread, sends a warm-up on one
connection, turns instrumentation on (callgrind_control -i on), sends N requests, turns it off,
and divides the instructions counted by N. Only ticketd is counted, not the client.
Usage: callgrind_bench.py [requests (default 5000)] [binary (default build/ticketd)]
With CALLGRIND_KEEP=DIR, each workload's callgrind output is kept there (callgrind.<n>.out) for
callgrind_annotate --inclusive=yes."""
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.argv, _args = sys.argv[:1], sys.argv[1:]  # mysql_bench reads sys.argv[1] on import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysql_bench as mb  # noqa: E402

REQUESTS = int(_args[0]) if _args else 5000
BINARY = _args[1] if len(_args) > 1 else os.path.join(mb.ROOT, "build", "ticketd")
WARM_UP = 100


def sysbench_events(port, mode, events):
    r = subprocess.run(
        mb.sysbench_argv(mb.LUA, port, "--threads=1", "--time=0", f"--events={events}",
                         f"--mode={mode}", "--table=Tickets64"), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"sysbench {mode} failed: {(r.stdout + r.stderr)[-300:]}")


def http_posts(port, path, body, n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for _ in range(n):
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        if r.status not in (200, 201):
            raise SystemExit(f"POST {path}: {r.status}")
    c.close()


WORKLOADS = [
    ("MySQL SELECT NEXTVAL(Tickets64), text", "mysql", "nextval"),
    ("MySQL SELECT NEXTVAL(Tickets64), prepared", "mysql", "nextval_prepared"),
    ("MySQL Flickr REPLACE + SELECT LAST_INSERT_ID()", "mysql", "text"),
    ("HTTP POST /v1/sequences/Tickets64/next", "http", ("/v1/sequences/Tickets64/next", b"{}")),
    ("HTTP POST .../blocks {size: 1000} (synced write)", "http",
     ("/v1/sequences/Tickets64/blocks", b'{"size":1000}')),
]


def measure(work, label, front, what):
    port, http_port = mb.free_port(), mb.free_port()
    data = os.path.join(work, "data")
    shutil.rmtree(data, ignore_errors=True)
    cfg = os.path.join(work, "ticketd.yaml")
    mb.write_bench_config(cfg, data, port, http_port, threads=1, cache=1000000)
    out = os.path.join(work, "callgrind.out")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             f"--callgrind-out-file={out}", BINARY, "--config", cfg],
                            stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "valgrind.log"), "w"))
    try:
        mb.wait_port(port, proc, timeout=120)
        mb.wait_port(http_port, proc, timeout=120)

        def run(n):
            if front == "mysql":
                sysbench_events(port, what, n)
            else:
                http_posts(http_port, what[0], what[1], n)

        run(WARM_UP)
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True,
                       capture_output=True)
        run(REQUESTS)
        subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True,
                       capture_output=True)
    finally:
        proc.terminate()
        proc.wait()
    keep = os.environ.get("CALLGRIND_KEEP")
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(out, os.path.join(keep, f"callgrind.{WORKLOADS.index((label, front, what))}.out"))
    summary = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True).stdout
    m = re.search(r"^\s*([\d,]+) \S*\s*PROGRAM TOTALS", summary, re.M)
    if not m:
        raise SystemExit("no totals from callgrind_annotate")
    return int(m.group(1).replace(",", "")) / REQUESTS


def main():
    with tempfile.TemporaryDirectory(prefix="ticketd-callgrind.") as work:
        print(f"instructions per request in {BINARY} (callgrind, one connection, one I/O thread, "
              f"{REQUESTS} requests after {WARM_UP})")
        for label, front, what in WORKLOADS:
            print(f"  {label:52} {measure(work, label, front, what):10,.0f}", flush=True)


if __name__ == "__main__":
    main()
