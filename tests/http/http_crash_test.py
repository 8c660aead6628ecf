"""kill -9 during hi-lo block leasing, restarted on the same data dir, at least 20 cycles.

In each cycle 8 HTTP clients lease blocks (sizes below, at and above the sequence's cache) and
take a few single tickets. A value counts only once its response was read in full: a 201 for a
block, a 200 for singles. When the cycle has seen a random number of acknowledgements, with the
other requests still in flight, ticketd is killed with SIGKILL and started again. Across all
cycles:
- every acknowledged value (every value of every block, every single) is distinct;
- after each restart every newly acknowledged value is above everything acknowledged before;
- every lease acknowledged before a kill is in the lease listing after the restart (it was
  durable before its 201).
"""
import http.client
import json
import os
import random
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

CYCLES = 40
CLIENTS = 8
SEQUENCE = "Tickets64"


def request(conn, method, path, body=None):
    headers = {}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read().decode())


class Cycle:
    """The acknowledgements of one run of ticketd, shared by its client threads."""

    def __init__(self, kill_after):
        self.kill_after = kill_after
        self.cond = threading.Condition()
        self.blocks = []   # lease JSON, in no particular order
        self.singles = []  # ints
        self.per_client = [[] for _ in range(CLIENTS)]  # (lo, hi) in receipt order
        self.acks = 0
        self.killed = False
        self.unexpected = []

    def ack(self, client, lo, hi, block=None, singles=()):
        with self.cond:
            if block is not None:
                self.blocks.append(block)
            self.singles.extend(singles)
            self.per_client[client].append((lo, hi))
            self.acks += 1
            self.cond.notify_all()

    def fail(self, what):
        with self.cond:
            self.unexpected.append(what)
            self.cond.notify_all()

    def broken(self, client, error):
        """A connection broke: expected once the kill was sent, a server fault before."""
        with self.cond:
            if not self.killed:
                self.unexpected.append(f"client {client} before the kill: {error!r}")
                self.cond.notify_all()

    def kill(self, ticketd):
        with self.cond:
            self.killed = True
        ticketd.kill9()

    def wait_for_kill_point(self, timeout=60):
        with self.cond:
            if not self.cond.wait_for(lambda: self.acks >= self.kill_after or self.unexpected,
                                      timeout):
                raise AssertionError(f"only {self.acks} acknowledgements in {timeout}s")


def client_loop(port, cycle, i, seed):
    """Leases and takes tickets until the connection breaks (the kill). Anything but a clean
    answer, or a connection that breaks before the kill, is recorded as unexpected."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while True:
            try:
                if rng.random() < 0.8:
                    size = rng.choice([1, rng.randint(2, 999), 1000, rng.randint(1001, 20000)])
                    status, body = request(conn, "POST", f"/v1/sequences/{SEQUENCE}/blocks",
                                           {"size": size, "holder": f"crash-{i}"})
                    if status != 201 or body["count"] != size or body["step"] != 1:
                        cycle.fail(f"lease of {size}: {status} {body}")
                        return
                    first, last = int(body["first"]), int(body["last"])
                    if last != first + size - 1:
                        cycle.fail(f"lease of {size}: {body}")
                        return
                    cycle.ack(i, first, last, block=body)
                else:
                    count = rng.randint(1, 20)
                    status, body = request(conn, "POST", f"/v1/sequences/{SEQUENCE}/next",
                                           {"count": count})
                    if status != 200 or len(body["ids"]) != count:
                        cycle.fail(f"next of {count}: {status} {body}")
                        return
                    ids = [int(v) for v in body["ids"]]
                    cycle.ack(i, ids[0], ids[-1], singles=ids)
            except (http.client.HTTPException, OSError) as e:
                cycle.broken(i, e)  # killed mid-request: nothing acknowledged
                return
            except Exception as e:  # a malformed answer
                cycle.fail(f"client {i}: {e!r}")
                return
    finally:
        conn.close()


class KillDuringLeasing(unittest.TestCase):
    def test_acknowledged_blocks_never_overlap_anything_after_restart(self):
        rng = random.Random(os.environ.get("TICKETD_CRASH_SEED", "http-crash"))
        d = Ticketd().start()
        cycles = []
        try:
            for n in range(CYCLES):
                cycle = Cycle(kill_after=rng.randint(1, 60))
                threads = [threading.Thread(target=client_loop,
                                            args=(d.http_port, cycle, i, rng.random()))
                           for i in range(CLIENTS)]
                for t in threads:
                    t.start()
                cycle.wait_for_kill_point()
                cycle.kill(d)  # the other clients are mid-request
                for t in threads:
                    t.join()
                self.assertEqual(cycle.unexpected, [], f"cycle {n}")
                cycles.append(cycle)
                d.start()  # same data dir, same ports
                self.check_leases_listed(d, cycle, n)
        finally:
            d.cleanup()

        intervals = []
        acknowledged_max = 0
        for n, cycle in enumerate(cycles):
            values = [(int(b["first"]), int(b["last"])) for b in cycle.blocks]
            values += [(v, v) for v in cycle.singles]
            self.assertGreater(len(values), 0)
            lowest = min(lo for lo, _ in values)
            self.assertGreater(lowest, acknowledged_max,
                               f"cycle {n} issued {lowest}, not above {acknowledged_max} "
                               f"acknowledged before the kill")
            acknowledged_max = max(hi for _, hi in values)
            for i, got in enumerate(cycle.per_client):
                for (lo1, hi1), (lo2, hi2) in zip(got, got[1:]):
                    self.assertGreater(lo2, hi1, f"client {i} went backwards in cycle {n}")
            intervals += values
        intervals.sort()
        for a, b in zip(intervals, intervals[1:]):
            self.assertGreater(b[0], a[1], f"{a} and {b} overlap")
        blocks = sum(len(c.blocks) for c in cycles)
        self.assertGreaterEqual(blocks, CYCLES)
        print(f"\n{blocks} acknowledged blocks and {sum(len(c.singles) for c in cycles)} singles "
              f"over {CYCLES} kill -9 cycles, all disjoint", flush=True)

    def check_leases_listed(self, d, cycle, n):
        """Every lease acknowledged before the kill survived it. The listing is newest first;
        the previous run's leases are the newest, plus at most one unacknowledged lease per
        client that became durable just before the kill."""
        conn = http.client.HTTPConnection("127.0.0.1", d.http_port, timeout=30)
        try:
            limit = len(cycle.blocks) + CLIENTS
            self.assertLessEqual(limit, 1000)
            status, listing = request(conn, "GET",
                                      f"/v1/sequences/{SEQUENCE}/blocks?limit={limit}")
            self.assertEqual(status, 200, listing)
            listed = {lease["lease_id"]: lease for lease in listing["leases"]}
            for block in cycle.blocks:
                self.assertEqual(listed.get(block["lease_id"]), block,
                                 f"lease acknowledged before kill {n} is missing or changed")
        finally:
            conn.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
