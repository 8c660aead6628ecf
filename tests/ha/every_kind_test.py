"""Every kind on the etcd engine: Snowflake sequences and worker-ID pools on two ticketd
instances sharing a real three-member etcd cluster, the leader `kill -9`ed repeatedly (and once
handed over with SIGTERM) under load. No Snowflake ID may be acknowledged twice, a new leader's
first IDs must be above everything its predecessor acknowledged (both instances use the same
worker ID, so only the high-water mark keeps them apart), and no worker ID may be held by two
live holders at once (a holder holds from the grant until the last expiry the server confirmed).
"""
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from etcd_cluster import EtcdCluster  # noqa: E402
from ha_test import TTL_S, make_instance, wait_leader, wait_role  # noqa: E402

# Ticketd formats the config once more: braces doubled.
EXTRA = """  - {{ name: Flakes, kind: snowflake }}
  - {{ name: EventIds, kind: uuidv7 }}
  - {{ name: Ulids, kind: ulid }}
worker_pools:
  - {{ name: render, size: 4, min_ttl_s: 1, default_ttl_s: 3 }}
snowflake:
  worker_id: {{ source: static, id: 7 }}
"""
HOLDERS = 6       # more holders than worker IDs: the pool is contended
LEASE_TTL_S = 5
KILLS = 5


def call(port, method, path, body=None, timeout=1.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=json.dumps(body if body is not None else {}),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read()
        return resp.status, (json.loads(text) if text else None)
    finally:
        conn.close()


class SnowflakeClients:
    """Threads taking Snowflake IDs from whichever instance serves; (id, instance, time) kept."""

    def __init__(self, instances, n=4):
        self.instances = instances
        self.acked = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(n)]

    def run(self, i):
        which = i % 2
        while not self.stop.is_set():
            try:
                status, body = call(self.instances[which].http_port, "POST",
                                    "/v1/sequences/Flakes/next")
            except OSError:
                status, body = 0, None
            if status == 200:
                with self.lock:
                    self.acked.append((int(body["ids"][0]), which, time.time()))
            else:
                which = 1 - which
                time.sleep(0.01)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()


class Holder(threading.Thread):
    """Leases a worker ID and keeps it alive every second; when a keepalive is refused it
    takes a new one. Every period of holding is recorded as (worker_id, lease_id, granted_ms,
    confirmed expiry ms)."""

    def __init__(self, instances, name, periods, lock, stop):
        super().__init__(daemon=True)
        self.instances = instances
        self.name_ = name
        self.periods = periods
        self.lock = lock
        self.stop_event = stop
        self.which = 0
        self.errors = []

    def request(self, method, path, body=None):
        for _ in range(2):
            try:
                status, parsed = call(self.instances[self.which].http_port, method, path, body)
            except OSError:
                status, parsed = 0, None
            if status == 503 and parsed and parsed["error"]["code"] == "not_leader" or status == 0:
                self.which = 1 - self.which
                continue
            return status, parsed
        return status, parsed

    def run(self):
        lease = None
        while not self.stop_event.is_set():
            if lease is None:
                status, body = self.request("POST", "/v1/workers/render/leases",
                                            {"holder": self.name_, "ttl_s": LEASE_TTL_S})
                if status == 201:
                    granted = body["expires_at_ms"] - LEASE_TTL_S * 1000
                    lease = [body["worker_id"], body["lease_id"], granted, body["expires_at_ms"]]
                    with self.lock:
                        self.periods.append(lease)
                else:
                    time.sleep(0.2)
                    continue
            time.sleep(1.0)
            status, body = self.request(
                "POST", f"/v1/workers/render/leases/{lease[1]}/keepalive", {})
            if status == 200:
                with self.lock:
                    assert body["worker_id"] == lease[0], (body, lease)
                    lease[3] = max(lease[3], body["expires_at_ms"])
            elif status in (404, 409):
                lease = None  # expired or gone: the holder knows it holds nothing from now
            elif status not in (0, 503):
                self.errors.append((status, body))


def overlapping(periods):
    by_worker = {}
    for worker, lease_id, start, end in periods:
        by_worker.setdefault(worker, []).append((start, end, lease_id))
    bad = []
    for worker, spans in by_worker.items():
        spans.sort()
        for (s1, e1, l1), (s2, e2, l2) in zip(spans, spans[1:]):
            if s2 < e1:
                bad.append((worker, l1, e1, l2, s2))
    return bad


def first_from(acked, instance, since, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        later = [a for a in list(acked) if a[1] == instance and a[2] > since]
        if later:
            return min(later, key=lambda a: a[2])
        time.sleep(0.01)
    raise AssertionError("no Snowflake ID from the new leader")


def main():
    cluster = EtcdCluster().start()
    a, b = make_instance(cluster, EXTRA), make_instance(cluster, EXTRA)
    instances = [a, b]
    try:
        a.start()
        wait_role(a, "leader")
        b.start()
        wait_role(b, "follower")
        # The follower serves none of it: 503 naming the leader.
        status, body = call(b.http_port, "POST", "/v1/sequences/Flakes/next")
        assert status == 503 and body["error"]["code"] == "not_leader", (status, body)
        status, body = call(b.http_port, "POST", "/v1/workers/render/leases", {"holder": "x"})
        assert status == 503 and body["error"]["code"] == "not_leader", (status, body)
        status, body = call(a.http_port, "POST", "/v1/sequences/EventIds/next")
        assert status == 200 and len(body["ids"]) == 1, (status, body)
        # A configured ULID sequence is served by the leader only, like every kind.
        status, body = call(a.http_port, "POST", "/v1/sequences/Ulids/next", {"count": 3})
        assert status == 200 and [len(i) for i in body["ids"]] == [26] * 3, (status, body)
        assert body["ids"] == sorted(body["ids"]), body
        status, body = call(b.http_port, "POST", "/v1/sequences/Ulids/next")
        assert status == 503 and body["error"]["code"] == "not_leader", (status, body)

        flakes = SnowflakeClients(instances)
        periods, lock, stop = [], threading.Lock(), threading.Event()
        holders = [Holder(instances, f"holder-{i}", periods, lock, stop) for i in range(HOLDERS)]
        flakes.start()
        for h in holders:
            h.start()
        takeovers = []
        kill_times = []
        for round_ in range(KILLS + 1):
            time.sleep(2.0)
            leader = wait_leader(instances)
            index = instances.index(leader)
            with flakes.lock:
                before = [x for x in flakes.acked if x[1] == index]
            top = max(x[0] for x in before)
            at = time.time()
            kill_times.append(at * 1000)
            clean = round_ == KILLS  # the last one a clean hand-over
            if clean:
                leader.stop()
            else:
                leader.kill9()
            first = first_from(flakes.acked, 1 - index, at)
            # Everything the old leader acknowledged came before it died.
            with flakes.lock:
                from_old = max(x[0] for x in flakes.acked if x[1] == index)
            assert first[0] > from_old >= top, (first, from_old, top)
            took = first[2] - at
            takeovers.append((("SIGTERM" if clean else "kill -9"), took))
            print(f"{'SIGTERM' if clean else 'kill -9'}: first Snowflake ID from the new leader "
                  f"{took:.2f} s later, above the old leader's last", flush=True)
            leader.start(wait=False)
            wait_role(leader, "follower")
        time.sleep(1.5)
        stop.set()
        for h in holders:
            h.join(10)
        flakes.finish()

        ids = [x[0] for x in flakes.acked]
        assert len(ids) > 100, len(ids)
        assert len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} Snowflake IDs twice"
        bad = overlapping(periods)
        assert not bad, f"worker IDs held twice at once: {bad[:5]}"
        assert len(periods) >= HOLDERS - 2, periods  # holders did hold leases
        # Leases survive a fail-over: a lease granted by one leader was kept alive by the next
        # (its confirmed expiry is later than a keepalive before the kill could have made it).
        survived = [p for p in periods for k in kill_times
                    if p[2] < k and p[3] > k + LEASE_TTL_S * 1000]
        longest = max(end - start for _, _, start, end in periods)
        errors = [e for h in holders for e in h.errors]
        assert not errors, errors[:5]
        kills = [t for what, t in takeovers if what == "kill -9"]
        print(f"{len(ids)} Snowflake IDs, none twice; {len(periods)} worker leases, no worker ID "
              f"held twice, {len(survived)} kept alive across a fail-over; longest {longest / 1000:.1f} s; takeover after kill -9 "
              f"max {max(kills):.2f} s, after SIGTERM {takeovers[-1][1]:.2f} s "
              f"(leader_ttl_s {TTL_S})", flush=True)
        assert survived, "no lease was kept alive across a fail-over"
        # The new leader's first Snowflake ID waits for the election and then for the old
        # leader's high-water mark (2 s ahead of its clock at most).
        assert max(kills) < TTL_S + 2 + 1.5, takeovers
    finally:
        for t in instances:
            t.cleanup()
        cluster.cleanup()
    print("ok")


if __name__ == "__main__":
    main()
