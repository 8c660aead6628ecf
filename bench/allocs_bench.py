#!/usr/bin/env python3
"""Heap allocations per request on ticketd's hot paths, counted in the server process by
bench/alloc_counter.cpp (LD_PRELOAD). Each workload runs twice on one connection, with a small
and a large number of requests, and the figure is the difference in allocations divided by the
difference in requests, so connection set-up (login, prepare) cancels out. An idle interval of
the same length is subtracted for the server's own timers. Usage: allocs_bench.py [requests] [ticketd threads]"""
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mysql_bench as mb  # noqa: E402

ROOT = mb.ROOT
PRELOAD = os.path.join(ROOT, "build", "bench", "liballoc_counter.so")
LUA = os.path.join(ROOT, "bench", "sysbench", "tickets.lua")


class Server:
    def __init__(self, work, threads):
        self.work = work
        self.count_file = os.path.join(work, "allocs")
        self.port, self.http_port = mb.free_port(), mb.free_port()
        cfg = os.path.join(work, "ticketd.yaml")
        mb.write_bench_config(cfg, f"{work}/ticketd", self.port, self.http_port, threads=threads,
                              cache=1000000)
        env = dict(os.environ, LD_PRELOAD=PRELOAD, ALLOC_COUNTER_FILE=self.count_file)
        self.proc = subprocess.Popen([os.path.join(ROOT, "build", "ticketd"), "--config", cfg],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mb.wait_port(self.port, self.proc)
        mb.wait_port(self.http_port, self.proc)

    def allocations(self):
        try:
            os.unlink(self.count_file)
        except FileNotFoundError:
            pass
        self.proc.send_signal(signal.SIGUSR2)
        for _ in range(500):
            try:
                with open(self.count_file) as f:
                    text = f.read()
                if text.endswith("\n"):
                    return int(text)
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        raise RuntimeError("the allocation counter did not answer (is it preloaded?)")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def sysbench(server, mode, events):
    r = subprocess.run(
        mb.sysbench_argv(LUA, server.port, "--threads=1", f"--events={events}", "--time=0",
                         f"--mode={mode}", "--table=Tickets64"), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"sysbench {mode}: {(r.stdout + r.stderr).strip()[-300:]}")


def http_post(server, requests, path, body, status):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port)
    for _ in range(requests):
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        res = conn.getresponse()
        res.read()
        if res.status != status:
            raise RuntimeError(f"HTTP POST {path} answered {res.status}")
    conn.close()


def http_next(server, requests):
    http_post(server, requests, "/v1/sequences/Tickets64/next", b"{}", 200)


def http_block(server, requests):
    """A hi-lo lease of 1,000 values: one synced commit each on one connection."""
    http_post(server, requests, "/v1/sequences/Tickets64/blocks", b'{"size":1000}', 201)


def per_request(server, run, small, large):
    """Allocations per request, set-up and idle timers taken out."""
    def measured(n):
        before = server.allocations()
        t0 = time.monotonic()
        run(n)
        seconds = time.monotonic() - t0
        return server.allocations() - before, seconds

    a_small, _ = measured(small)
    a_large, seconds = measured(large)
    idle_before = server.allocations()
    time.sleep(seconds)
    idle = server.allocations() - idle_before
    return (a_large - a_small - idle) / (large - small)


def main():
    large = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 0  # ticketd's threads: 0, one per core
    small = max(1, large // 10)
    if not os.path.exists(PRELOAD):
        sys.exit(f"{PRELOAD} is missing: build the bench targets (scripts/build build)")
    with tempfile.TemporaryDirectory(prefix="ticketd-allocs-") as work:
        server = Server(work, threads)
        try:
            # Warm up: the first tickets fill the cache and the parsed-statement cache.
            sysbench(server, "nextval", 100)
            http_next(server, 100)
            http_block(server, 100)
            rows = [
                # (name, run, share): `share` divides the request counts of slow rows.
                ("MySQL SELECT NEXTVAL(Tickets64), text",
                 lambda n: sysbench(server, "nextval", n), 1),
                ("MySQL SELECT NEXTVAL(Tickets64), prepared",
                 lambda n: sysbench(server, "nextval_prepared", n), 1),
                ("MySQL Flickr REPLACE + SELECT LAST_INSERT_ID() (per ticket)",
                 lambda n: sysbench(server, "text", n), 1),
                ("HTTP POST /v1/sequences/Tickets64/next",
                 lambda n: http_next(server, n), 1),
                # Each lease waits for its own sync on one connection: a tenth as many.
                ("HTTP POST /v1/sequences/Tickets64/blocks (lease of 1,000)",
                 lambda n: http_block(server, n), 10),
            ]
            print(f"heap allocations per request in ticketd ({small} and {large} requests, "
                  f"one connection, cached tickets, threads: {threads or 'one per core'})")
            for name, run, share in rows:
                n = per_request(server, run, max(1, small // share), max(2, large // share))
                print(f"  {name:<62} {round(n, 2) + 0.0:8.2f}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
