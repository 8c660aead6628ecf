"""High availability on etcd: two ticketd instances share a real three-member etcd cluster.
Usage: ha_test.py failover|gapless_failover|fencing|etcd_faults|idle_requests|takeover|
watch_reconnect"""
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "protocol"))
import pymysql  # noqa: E402

from gapless_test import audit, committed_set, settle  # noqa: E402

from etcd_cluster import EtcdCluster  # noqa: E402
from ticketd_process import Ticketd  # noqa: E402

TTL_S = 2

CONFIG = """
storage:
  engine: etcd
  endpoints: [{endpoints}]
  prefix: /ticketd/test/
  leader_ttl_s: {ttl}
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  users:
    - {{{{ name: ticket, password: ticket }}}}
http:
  listen: 127.0.0.1:{{http_port}}
sequences:
  - {{{{ name: Tickets64, kind: ticket, cache: 1000 }}}}
{extra}"""

# MySQL reservations are session-scoped and use the sequence's TTL; HTTP clients ask for
# HTTP_TTL_MS so that a reservation made on a leader that dies can be committed on the next one.
GAPLESS = "  - {{ name: Invoices, kind: gapless, reservation_ttl_ms: 1000 }}\n"  # Ticketd formats it
HTTP_TTL_MS = 6000


def make_instance(cluster, extra="", ttl=TTL_S):
    return Ticketd(config=CONFIG.format(endpoints=", ".join(cluster.endpoints), ttl=ttl,
                                        extra=extra))


def cluster_view(t):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{t.http_port}/v1/cluster", timeout=1) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def wait_role(t, role, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cluster_view(t)
        # A follower counts once it has seen who leads (it learns that by polling the key).
        if v and v["role"] == role and (role != "leader" or v["serving"]) and (
                role != "follower" or v.get("leader")):
            return v
        time.sleep(0.05)
    raise AssertionError(f"instance on {t.mysql_port} never became {role}:\n{t.log_text()[-3000:]}")


def wait_until(predicate, what, timeout):
    """Polls `predicate` until it holds; fails naming `what` after `timeout` seconds."""
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError(f"{what} (waited {timeout} s)")
        time.sleep(0.05)


def take(t, timeout=1.0):
    conn = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="ticket", password="ticket",
                           database="tickets", connect_timeout=timeout, read_timeout=timeout,
                           write_timeout=timeout, autocommit=True)
    return conn


class Clients:
    """N threads taking tickets from whichever instance answers; every acknowledged value kept."""

    def __init__(self, instances, n=16):
        self.instances = instances
        self.acked = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.last_ok = [0.0, 0.0]  # per instance: when it last acknowledged a ticket
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(n)]

    def run(self, i):
        conn = None
        which = i % 2
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = take(self.instances[which])
                with conn.cursor() as c:
                    c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
                    value = c.lastrowid
                with self.lock:
                    self.acked.append(value)
                    self.last_ok[which] = time.time()
            except Exception:  # noqa: BLE001 - any failure: try the other instance
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001
                        pass
                conn = None
                which = 1 - which
                time.sleep(0.01)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()

    def count(self):
        with self.lock:
            return len(self.acked)

    def first_after(self, since, instance, timeout=30):
        """Seconds from `since` to the first ticket `instance` acknowledged after it."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if self.last_ok[instance] > since:
                    return self.last_ok[instance] - since
            time.sleep(0.005)
        raise AssertionError("no ticket after fail-over")


def leader_of(instances):
    for t in instances:
        v = cluster_view(t)
        if v and v["role"] == "leader" and v["serving"]:
            return t
    return None


def wait_leader(instances, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        t = leader_of(instances)
        if t:
            return t
        time.sleep(0.05)
    raise AssertionError("no leader")


def assert_unique(values):
    assert values, "no ticket was acknowledged"
    dupes = len(values) - len(set(values))
    assert dupes == 0, f"{dupes} values acknowledged twice"


def test_failover(cluster):
    a, b = make_instance(cluster), make_instance(cluster)
    instances = [a, b]
    try:
        a.start()
        leading = wait_role(a, "leader")
        # Every answer admitted by the leader names the term it served under (the checker of
        # tests/nemesis holds them to fencing).
        with urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{a.http_port}/v1/sequences/Tickets64/next", data=b"{}",
                headers={"Content-Type": "application/json"}), timeout=5) as r:
            assert r.headers["Ticketd-Term"] == str(leading["term"]), (r.headers, leading)
        b.start()
        v = wait_role(b, "follower")
        assert v["leader"]["mysql"] == f"127.0.0.1:{a.mysql_port}", v
        # A follower refuses with 1290 naming the leader, and HTTP 503 not_leader.
        conn = take(b)
        try:
            with conn.cursor() as c:
                c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            raise AssertionError("the follower issued a ticket")
        except pymysql.err.OperationalError as e:
            assert e.args[0] == 1290 and f"127.0.0.1:{a.mysql_port}" in e.args[1], e.args
        with conn.cursor() as c:
            c.execute("SHOW STATUS LIKE 'Ticketd_role'")
            assert c.fetchall() == (("Ticketd_role", "follower"),)
        conn.close()
        try:
            urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{b.http_port}/v1/sequences/Tickets64/next", data=b"{}",
                headers={"Content-Type": "application/json"}), timeout=2)
            raise AssertionError("the follower answered /next")
        except urllib.error.HTTPError as e:
            body = json.loads(e.read())
            assert e.code == 503 and body["error"]["code"] == "not_leader", body
            assert body["error"]["leader"] == f"127.0.0.1:{a.http_port}", body
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{b.http_port}/readyz", timeout=2)
            raise AssertionError("a follower is ready")
        except urllib.error.HTTPError as e:
            assert e.code == 503

        clients = Clients(instances)
        clients.start()
        times = []
        for _ in range(10):
            time.sleep(1.0)
            leader = wait_leader(instances)
            before = clients.count()
            killed_at = time.time()
            leader.kill9()
            took = clients.first_after(killed_at, 1 - instances.index(leader))
            times.append(took)
            print(f"fail-over: first ticket from the new leader {took:.2f} s after kill -9 "
                  f"({before} tickets so far)", flush=True)
            leader.start(wait=False)
            wait_role(leader, "follower")
        time.sleep(0.5)
        clients.finish()
        assert_unique(clients.acked)
        print(f"{len(clients.acked)} tickets, none twice; fail-over min/avg/max "
              f"{min(times):.2f}/{sum(times) / len(times):.2f}/{max(times):.2f} s "
              f"(leader_ttl_s {TTL_S})", flush=True)
        assert max(times) < TTL_S + 1, times  # the goal: under leader_ttl_s + 1 s
    finally:
        for t in instances:
            t.cleanup()


class GaplessClients:
    """MySQL clients doing BEGIN; SELECT NEXTVAL(Invoices); COMMIT and HTTP clients reserving,
    then committing (on whichever instance leads by then), against whichever instance answers.
    Every acknowledged commit is kept; so is anything that must never happen."""

    def __init__(self, instances, n_mysql=4, n_http=4):
        self.instances = instances
        self.acked = []
        self.failures = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.last_ok = [0.0, 0.0]  # per instance: when it last acknowledged a gapless commit
        self.threads = [threading.Thread(target=self.mysql_client, args=(i,))
                        for i in range(n_mysql)]
        self.threads += [threading.Thread(target=self.http_client, args=(i,))
                         for i in range(n_http)]

    def ack(self, n, which):
        with self.lock:
            self.acked.append(n)
            self.last_ok[which] = time.time()

    def fail(self, what):
        with self.lock:
            self.failures.append(what)

    def mysql_client(self, i):
        conn = None
        which = i % 2
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = take(self.instances[which])
                with conn.cursor() as c:
                    c.execute("BEGIN")
                    c.execute("SELECT NEXTVAL(Invoices)")
                    n = int(c.fetchone()[0])
                    c.execute("COMMIT")
                self.ack(n, which)
            except Exception:  # noqa: BLE001 - not the leader, killed, or lost: not acknowledged
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001
                        pass
                conn = None
                which = 1 - which
                time.sleep(0.01)

    def call(self, which, method, path, body=None):
        """(status, json) from instance `which`, or (None, None) when it does not answer."""
        t = self.instances[which]
        conn = http.client.HTTPConnection("127.0.0.1", t.http_port, timeout=2)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
        except (OSError, ValueError, http.client.HTTPException):
            return None, None
        finally:
            conn.close()

    def http_client(self, i):
        which = i % 2
        base = "/v1/sequences/Invoices/reservations"
        while not self.stop.is_set():
            status, r = self.call(which, "POST", base, {"holder": f"h{i}", "ttl_ms": HTTP_TTL_MS})
            if status != 201:
                if status not in (None, 503):
                    self.fail(f"reserve answered {status} {r}")
                which = 1 - which
                time.sleep(0.01)
                continue
            # The reservation is durable: commit it on whichever instance leads, until its TTL.
            deadline = time.time() + HTTP_TTL_MS / 1000
            while time.time() < deadline:
                status, c = self.call(which, "POST", f"{base}/{r['reservation_id']}/commit")
                if status == 200:
                    self.ack(int(r["id"]), which)
                    break
                if status == 409:
                    break  # expired, or committed by a request whose answer was lost
                if status not in (None, 500, 503):
                    self.fail(f"commit of {r['id']} answered {status} {c}")
                    break
                which = 1 - which
                time.sleep(0.01)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()

    def count(self):
        with self.lock:
            return len(self.acked)

    def first_after(self, since, instance, timeout=30):
        """Seconds from `since` to the first gapless commit `instance` acknowledged after it."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if self.last_ok[instance] > since:
                    return self.last_ok[instance] - since
            time.sleep(0.005)
        raise AssertionError("no gapless commit after fail-over")


def test_gapless_failover(cluster):
    """The leader is killed -9 ten times while ticket and gapless clients run. No gapless number
    is acknowledged twice, every acknowledged commit is in the new leader's audit, there are
    no holes, and once settled the committed numbers are exactly {1 … N}."""
    a, b = make_instance(cluster, GAPLESS), make_instance(cluster, GAPLESS)
    instances = [a, b]
    try:
        a.start()
        wait_role(a, "leader")
        b.start()
        wait_role(b, "follower")
        tickets = Clients(instances, n=4)
        gapless = GaplessClients(instances)
        tickets.start()
        gapless.start()
        times = []
        for _ in range(10):
            time.sleep(1.0)
            leader = wait_leader(instances)
            before = gapless.count()
            killed_at = time.time()
            leader.kill9()
            took = gapless.first_after(killed_at, 1 - instances.index(leader))
            times.append(took)
            print(f"fail-over: first gapless commit on the new leader {took:.2f} s after kill -9 "
                  f"({before} commits so far)", flush=True)
            leader.start(wait=False)
            wait_role(leader, "follower")
        time.sleep(0.5)
        gapless.finish()
        tickets.finish()
        assert_unique(tickets.acked)
        assert gapless.failures == [], gapless.failures[:10]
        assert_unique(gapless.acked)
        leader = wait_leader(instances)
        au = audit(leader, "Invoices")
        assert au["holes"] == [], au["holes"][:20]
        committed = committed_set(au, 1)
        assert len(committed) == au["committed"], (len(committed), au["committed"])
        lost = set(gapless.acked) - committed
        assert not lost, f"acknowledged commits missing on the new leader: {sorted(lost)[:20]}"
        au, taken = settle(leader, "Invoices", 1)
        n = int(au["committed_through"])
        assert au["holes"] == [] and au["pending"] == [] and au["released"] == [], au
        assert int(au["high"]) == n and au["committed"] == n, au
        assert committed_set(au, 1) == set(range(1, n + 1))
        assert set(gapless.acked) | taken <= set(range(1, n + 1))
        assert not set(gapless.acked) & taken, "a released number was acknowledged before"
        print(f"{len(gapless.acked)} gapless commits acknowledged, none twice, all in the audit; "
              f"committed = 1..{n} after settling ({len(taken)} released numbers reused; "
              f"{len(tickets.acked)} tickets, none twice); first gapless commit after kill -9 "
              f"min/avg/max {min(times):.2f}/{sum(times) / len(times):.2f}/{max(times):.2f} s "
              f"(leader_ttl_s {TTL_S})", flush=True)
        assert max(times) < TTL_S + 2, times
    finally:
        for t in instances:
            t.cleanup()


def test_fencing(cluster):
    a, b = make_instance(cluster), make_instance(cluster)
    try:
        a.start()
        wait_role(a, "leader")
        b.start()
        wait_role(b, "follower")
        conn = take(a)
        with conn.cursor() as c:
            c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            first = c.lastrowid
        a.proc.send_signal(signal.SIGSTOP)
        wait_role(b, "leader", timeout=TTL_S + 10)
        conn_b = take(b)
        with conn_b.cursor() as c:
            c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            from_b = c.lastrowid
        assert from_b > first, (first, from_b)
        a.proc.send_signal(signal.SIGCONT)
        # The old leader must not issue again, not even from its in-memory cache.
        with conn.cursor() as c:
            try:
                c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
                raise AssertionError(f"the deposed leader issued {c.lastrowid}")
            except pymysql.err.OperationalError as e:
                assert e.args[0] in (1290, 1053, 2013), e.args
        conn.close()
        wait_role(a, "follower", timeout=30)
        assert "leadership lost" in a.log_text()
        with conn_b.cursor() as c:
            c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            assert c.lastrowid > from_b
        conn_b.close()
        print("fencing: the SIGSTOPped leader issued nothing after SIGCONT and rejoined as a "
              "follower", flush=True)
    finally:
        try:
            a.proc.send_signal(signal.SIGCONT)
        except Exception:  # noqa: BLE001
            pass
        a.cleanup()
        b.cleanup()


def test_etcd_faults(cluster):
    a = make_instance(cluster)
    try:
        a.start()
        wait_role(a, "leader")
        clients = Clients([a, a], n=8)
        clients.start()
        wait_until(lambda: clients.count() > 10, "no tickets before the fault", 10 * TTL_S)
        cluster.kill_member(0)
        n = clients.count()
        began = time.time()
        wait_until(lambda: clients.count() > n + 10, "no tickets with one etcd member down",
                   10 * TTL_S)
        print(f"one etcd member down: {clients.count() - n} tickets in "
              f"{time.time() - began:.1f} s", flush=True)
        cluster.kill_member(1)
        time.sleep(TTL_S + 1)
        stalled = clients.count()
        time.sleep(2)
        assert clients.count() == stalled, "tickets issued without an etcd quorum"
        conn = None
        try:
            conn = take(a)
            with conn.cursor() as c:
                c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            raise AssertionError("issued without quorum")
        except pymysql.err.OperationalError as e:
            print(f"without quorum: {e.args}", flush=True)
            assert e.args[0] in (1290, 1105), e.args
        finally:
            if conn:
                conn.close()
        cluster.start_member(0)
        cluster.start_member(1)
        deadline = time.time() + 60
        while clients.count() == stalled and time.time() < deadline:
            time.sleep(0.1)
        assert clients.count() > stalled, "no tickets after quorum returned"
        time.sleep(1)
        clients.finish()
        assert_unique(clients.acked)
        print(f"quorum back: issuing again; {len(clients.acked)} tickets, none twice", flush=True)
    finally:
        a.cleanup()


def etcd_requests(cluster):
    """{grpc method: requests started} summed over the members, from etcd's own /metrics
    (grpc_server_started_total counts unary calls and streams alike; the JSON gateway turns
    each HTTP request into one)."""
    out = {}
    for endpoint in cluster.endpoints:
        with urllib.request.urlopen(endpoint + "/metrics", timeout=2) as r:
            for line in r.read().decode().splitlines():
                if not line.startswith("grpc_server_started_total{"):
                    continue
                labels, value = line.rsplit(" ", 1)
                method = labels.split('grpc_method="', 1)[1].split('"', 1)[0]
                out[method] = out.get(method, 0) + int(float(value))
    return out


IDLE_TTL_S = 10


def test_idle_requests(cluster):
    """An idle leader and one follower at leader_ttl_s 10 make at most a few etcd requests per
    TTL: the leader's keepalives (every TTL/3) and the follower's watch, renewed once per TTL."""
    a, b = make_instance(cluster, ttl=IDLE_TTL_S), make_instance(cluster, ttl=IDLE_TTL_S)
    try:
        a.start()
        wait_role(a, "leader")
        b.start()
        wait_role(b, "follower")
        time.sleep(1)
        before = etcd_requests(cluster)
        time.sleep(IDLE_TTL_S)
        after = etcd_requests(cluster)
        diff = {m: after.get(m, 0) - before.get(m, 0) for m in after}
        diff = {m: n for m, n in sorted(diff.items()) if n}
        total = sum(diff.values())
        print(f"etcd requests in {IDLE_TTL_S} s, idle leader + follower at leader_ttl_s "
              f"{IDLE_TTL_S}: {total} {diff}", flush=True)
        assert diff.get("LeaseKeepAlive", 0) >= 2, diff  # the leader is alive and counted
        assert total <= 8, diff
        assert cluster_view(b)["role"] == "follower"
    finally:
        a.cleanup()
        b.cleanup()


def test_takeover(cluster):
    """Takeover at leader_ttl_s 10 through the watch: after kill -9 within TTL + 0.3 s, after a
    clean SIGTERM (the leader revokes its lease) under 0.3 s, median of several hand-overs."""
    a, b = make_instance(cluster, ttl=IDLE_TTL_S), make_instance(cluster, ttl=IDLE_TTL_S)
    instances = [a, b]
    try:
        a.start()
        wait_role(a, "leader")
        b.start()
        wait_role(b, "follower")
        clients = Clients(instances, n=4)
        clients.start()
        results = {"kill -9": [], "SIGTERM": []}
        for how in ["SIGTERM"] * 5 + ["kill -9"] * 3:
            time.sleep(1.0)
            leader = wait_leader(instances)
            other = 1 - instances.index(leader)
            wait_role(instances[other], "follower")
            stopped_at = time.time()
            if how == "kill -9":
                leader.kill9()
            else:
                leader.proc.send_signal(signal.SIGTERM)
            took = clients.first_after(stopped_at, other)
            results[how].append(took)
            print(f"takeover after {how}: first ticket from the new leader {took:.3f} s later",
                  flush=True)
            leader.proc.wait(timeout=30)
            leader.start(wait=False)
            wait_role(leader, "follower")
        clients.finish()
        assert_unique(clients.acked)
        for how, times in results.items():
            times.sort()
            print(f"takeover after {how} at leader_ttl_s {IDLE_TTL_S}: median "
                  f"{times[len(times) // 2]:.3f} s, min/max {times[0]:.3f}/{times[-1]:.3f} s",
                  flush=True)
        assert results["SIGTERM"][len(results["SIGTERM"]) // 2] < 0.3, results
        assert max(results["kill -9"]) < IDLE_TTL_S + 0.3, results
    finally:
        for t in instances:
            t.cleanup()


def test_watch_reconnect(cluster):
    """The etcd member a follower watches through dies: the follower watches through another
    member (reading the key again first), so a SIGTERM of the leader still hands over at once
    rather than after the TTL."""
    a, b = make_instance(cluster, ttl=IDLE_TTL_S), make_instance(cluster, ttl=IDLE_TTL_S)
    try:
        a.start()
        wait_role(a, "leader")
        b.start()
        wait_role(b, "follower")
        time.sleep(0.5)
        cluster.kill_member(0)  # both clients start on the first endpoint
        # Not a wait for "watch broke": going on as soon as it is logged made the handover
        # below take 12.7 s (the TTL) in 3 runs of 4; the 2 s also let both clients move to
        # another member first. To be replaced by a wait on a condition ticketd reports.
        time.sleep(2)
        assert "watch broke" in b.log_text(), b.log_text()[-2000:]
        stopped = time.time()
        a.proc.send_signal(signal.SIGTERM)
        wait_role(b, "leader", timeout=IDLE_TTL_S + 5)
        took = time.time() - stopped
        print(f"hand-over after SIGTERM with the watched etcd member dead: {took:.3f} s",
              flush=True)
        assert took < 1.0, took
        conn = take(b)
        with conn.cursor() as c:
            c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            assert c.lastrowid > 0
        conn.close()
    finally:
        a.cleanup()
        b.cleanup()
        cluster.start_member(0)


def main():
    which = sys.argv[1]
    cluster = EtcdCluster().start()
    try:
        {"failover": test_failover, "gapless_failover": test_gapless_failover,
         "fencing": test_fencing,
         "etcd_faults": test_etcd_faults, "idle_requests": test_idle_requests,
         "takeover": test_takeover, "watch_reconnect": test_watch_reconnect}[which](cluster)
    finally:
        cluster.cleanup()
    print("ok")


if __name__ == "__main__":
    main()
