#!/usr/bin/env python3
"""Syncs per ceiling raise, with and without `durability.external_mark`: ticketd runs under
`strace -f -c -e trace=fdatasync,fsync`, serves TICKETS tickets over HTTP in blocks of BLOCK
with cache 1000, and stops; the table prints the sync calls of each run, the ceiling raises
(tickets / cache) and the extra syncs per raise that the external mark costs.
Usage: syncs_bench.py [tickets] [block]"""
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysql_bench as mb  # noqa: E402

CACHE = 1000


def run(work, tickets, block, external):
    """Serves `tickets` tickets and returns {syscall: calls} from strace's summary."""
    port, http_port = mb.free_port(), mb.free_port()
    cfg = os.path.join(work, "ticketd.yaml")
    mb.write_bench_config(cfg, f"{work}/data", port, http_port, cache=CACHE)
    if external:
        with open(cfg, "a") as f:
            f.write(f"durability: {{ external_mark: {work}/external.mark }}\n")
    summary = os.path.join(work, "strace.txt")
    proc = subprocess.Popen(["strace", "-f", "-c", "-e", "trace=fdatasync,fsync", "-o", summary,
                             os.path.join(mb.ROOT, "build", "ticketd"), "--config", cfg],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mb.wait_port(http_port, proc)
    conn = http.client.HTTPConnection("127.0.0.1", http_port)
    served = 0
    while served < tickets:
        conn.request("POST", "/v1/sequences/Tickets64/next", json.dumps({"count": block}),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"next answered {r.status}: {body[:200]!r}")
        served += len(json.loads(body)["ids"])
    conn.close()
    subprocess.run(["pkill", "-TERM", "-f", f"^{mb.ROOT}/build/ticketd --config {cfg}$"])
    proc.wait(timeout=60)
    with open(summary) as f:
        return {m.group(2): int(m.group(1))
                for m in re.finditer(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$",
                                     f.read(), re.M)}


def main():
    tickets = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    block = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    raises = tickets // CACHE
    rows = []
    for external in (False, True):
        with tempfile.TemporaryDirectory(prefix="ticketd-syncs-") as work:
            calls = run(work, tickets, block, external)
        rows.append((external, calls.get("fdatasync", 0), calls.get("fsync", 0)))
    print(f"{tickets} tickets in blocks of {block}, cache {CACHE}: {raises} ceiling raises")
    print(f"{'external_mark':<14} {'fdatasync':>10} {'fsync':>6}")
    for external, fdatasync, fsync in rows:
        print(f"{'yes' if external else 'no':<14} {fdatasync:>10} {fsync:>6}")
    extra = (rows[1][1] + rows[1][2]) - (rows[0][1] + rows[0][2])
    print(f"extra syncs per ceiling raise with the external mark: {extra / raises:.2f}")


if __name__ == "__main__":
    main()
