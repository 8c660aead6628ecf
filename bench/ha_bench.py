#!/usr/bin/python3
"""Drives bench/ha.sh: a real three-member etcd cluster on loopback (tests/support/etcd_cluster.py)
with one ticketd on it, and one ticketd on RocksDB. Prints tickets/s (bench/sysbench/tickets.lua,
the Flickr recipe, cache 1000) at 64 connections on each engine with the ratio (medians of
ROUNDS interleaved runs), and gapless commits/s (bench/sysbench/gapless.lua) at 16 clients on
etcd with synced writes per commit."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
import gapless_bench as gb  # noqa: E402
import mysql_bench as mb  # noqa: E402

from etcd_cluster import EtcdCluster  # noqa: E402

SECONDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
TICKET_THREADS = 64
GAPLESS_THREADS = 16
mb.SECONDS = gb.SECONDS = SECONDS


def start_ticketd(tmp, name, storage):
    port, http_port = mb.free_port(), mb.free_port()
    cfg = os.path.join(tmp, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write(f"""{storage}
mysql:
  listen: 127.0.0.1:{port}
  max_connections: 1000
  users:
    - {{ name: bench, password: bench }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Tickets64, kind: ticket, cache: 1000 }}
  - {{ name: Invoices, kind: gapless, order: relaxed }}
""")
    proc = subprocess.Popen([os.path.join(mb.ROOT, "build", "ticketd"), "--config", cfg],
                            stdout=open(os.path.join(tmp, f"{name}.log"), "w"),
                            stderr=subprocess.STDOUT)
    mb.wait_port(port, proc)
    return proc, port, http_port


def wait_serving(http_port, timeout=30):
    """An etcd instance answers on its ports as a follower first; wait until it leads."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v1/cluster", timeout=1) as r:
                v = json.loads(r.read())
                if v["role"] == "leader" and v["serving"]:
                    return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise SystemExit("the etcd ticketd never became the serving leader")


def main():
    tmp = tempfile.mkdtemp(prefix="ticketd-ha-bench-")
    procs = []
    cluster = EtcdCluster().start()
    try:
        endpoints = ", ".join(cluster.endpoints)
        etcd_proc, etcd_port, etcd_http = start_ticketd(
            tmp, "etcd",
            f"storage:\n  engine: etcd\n  endpoints: [{endpoints}]\n  prefix: /ticketd/bench/\n"
            f"  leader_ttl_s: 5")
        procs.append(etcd_proc)
        wait_serving(etcd_http)
        rocks_proc, rocks_port, rocks_http = start_ticketd(tmp, "rocksdb",
                                                           f"data_dir: {tmp}/rocksdb")
        procs.append(rocks_proc)
        print(f"3-member etcd cluster on loopback, {SECONDS}s per run, {ROUNDS} rounds "
              f"(the engines alternate which runs first), machine shared with sysbench, etcd "
              f"and both ticketd")
        engines = {"etcd": (etcd_port, etcd_http), "rocksdb": (rocks_port, rocks_http)}
        tickets = {name: [] for name in engines}
        for rnd in range(ROUNDS):
            order = list(engines) if rnd % 2 == 0 else list(reversed(engines))
            for name in order:
                port, http = engines[name]
                w0 = gb.metric(http, "ticketd_durable_writes_total")
                s0 = gb.metric(http, "ticketd_durable_write_seconds_total")
                tps, p99, errs = mb.sysbench(port, TICKET_THREADS, "text", "Tickets64")
                if not tps:
                    print(f"tickets  {name:8} round {rnd + 1}: failed: {errs}")
                    return 1
                writes = gb.metric(http, "ticketd_durable_writes_total") - w0
                seconds = gb.metric(http, "ticketd_durable_write_seconds_total") - s0
                tickets[name].append(tps)
                # With cache 1000 a ceiling write starts when half the cache is left: one
                # slower than the time 500 tickets take stalls every connection.
                print(f"tickets  {name:8} round {rnd + 1}, {TICKET_THREADS} connections: "
                      f"{tps:10.0f} tickets/s  p99 {p99:6.2f} ms  {writes:.0f} synced writes, "
                      f"mean {1000 * seconds / max(writes, 1):.2f} ms", flush=True)
        medians = {name: statistics.median(v) for name, v in tickets.items()}
        ratio = medians["etcd"] / medians["rocksdb"]
        print(f"tickets  medians: etcd {medians['etcd']:.0f}, rocksdb {medians['rocksdb']:.0f}; "
              f"etcd / rocksdb: {ratio:5.2f}  (goal: >= 0.95: "
              f"{'met' if ratio >= 0.95 else 'NOT met'})")
        w0 = gb.metric(etcd_http, "ticketd_durable_writes_total")
        n, tps, p99, note = gb.sysbench(etcd_port, GAPLESS_THREADS, "ticketd", "Invoices")
        w1 = gb.metric(etcd_http, "ticketd_durable_writes_total")
        if not n:
            print(f"gapless  etcd     {GAPLESS_THREADS} clients: failed: {note}")
            return 1
        print(f"gapless  etcd     {GAPLESS_THREADS} clients: {tps:10.0f} commits/s  p99 {p99:6.2f} "
              f"ms  {(w1 - w0) / n:.3f} synced writes (etcd transactions) per commit "
              f"({n} commits, {w1 - w0:.0f} writes)")
        return 0
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        cluster.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
