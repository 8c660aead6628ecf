#!/usr/bin/python3
"""Side-by-side comparison of ticketd's ID kinds under the same load (bench/compare.sh).

For each kind and front end: W client processes, one connection each, take IDs for D seconds.
The last row is the baseline without ticketd: UUIDv4s made client side by Python's
uuid.uuid4() in the same W processes (no server, no kind, no connection; its order and bytes
are what a table keyed by random UUIDs gets).
Printed per row: IDs/s, p50/p99 latency per ID, bytes per ID, the coordination it needs, the
fraction of out-of-order adjacent pairs when every client's IDs are merged by receive time, and
what a kill -9 + restart costs (values skipped, time until the first ID after the restart).

The clients are Python (PyMySQL, http.client) on the same two cores as ticketd: rows bounded by
a fsync (cache 1) measure the server, the others mostly measure the client. bench/mysql.sh and
bench/http.sh drive the server with sysbench and wrk for its own limits."""
import http.client
import json
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BINARY = os.path.join(ROOT, "build", "ticketd")
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 5
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
# Optional: only the rows whose kind name starts with one of these (comma-separated), e.g. "ULID".
ONLY = [k for k in (sys.argv[3] if len(sys.argv) > 3 else "").split(",") if k]
TEXT_BYTES = {"U7": 36, "UL": 26}  # canonical text of the text kinds
ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid_ms(ulid):
    ms = 0
    for c in ulid[:10]:
        ms = ms * 32 + ULID_ALPHABET.index(c)
    return ms

CONFIG = """data_dir: {data}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: bench, password: bench }}
http:
  listen: 127.0.0.1:{http_port}
snowflake:
  worker_id: {{ source: static, id: 1 }}
  clock: {{ policy: wait, max_backward_ms: 5 }}
sequences:
  - {{ name: T1, kind: ticket, cache: 1 }}
  - {{ name: T1000, kind: ticket, cache: 1000 }}
  - {{ name: Snowflake64, kind: snowflake }}
  - {{ name: U7, kind: uuidv7 }}
  - {{ name: UL, kind: ulid }}
"""

# name, front end ("client": made in the client process, no server), sequence, coordination
# needed, binary bytes per ID
KINDS = [
    ("ticket, cache 1", "mysql", "T1", "central server; 1 fsync per ID (group-committed)", 8),
    ("ticket, cache 1", "http", "T1", "central server; 1 fsync per ID (group-committed)", 8),
    ("ticket, cache 1000", "mysql", "T1000", "central server; 1 fsync per 1000 IDs", 8),
    ("ticket, cache 1000", "http", "T1000", "central server; 1 fsync per 1000 IDs", 8),
    ("hi-lo blocks of 1000", "http", "T1000", "1 call per 1000 IDs; client hands out", 8),
    ("Snowflake", "mysql", "Snowflake64", "unique worker ID + sane clock", 8),
    ("Snowflake", "http", "Snowflake64", "unique worker ID + sane clock", 8),
    ("UUIDv7", "mysql", "U7", "none (random bits)", 16),
    ("UUIDv7", "http", "U7", "none (random bits)", 16),
    ("ULID", "mysql", "UL", "none (random bits); a durable mark per server", 16),
    ("ULID", "http", "UL", "none (random bits); a durable mark per server", 16),
    ("UUIDv4 (baseline)", "client", None, "none: client-side uuid.uuid4(), no ticketd", 16),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, tmp):
        self.data = os.path.join(tmp, "data")
        self.mysql_port, self.http_port = free_port(), free_port()
        self.cfg = os.path.join(tmp, "ticketd.yaml")
        with open(self.cfg, "w") as f:
            f.write(CONFIG.format(data=self.data, mysql_port=self.mysql_port,
                                  http_port=self.http_port))
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([BINARY, "--config", self.cfg], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def wait_ready(self):
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"ticketd exited with {self.proc.returncode}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.mysql_port)) == 0:
                    return
            time.sleep(0.005)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


class Taker:
    """Takes one ID at a time from one sequence through one front end."""

    def __init__(self, server, frontend, sequence, hilo=False):
        self.frontend, self.sequence, self.hilo = frontend, sequence, hilo
        self.block = []
        self.wire_bytes = 0
        if frontend == "client":
            return
        if frontend == "mysql":
            import pymysql
            self.conn = pymysql.connect(host="127.0.0.1", port=server.mysql_port, user="bench",
                                        password="bench", database="tickets", autocommit=True)
            self.cur = self.conn.cursor()
        else:
            self.conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)

    def _post(self, path, body):
        self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        raw = r.read()
        if r.status not in (200, 201):
            raise RuntimeError(f"{path}: {r.status} {raw[:200]}")
        self.wire_bytes += len(raw)
        return json.loads(raw)

    def take(self):
        if self.frontend == "client":
            return str(uuid.uuid4())
        if self.frontend == "mysql":
            if self.sequence == "U7":
                self.cur.execute("SELECT UUID_V7()")
                return self.cur.fetchone()[0]
            if self.sequence == "UL":
                self.cur.execute("SELECT NEXTVAL(UL)")
                return self.cur.fetchone()[0]
            self.cur.execute(f"REPLACE INTO {self.sequence} (stub) VALUES ('a')")
            return self.cur.lastrowid
        if self.hilo:
            if not self.block:
                b = self._post(f"/v1/sequences/{self.sequence}/blocks",
                               '{"size":1000,"holder":"compare"}')
                first, step, count = int(b["first"]), int(b["step"]), int(b["count"])
                self.block = [first + i * step for i in range(count - 1, -1, -1)]
            return self.block.pop()
        ids = self._post(f"/v1/sequences/{self.sequence}/next", "{}")["ids"]
        return ids[0] if self.sequence in TEXT_BYTES else int(ids[0])


def worker(args):
    server, frontend, sequence, hilo, seconds, out = args
    t = Taker(server, frontend, sequence, hilo)
    lat, seen = [], []
    n = 0
    end = time.perf_counter() + seconds
    while True:
        t0 = time.perf_counter()
        if t0 >= end:
            break
        v = t.take()
        t1 = time.perf_counter()
        n += 1
        # hi-lo and client-side UUIDv4s come from memory at up to millions per second: keep
        # every 100th sample (so hi-lo's out-of-order figure compares IDs 100 apart within a
        # block, and across blocks; random UUIDs are out of order at any distance).
        if not (hilo or frontend == "client") or n % 100 == 0:
            lat.append(t1 - t0)
            seen.append((t1, v))
    out.put((n, lat, seen, t.wire_bytes))


def out_of_order(samples):
    merged = [v for _, v in sorted(samples, key=lambda s: s[0])]
    if len(merged) < 2:
        return 0.0
    bad = sum(1 for a, b in zip(merged, merged[1:]) if b < a)
    return bad / (len(merged) - 1)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def load(server, frontend, sequence, hilo):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=((server, frontend, sequence, hilo, SECONDS, q),))
             for _ in range(WORKERS)]
    for p in procs:
        p.start()
    results = [q.get() for _ in procs]
    for p in procs:
        p.join()
    n = sum(r[0] for r in results)
    lat = [x for r in results for x in r[1]]
    seen = [x for r in results for x in r[2]]
    wire = sum(r[3] for r in results)
    return n / SECONDS, percentile(lat, 0.5) * 1e3, percentile(lat, 0.99) * 1e3, \
        out_of_order(seen), (wire / n if n and frontend == "http" else None)


def restart_cost(server, frontend, sequence, hilo):
    """Takes IDs, kill -9 mid-stream, restarts, and measures the values skipped between the
    last ID before and the first after, and the time from restart to that first ID."""
    t = Taker(server, frontend, sequence, hilo)
    last = None
    end = time.time() + 0.5
    while time.time() < end:
        last = t.take()
    server.kill9()
    t0 = time.perf_counter()
    server.start()
    server.wait_ready()
    if hilo:
        # The client survives the server's crash: its block keeps serving at once; the cost
        # shows at the next block, which starts above the server's lost cache.
        first = t.take()
        elapsed_ms = (time.perf_counter() - t0) * 1e3
        last = first
        while t.block:
            last = t.take()
        t.conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
        return f"{t.take() - last - 1} values", elapsed_ms
    while True:
        try:
            first = Taker(server, frontend, sequence, hilo).take()
            break
        except Exception:  # noqa: BLE001 - not serving yet (Snowflake restart wait)
            time.sleep(0.001)
    elapsed_ms = (time.perf_counter() - t0) * 1e3
    if sequence == "UL":
        return f"{ulid_ms(first) - ulid_ms(last)} ms of IDs", elapsed_ms
    if isinstance(first, str):
        return "n/a (random)", elapsed_ms
    if sequence == "Snowflake64":
        gap_ms = (first >> 22) - (last >> 22)
        return f"{gap_ms} ms of IDs", elapsed_ms
    return f"{first - last - 1} values", elapsed_ms


def main():
    tmp = tempfile.mkdtemp(prefix="ticketd-compare-")
    server = Server(tmp)
    try:
        server.start()
        server.wait_ready()
        print(f"bench/compare.py: {WORKERS} client processes x {SECONDS:g} s per row, "
              f"Python clients on the same 2 cores as ticketd")
        header = (f"{'kind':22} {'via':6} {'IDs/s':>9} {'p50 ms':>7} {'p99 ms':>7} "
                  f"{'bytes/ID':>12} {'out-of-order':>12} {'kill -9: skipped':>18} "
                  f"{'first ID':>9}  coordination")
        print(header)
        for name, frontend, sequence, coordination, binary_bytes in KINDS:
            if ONLY and not any(name.startswith(k) for k in ONLY):
                continue
            hilo = name.startswith("hi-lo")
            # After the previous row's kill -9 a Snowflake or ULID sequence waits out its restart
            # mark; that cost belongs to the restart column, not to this row.
            while frontend != "client":
                try:
                    Taker(server, frontend, sequence, hilo).take()
                    break
                except Exception:  # noqa: BLE001
                    time.sleep(0.01)
            rate, p50, p99, ooo, wire = load(server, frontend, sequence, hilo)
            if frontend == "client":
                skipped, first = "n/a (no server)", "n/a"
            else:
                skipped, first_ms = restart_cost(server, frontend, sequence, hilo)
                first = f"{first_ms:.0f}ms"
            text_bytes = TEXT_BYTES.get(sequence, 36 if binary_bytes == 16 else 19)
            size = f"{binary_bytes}/{text_bytes}" + (f"/{wire:.0f}" if wire else "")
            print(f"{name:22} {frontend:6} {rate:9.0f} {p50:7.3f} {p99:7.3f} {size:>12} "
                  f"{ooo:12.4f} {skipped:>18} {first:>9}  {coordination}", flush=True)
        print()
        print("bytes/ID: binary / text / HTTP response bytes per ID (HTTP rows).")
        print("out-of-order: fraction of adjacent pairs that decrease when all clients' IDs are")
        print("merged by receive time. kill -9: values skipped between the last ID before the kill")
        print("and the first after the restart; first ID: restart to first ID, process start included.")
        print("UUIDv4 (baseline): made client side by Python's uuid.uuid4() in the same processes,")
        print("no ticketd involved; latency is one uuid4() call; out-of-order sampled (every 100th).")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
