#!/usr/bin/env python3
"""Tests of netlab.py, the namespace network of the nemesis suite, with small Python echo servers
in the namespaces instead of ticketd.

    /usr/bin/python3 tests/nemesis/netlab_test.py [-v] [TestClass.test_name ...]

Needs root (network namespaces). A machine that cannot make namespaces fails here with the
reason from Lab.probe(): these tests never skip.

What is checked: two nodes talk and the root namespace stays outside the lab; cut/partition/
isolate make new connections time out and established ones stall without an error, heal undoes
them and the stalled connection resumes; Popen.pid is the program's pid (SIGSTOP/SIGCONT/SIGKILL);
the proxy's delay, transparency, emulated loss, 200 concurrent connections and byte order under
jitter; close() leaves nothing behind; cleanup_stale removes a lab whose owner died, and SIGTERM/
SIGINT of the owner close its labs. Timing assertions are lower bounds, upper bounds are generous
(the machine may be a loaded 2-core box).
"""
import concurrent.futures
import ipaddress
import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import netlab  # noqa: E402

PY = sys.executable
PORT = 7000
CUT_TIMEOUT_S = 1.0  # how long a connect or an echo waits before a cut counts as working

# A threaded TCP echo server: echoes everything on every connection; "ready" once listening.
ECHO_SERVER = r"""
import socket, sys, threading

def serve(conn):
    with conn:
        while True:
            try:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data)
            except OSError:
                return

server = socket.create_server(("0.0.0.0", int(sys.argv[1])), backlog=1024)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


# ---- helpers -------------------------------------------------------------------------------------

def read_line(proc, timeout=10.0):
    """One line of a child's (raw, bufsize=0) stdout, or AssertionError after `timeout`."""
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise AssertionError(f"no line from pid {proc.pid} within {timeout} s: {buf!r}")
        chunk = os.read(fd, 1)
        if not chunk:
            raise AssertionError(f"pid {proc.pid} exited ({proc.wait()}) before a line: {buf!r}")
        buf += chunk
    return buf.decode().strip()


def start_echo(testcase, node, port=PORT):
    """An echo server in `node`, running and listening when this returns."""
    proc = node.popen([PY, "-c", ECHO_SERVER, str(port)], stdout=subprocess.PIPE, bufsize=0)
    testcase.addCleanup(proc.stdout.close)
    testcase.assertEqual(read_line(proc), "ready")
    return proc


def recv_exactly(sock, n, timeout):
    """n bytes from sock; socket.timeout (TimeoutError) if they do not come within `timeout`."""
    sock.settimeout(timeout)
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return bytes(data)


def echo(sock, payload, timeout=5.0):
    sock.sendall(payload)
    return recv_exactly(sock, len(payload), timeout)


def round_trip(sock, payload=b"ping-pong-ping!\n", timeout=10.0):
    """Seconds for one small echo on an established connection."""
    t0 = time.monotonic()
    got = echo(sock, payload, timeout)
    elapsed = time.monotonic() - t0
    assert got == payload, (got, payload)
    return elapsed


def reach(src, dst_ip, port=PORT, timeout=CUT_TIMEOUT_S):
    """'ok' if a new connection from node `src` to dst_ip:port echoes, 'timeout' if the connect
    (or the echo) times out, else the error's name: a cut must look like silence, never like an
    error."""
    try:
        with src.create_connection((dst_ip, port), timeout=timeout) as s:
            token = os.urandom(8).hex().encode()
            return "ok" if echo(s, token, timeout) == token else "wrong echo"
    except (TimeoutError, socket.timeout):
        return "timeout"
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def reach_all(pairs, timeout=CUT_TIMEOUT_S):
    """reach() for every (src node, dst node) at once (in threads): {(src, dst): result}."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(pairs)) as pool:
        futures = {(s.name, d.name): pool.submit(reach, s, d.ip, PORT, timeout)
                   for s, d in pairs}
        return {k: f.result() for k, f in futures.items()}


def root_links():
    """Interface names of the root namespace."""
    out = subprocess.run([netlab.IP, "-o", "link", "show"], capture_output=True, text=True,
                         check=True).stdout
    return sorted(line.split(":")[1].strip().split("@")[0] for line in out.splitlines())


def lab_namespaces(tag):
    return [n for n in netlab._netns_names() if n.startswith(tag + "-")]


def pid_gone(pid):
    """True once pid is no process, or a zombie nobody reaped yet (it no longer runs)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_until(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class LabCase(unittest.TestCase):
    """A fresh lab per test with nodes a, b, c, each running an echo server on PORT."""

    NODES = ("a", "b", "c")

    def setUp(self):
        self.links_before = root_links()
        self.lab = netlab.Lab(prefix="ntdt")
        self.addCleanup(self.lab.close)
        self.n = {name: self.lab.add_node(name) for name in self.NODES}
        self.servers = {name: start_echo(self, node) for name, node in self.n.items()}


# ---- the tests ----------------------------------------------------------------------------------

class ProbeTest(unittest.TestCase):
    def test_probe_passes_and_leaves_nothing(self):
        self.assertIsNone(netlab.Lab.probe())
        self.assertEqual([n for n in netlab._netns_names() if n.startswith("nlprobe")], [])


class TopologyTest(LabCase):
    def test_nodes_talk_and_root_stays_outside(self):
        a, b, c = (self.n[x] for x in "abc")
        self.assertEqual(reach_all([(a, b), (b, a), (a, c), (c, b)]),
                         {("a", "b"): "ok", ("b", "a"): "ok", ("a", "c"): "ok", ("c", "b"): "ok"})
        # Addresses: distinct, in the lab's /24, on eth0 of each node.
        ips = [ipaddress.ip_address(n.ip) for n in (a, b, c)]
        self.assertEqual(len(set(ips)), 3)
        self.assertTrue(all(ip in self.lab.subnet for ip in ips))
        out = b.run(["ip", "-4", "-o", "addr", "show", "dev", "eth0"], capture_output=True,
                    text=True, check=True).stdout
        self.assertIn(f"inet {b.ip}/24", out)
        self.assertEqual(sorted(lab_namespaces(self.lab.tag)),
                         sorted(f"{self.lab.tag}-{x}" for x in ("a", "b", "c", "hub")))
        # The root namespace got no interface and has no address in the lab's subnet...
        self.assertEqual(root_links(), self.links_before)
        for net in netlab._root_networks():
            if net.prefixlen > 0:
                self.assertFalse(net.overlaps(self.lab.subnet), net)
        # ... so a connection from here does not reach the lab: it fails, or (a default route
        # to some gateway that accepts anything) it reaches something that is not our server.
        token = b"netlab-root-probe\n"
        try:
            with socket.create_connection((b.ip, PORT), timeout=CUT_TIMEOUT_S) as s:
                s.sendall(token)
                s.settimeout(CUT_TIMEOUT_S)
                got = s.recv(len(token))
            self.assertNotEqual(got, token, "the root namespace reached a lab server")
        except OSError:
            pass

    def test_node_names_are_checked(self):
        with self.assertRaises(ValueError):
            self.lab.add_node("a")  # exists
        with self.assertRaises(ValueError):
            self.lab.add_node("hub")  # reserved
        with self.assertRaises(ValueError):
            self.lab.add_node("no/slash")

    def test_run_in_namespace(self):
        r = self.n["c"].run([PY, "-c", "import socket; s = socket.socket(); "
                                       "s.connect(('127.0.0.1', 7000)); print('lo ok')"],
                            capture_output=True, text=True, timeout=10)
        self.assertEqual(r.stdout.strip(), "lo ok", r.stderr)  # c's own echo server on its lo


class CutTest(LabCase):
    def test_cut_stalls_then_heal_resumes(self):
        a, b, c = (self.n[x] for x in "abc")
        est = a.create_connection((b.ip, PORT), timeout=5)
        self.addCleanup(est.close)
        self.assertEqual(echo(est, b"before\n"), b"before\n")

        self.lab.cut(a, b)
        self.lab.cut(b, a)  # idempotent, in either order
        self.assertEqual(self.lab.cuts(), {("a", "b")})
        # The established connection: the send succeeds (it only queues), no echo comes back,
        # and the socket has no error: packets vanish, nothing is refused or reset.
        est.sendall(b"during the cut\n")
        with self.assertRaises(TimeoutError):
            recv_exactly(est, 1, CUT_TIMEOUT_S)
        self.assertEqual(est.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR), 0)
        # New connections time out both ways; other pairs are untouched.
        t0 = time.monotonic()
        self.assertEqual(reach_all([(a, b), (b, a), (a, c), (c, b)]),
                         {("a", "b"): "timeout", ("b", "a"): "timeout",
                          ("a", "c"): "ok", ("c", "b"): "ok"})
        self.assertGreaterEqual(time.monotonic() - t0, CUT_TIMEOUT_S * 0.95)

        self.lab.heal()
        self.assertEqual(self.lab.cuts(), set())
        # The stalled data arrives at TCP's next retransmission (backed off: a few seconds).
        self.assertEqual(recv_exactly(est, 15, 15.0), b"during the cut\n")
        self.assertEqual(echo(est, b"after\n"), b"after\n")
        self.assertEqual(reach_all([(a, b), (b, a)]), {("a", "b"): "ok", ("b", "a"): "ok"})

    def test_partition_one_against_two(self):
        a, b, c = (self.n[x] for x in "abc")
        self.lab.partition([a], [b, c])
        self.lab.partition(["a"], ["b", "c"])  # idempotent; names work as well as nodes
        self.assertEqual(self.lab.cuts(), {("a", "b"), ("a", "c")})
        self.assertEqual(reach_all([(b, c), (c, b), (a, b), (b, a), (a, c), (c, a)]),
                         {("b", "c"): "ok", ("c", "b"): "ok",
                          ("a", "b"): "timeout", ("b", "a"): "timeout",
                          ("a", "c"): "timeout", ("c", "a"): "timeout"})
        with self.assertRaises(ValueError):
            self.lab.partition([a, b], [b])  # b on both sides
        self.lab.heal()
        self.assertEqual(reach_all([(a, b), (c, a)]), {("a", "b"): "ok", ("c", "a"): "ok"})

    def test_isolate_and_uncut(self):
        a, b, c = (self.n[x] for x in "abc")
        self.lab.isolate(b)
        self.assertEqual(self.lab.cuts(), {("a", "b"), ("b", "c")})
        self.assertEqual(reach_all([(a, c), (c, a), (a, b), (b, a), (b, c), (c, b)]),
                         {("a", "c"): "ok", ("c", "a"): "ok",
                          ("a", "b"): "timeout", ("b", "a"): "timeout",
                          ("b", "c"): "timeout", ("c", "b"): "timeout"})
        self.lab.uncut(a, b)
        self.lab.uncut(a, b)  # idempotent
        self.assertEqual(self.lab.cuts(), {("b", "c")})
        self.assertEqual(reach_all([(a, b), (b, c)]), {("a", "b"): "ok", ("b", "c"): "timeout"})
        self.lab.heal()
        self.assertEqual(reach_all([(b, c)]), {("b", "c"): "ok"})


class PopenTest(LabCase):
    NODES = ("a", "b")

    def test_pid_is_the_program(self):
        a, b = self.n["a"], self.n["b"]
        server = self.servers["b"]
        pid = server.pid
        # The pid runs python itself (not `ip`, not a shell), in b's namespace.
        with open(f"/proc/{pid}/comm") as f:
            self.assertTrue(f.read().strip().startswith("python"))
        self.assertEqual(os.path.realpath(f"/proc/{pid}/exe"), os.path.realpath(PY))
        self.assertEqual(os.stat(f"/proc/{pid}/ns/net").st_ino, os.stat(b.netns_path).st_ino)
        self.assertNotEqual(os.stat(f"/proc/{pid}/ns/net").st_ino,
                            os.stat("/proc/self/ns/net").st_ino)

        conn = a.create_connection((b.ip, PORT), timeout=5)
        self.addCleanup(conn.close)
        self.assertEqual(echo(conn, b"one\n"), b"one\n")
        os.kill(pid, signal.SIGSTOP)
        try:
            # kill() returns before every thread has stopped: wait until they all have.
            self.assertTrue(netlab.wait_stopped(pid, 5.0))
            conn.sendall(b"two\n")  # the kernel still takes it; the stopped program never reads
            with self.assertRaises(TimeoutError):
                recv_exactly(conn, 1, CUT_TIMEOUT_S)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.assertEqual(recv_exactly(conn, 4, 5.0), b"two\n")
        server.kill()  # SIGKILL through Popen, i.e. to that pid
        self.assertEqual(server.wait(timeout=5), -signal.SIGKILL)
        self.assertNotEqual(reach(a, b.ip), "ok")

    def test_missing_program_raises_like_popen(self):
        with self.assertRaises(FileNotFoundError):
            self.n["a"].popen(["/nonexistent/program"])


class ProxyTest(unittest.TestCase):
    """A proxy in node cl forwarding to an echo server in node srv."""

    def setUp(self):
        self.lab = netlab.Lab(prefix="ntdt")
        self.addCleanup(self.lab.close)
        self.cl = self.lab.add_node("cl")
        self.srv = self.lab.add_node("srv")
        start_echo(self, self.srv)
        self.proxy = self.lab.proxy(self.cl, 7001, self.srv.ip, PORT, seed=1)
        self.assertEqual(self.proxy.port, 7001)

    def connect(self):
        s = self.cl.create_connection(("127.0.0.1", self.proxy.port), timeout=5)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.addCleanup(s.close)
        return s

    def test_both_listeners_forward(self):
        self.assertEqual(echo(self.connect(), b"via lo\n"), b"via lo\n")
        # From another node, through cl's own address.
        self.assertEqual(reach(self.srv, self.cl.ip, self.proxy.port), "ok")

    def test_delay_then_transparent(self):
        s = self.connect()
        round_trip(s)  # the proxy's upstream connection is made now, not in the measurement
        self.proxy.set(delay_ms=200, jitter_ms=0)
        # Both directions are delayed: a round trip takes at least 2 x 200 ms.
        delayed = [round_trip(s) for _ in range(3)]
        self.assertGreaterEqual(min(delayed), 0.400, delayed)
        self.assertLess(max(delayed), 2.0, delayed)
        self.proxy.set()
        self.assertEqual(self.proxy.settings, {"delay_ms": 0, "jitter_ms": 0, "loss": 0})
        fast = [round_trip(s) for _ in range(5)]
        self.assertLess(statistics.median(fast), 0.100, fast)

    def test_set_applies_to_new_data_at_once(self):
        s = self.connect()
        round_trip(s)
        self.proxy.set(delay_ms=300)
        self.assertGreaterEqual(round_trip(s), 0.600)  # no settling time after set() returns
        self.proxy.set(delay_ms=0)
        self.assertLess(round_trip(s), 0.300)
        with self.assertRaises(ValueError):
            self.proxy.set(loss=1.5)
        with self.assertRaises(ValueError):
            self.proxy.set(delay_ms=-1)

    def test_loss_is_a_stall_of_every_chunk(self):
        s = self.connect()
        round_trip(s)
        before = self.proxy.stats()["stalls"]
        self.proxy.set(loss=1.0)
        # Every chunk each way is held 200-1000 ms: a round trip of 400 ms to 2 s, never less.
        times = [round_trip(s) for _ in range(3)]
        self.assertGreaterEqual(min(times), 0.400, times)
        self.assertLess(max(times), 4.0, times)
        self.assertGreaterEqual(self.proxy.stats()["stalls"] - before, 6)
        self.lab.heal()  # heal() also makes the proxies transparent
        self.assertEqual(self.proxy.settings["loss"], 0)
        self.assertLess(round_trip(s), 0.300)

    def test_200_concurrent_connections(self):
        self.proxy.set(delay_ms=20, jitter_ms=10)
        socks = [self.cl.socket() for _ in range(200)]
        for s in socks:
            self.addCleanup(s.close)
            s.settimeout(10)
            s.connect(("127.0.0.1", self.proxy.port))
        messages = [f"connection {i} says {os.urandom(6).hex()}\n".encode() for i in range(200)]
        for s, m in zip(socks, messages):  # all 200 in flight at once...
            s.sendall(m)
        for s, m in zip(socks, messages):  # ... then every answer checked
            self.assertEqual(recv_exactly(s, len(m), 10.0), m)
        stats = self.proxy.stats()
        self.assertGreaterEqual(stats["accepted"], 200)
        self.assertGreaterEqual(stats["open"], 200)

    def test_order_kept_for_1mib_under_jitter(self):
        self.proxy.set(delay_ms=20, jitter_ms=20)  # chunks 0-40 ms: would overtake if allowed
        s = self.connect()
        data = os.urandom(1 << 20)
        sender = threading.Thread(target=s.sendall, args=(data,))
        sender.start()
        try:
            got = recv_exactly(s, len(data), 30.0)
        finally:
            sender.join()
        self.assertTrue(got == data, "the stream came back reordered or damaged")

    def test_close_of_one_side_closes_the_other(self):
        s = self.connect()
        self.assertEqual(echo(s, b"x"), b"x")
        s.shutdown(socket.SHUT_WR)  # the echo server sees EOF and closes: so must we see EOF
        s.settimeout(5)
        self.assertEqual(s.recv(1), b"")
        self.assertTrue(wait_until(lambda: self.proxy.stats()["open"] == 0, 5))


class CloseTest(unittest.TestCase):
    def test_close_leaves_nothing(self):
        links = root_links()
        lab = netlab.Lab(prefix="ntdt")
        a, b = lab.add_node("a"), lab.add_node("b")
        server = start_echo(self, b)
        proxy = lab.proxy(a, 7001, b.ip, PORT)
        lab.cut(a, b)
        # A process the lab did not start itself: a shell's background child, reparented.
        r = a.run(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], capture_output=True,
                  text=True, check=True)
        orphan = int(r.stdout)
        lock = os.path.join(netlab.LOCK_DIR, lab.tag + ".lock")
        self.assertTrue(os.path.exists(lock))

        lab.close()
        lab.close()  # idempotent
        self.assertEqual(lab_namespaces(lab.tag), [])
        self.assertEqual(root_links(), links)
        self.assertFalse(os.path.exists(lock))
        self.assertEqual(server.returncode, -signal.SIGKILL)
        self.assertIsNotNone(proxy.proc.returncode)
        self.assertTrue(wait_until(lambda: pid_gone(orphan), 5), "the orphan survived close()")
        with self.assertRaises(RuntimeError):
            lab.add_node("c")

    def run_owner(self, body):
        """A child process owning a lab ("ntds" prefix) that prints one JSON line, then runs
        `body`. Returns (proc, the JSON)."""
        script = (
            "import json, os, signal, subprocess, sys, time\n"
            # SIGINT as in an interactive Python, even if our parent shell made us ignore it.
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            f"sys.path.insert(0, {HERE!r})\n"
            "import netlab\n"
            "lab = netlab.Lab(prefix='ntds')\n"
            "a, b = lab.add_node('a'), lab.add_node('b')\n"
            "sleeper = a.popen(['sleep', '300'])\n"
            "proxy = lab.proxy(b, 7001, a.ip, 7000)\n"
            "print(json.dumps({'tag': lab.tag, 'sleeper': sleeper.pid, 'proxy': proxy.pid}),"
            " flush=True)\n" + body)
        proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, bufsize=0)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)

        def reap():  # after a failure: no owner, and so no lab, may outlive the test
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                netlab.cleanup_stale("ntds")
        self.addCleanup(reap)
        return proc, json.loads(read_line(proc))

    def test_cleanup_stale_removes_an_abandoned_lab_only(self):
        live = netlab.Lab(prefix="ntds")  # same prefix, still open: must survive
        self.addCleanup(live.close)
        live.add_node("x")
        # The owner dies without closing (os._exit: no atexit, no close): a crashed run.
        proc, info = self.run_owner("os._exit(0)\n")
        self.assertEqual(proc.wait(timeout=10), 0)
        tag = info["tag"]
        self.assertEqual(len(lab_namespaces(tag)), 3)  # a, b, hub left behind
        # Its proxy ends by itself when its controlling pipe closes with the owner.
        self.assertTrue(wait_until(lambda: pid_gone(info["proxy"]), 5), "the proxy outlived")
        self.assertFalse(pid_gone(info["sleeper"]))

        removed = netlab.cleanup_stale("ntds")
        self.assertEqual(sorted(removed), sorted(f"{tag}-{x}" for x in ("a", "b", "hub")))
        self.assertEqual(lab_namespaces(tag), [])
        self.assertTrue(wait_until(lambda: pid_gone(info["sleeper"]), 5))
        self.assertFalse(os.path.exists(os.path.join(netlab.LOCK_DIR, tag + ".lock")))
        self.assertEqual(sorted(lab_namespaces(live.tag)),
                         [f"{live.tag}-hub", f"{live.tag}-x"])
        self.assertEqual(netlab.cleanup_stale("ntds"), [])

    def test_sigterm_and_sigint_close_the_owners_labs(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                proc, info = self.run_owner("time.sleep(60)\n")
                self.assertEqual(len(lab_namespaces(info["tag"])), 3)
                proc.send_signal(sig)
                status = proc.wait(timeout=15)
                # SIGTERM: the default action once the labs are closed; SIGINT: Python's
                # KeyboardInterrupt (exit status 1).
                self.assertIn(status, (-sig, 1), proc.stderr.read().decode())
                self.assertEqual(lab_namespaces(info["tag"]), [])
                self.assertTrue(wait_until(lambda: pid_gone(info["sleeper"]), 5))
                self.assertTrue(wait_until(lambda: pid_gone(info["proxy"]), 5))


def main():
    try:
        netlab.Lab.probe()
    except RuntimeError as e:  # a failure with the reason, never a skip
        print(f"netlab_test: FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    netlab.cleanup_stale("ntdt")  # labs of an earlier run of these tests that crashed
    netlab.cleanup_stale("ntds")
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
