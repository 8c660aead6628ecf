"""netlab: a private network of Linux network namespaces for nemesis tests, with real faults.

Each process of a nemesis test (an etcd member, a ticketd server, the client driver) runs in a
network namespace of its own, and the namespaces are wired to one bridge. A fault is then real
packet loss between namespaces while every process keeps running, unaware of the test:

    root namespace        untouched: no interface, address or route of the lab
    <tag>-hub             br0, a bridge; its ports v1, v2, ...;
                          the "sink" 10.213.N.254/32 on br0 (see "Cuts" below)
    <tag>-<name>          lo, and eth0 = 10.213.N.k/24, the other end of vk

    with Lab() as lab:
        a, b = lab.add_node("a"), lab.add_node("b")
        server = b.popen(["my-server", "--listen", f"{b.ip}:7000"])
        lab.cut(a, b)                 # a and b no longer see each other's packets
        lab.heal()                    # every cut undone
        p = lab.proxy(a, 7001, b.ip, 7000)   # in a: 127.0.0.1:7001 and a.ip:7001 -> b:7000
        p.set(delay_ms=200, jitter_ms=100, loss=0.1)

The tag is the prefix plus four random hex digits, so labs on one machine (even two at once)
never share a namespace. The /24 is 10.213.N.0/24 with N chosen so that nothing in the root
namespace (an address or a route) overlaps it: the lab's addresses exist only inside its own
namespaces, so two labs may even use the same N without seeing each other.

Cuts. The machine these tests run on has no sch_netem, no tc drop actions, no dummy interfaces
and no iptables/nftables, so a cut is made with routes. A `blackhole` route in the sender's own
namespace is not good enough: a connect() that meets one fails at once with EINVAL, while a real
partition is silence (checked on this kernel). So the hub doubles as a sink: br0 holds
10.213.N.254/32, the hub forwards (ip_forward on) and routes 10.213.N.0/24 to a blackhole.
Cutting a from b adds, in a's namespace, the route "b.ip/32 via the sink" and in b's namespace
"a.ip/32 via the sink" (one `ip -batch` per namespace for a whole partition). A packet between
them then leaves normally, reaches the hub and is dropped there without an ICMP error (a
blackhole hit while forwarding is a silent drop). A new connect() times out; an established
connection stalls with its data retransmitted into the void, no RST, no error, until the cut
is healed (the route removed) and TCP's next retransmission gets through.

Delay and loss: Lab.proxy() starts delay_proxy.py in a node's namespace (see its docstring).
TCP data cannot be dropped by a proxy; a "lost" chunk is held 200 to 1000 ms, as a lost segment
costs TCP one retransmission timeout.

Processes: Node.popen() runs `ip netns exec <ns> argv...`; `ip netns exec` enters the namespace
and exec()s the program in place (iproute2 forks only in -batch mode; checked with 6.1, and by
netlab_test.py), so Popen.pid is the program's pid: SIGSTOP/SIGCONT/SIGKILL sent to it reach the
program itself. wait_stopped(pid) waits until a SIGSTOP has stopped every thread. The test
process itself can talk to the lab without a process of its own in it: Node.socket() and
Node.create_connection() make sockets inside a node's namespace (from a thread that setns()es).

Clean-up. Lab.close() (also run by the context manager, at exit and on SIGTERM/SIGINT) kills
every process in the lab's namespaces, deletes the veths, the bridge and the namespaces. A lab
holds an flock on /run/netlab/<tag>.lock for its lifetime; cleanup_stale(prefix) removes the
namespaces of labs whose lock is free, that is whose owner died without closing them.

Everything needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2. Lab.probe() checks that
and raises RuntimeError with the reason: callers fail with it, they do not skip.
"""
import atexit
import ctypes
import fcntl
import ipaddress
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROXY_SCRIPT = os.path.join(HERE, "delay_proxy.py")
LOCK_DIR = "/run/netlab"  # one <tag>.lock per live lab (see cleanup_stale)
NETNS_DIR = "/run/netns"  # where `ip netns add` bind-mounts the namespaces
CLONE_NEWNET = 0x40000000
SUBNET_SECOND_OCTET = 213  # lab subnets are 10.213.N.0/24
SINK_HOST = 254  # 10.213.N.254: the hub's silent sink, the gateway of cut routes
MAX_NODES = 253  # node addresses are .1 to .253
BRIDGE = "br0"
HUB = "hub"  # reserved node name: the hub namespace is <tag>-hub
NODE_IF = "eth0"  # the node's end of its veth
PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,15}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,31}$")
PROCESS_EXIT_TIMEOUT_S = 5.0


def _find_ip():
    """The absolute path of iproute2's `ip` (so a caller's env without PATH cannot lose it)."""
    found = shutil.which("ip") or shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin")
    return found or "ip"


IP = _find_ip()


# ---- small helpers around `ip` ---------------------------------------------------------------

def _run(argv, input_text=None, check=True, timeout=30):
    """Runs a command, returns its CompletedProcess; raises RuntimeError with its stderr when it
    fails and `check` is set."""
    try:
        r = subprocess.run(argv, input=input_text, capture_output=True, text=True,
                           timeout=timeout)
    except FileNotFoundError as e:
        raise RuntimeError(f"{argv[0]}: not found ({e})") from None
    if check and r.returncode != 0:
        detail = (r.stderr or r.stdout).strip()
        raise RuntimeError(f"`{' '.join(argv)}` failed ({r.returncode}): {detail}")
    return r


def _ip(*args, ns=None, check=True, input_text=None):
    """`ip [-n ns] args...`."""
    argv = [IP] + (["-n", ns] if ns else []) + list(args)
    return _run(argv, input_text=input_text, check=check)


def _ip_batch(ns, commands):
    """Several `ip` commands in one namespace, in one process (`ip -n ns -batch -`)."""
    if commands:
        _ip("-batch", "-", ns=ns, input_text="".join(c + "\n" for c in commands))


def _netns_names():
    """Every named network namespace (`ip netns list`)."""
    r = _ip("netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _netns_pids(ns):
    """The pids of the processes whose network namespace is `ns`."""
    r = _ip("netns", "pids", ns, check=False)
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def _kill_netns_processes(namespaces, timeout=PROCESS_EXIT_TIMEOUT_S):
    """SIGKILLs every process in the given namespaces until none is left (or `timeout`).
    Returns the pids still there at the end (normally none)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for ns in namespaces for pid in _netns_pids(ns)]
        if not left or time.monotonic() > deadline:
            return left
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


_libc = None


def _setns(path):
    """Moves the calling thread into the network namespace bound at `path`."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def _call_in_netns(path, fn, *args):
    """Runs fn(*args) in a short-lived thread that entered the namespace at `path`, and returns
    its result. Network namespaces are per thread, so the caller's threads stay where they are;
    a socket created there belongs to that namespace for its whole life, whichever thread then
    uses it."""
    result = {}

    def body():
        try:
            _setns(path)
            result["value"] = fn(*args)
        except BaseException as e:  # handed to the caller
            result["error"] = e

    t = threading.Thread(target=body, name=f"netns {os.path.basename(path)}", daemon=True)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def _root_networks():
    """The IPv4 networks the root namespace already uses (addresses and non-default routes)."""
    nets = []
    for args in (("-4", "-j", "addr", "show"), ("-4", "-j", "route", "show", "table", "all")):
        r = _ip(*args, check=False)
        try:
            entries = json.loads(r.stdout or "[]")
        except ValueError:
            continue
        for e in entries:
            if "addr_info" in e:
                for a in e["addr_info"]:
                    nets.append(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}",
                                                     strict=False))
            elif e.get("dst") and e["dst"] != "default":
                try:
                    nets.append(ipaddress.ip_network(e["dst"], strict=False))
                except ValueError:
                    pass
    return nets


def _pick_subnet():
    """A random 10.213.N.0/24 that overlaps nothing in the root namespace."""
    used = _root_networks()
    candidates = list(range(1, 255))
    random.SystemRandom().shuffle(candidates)
    for n in candidates:
        net = ipaddress.ip_network(f"10.{SUBNET_SECOND_OCTET}.{n}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError(f"no free 10.{SUBNET_SECOND_OCTET}.N.0/24 in the root namespace")


# ---- exit hooks: close every open lab at exit and on SIGTERM/SIGINT -----------------------------

_open_labs = set()
_open_labs_lock = threading.RLock()
_hooks_installed = False


def _close_all_labs():
    with _open_labs_lock:
        labs = list(_open_labs)
    for lab in labs:
        try:
            lab.close()
        except Exception as e:  # at exit or in a signal handler: report, go on with the next
            print(f"netlab: closing {lab.tag}: {e}", file=sys.stderr)


def _on_signal(signum, frame):
    """Closes the labs, then does what the signal would have done without us."""
    _close_all_labs()
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)  # SIGINT's default raises KeyboardInterrupt
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


_previous_handlers = {}


def _install_exit_hooks():
    global _hooks_installed
    with _open_labs_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_close_all_labs)
    if threading.current_thread() is threading.main_thread():  # signal.signal's requirement
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)
            if previous == signal.SIG_IGN:
                continue  # an ignored signal stays ignored
            _previous_handlers[sig] = previous
            signal.signal(sig, _on_signal)


# ---- the lab -----------------------------------------------------------------------------------

class Node:
    """One network namespace of a lab, with eth0 = `ip` on the lab's bridge."""

    def __init__(self, lab, name, index, ip):
        self.lab = lab
        self.name = name
        self.index = index
        self.ip = ip  # str, e.g. "10.213.7.1"
        self.ns = f"{lab.tag}-{name}"
        self.hub_if = f"v{index}"  # its veth peer, a port of the hub's bridge

    def __repr__(self):
        return f"Node({self.name!r}, ns={self.ns!r}, ip={self.ip!r})"

    @property
    def netns_path(self):
        return os.path.join(NETNS_DIR, self.ns)

    def _argv(self, argv, shell, kwargs):
        """The `ip netns exec` command line for argv; checks argv like Popen would."""
        self.lab._check_open()
        if "executable" in kwargs:
            raise TypeError("the program runs through `ip netns exec`: put it in argv, "
                            "not in executable=")
        if shell:
            if not isinstance(argv, str):
                raise TypeError("with shell=True, argv must be a string")
            return [IP, "netns", "exec", self.ns, "/bin/sh", "-c", argv]
        if isinstance(argv, (str, bytes)):
            argv = [argv]
        argv = [os.fspath(a) for a in argv]
        if not argv:
            raise ValueError("empty argv")
        self._check_program(argv[0], kwargs.get("env"))
        return [IP, "netns", "exec", self.ns] + argv

    @staticmethod
    def _check_program(program, env):
        """Raises FileNotFoundError as Popen would, instead of `ip` failing in the child."""
        path = (env or os.environ).get("PATH", os.defpath)
        if shutil.which(program, path=path) is None:
            raise FileNotFoundError(2, "No such file or directory", program)

    def popen(self, argv, shell=False, **kwargs):
        """subprocess.Popen(argv, **kwargs), the program running in this namespace. The
        returned Popen's pid is the program's own pid (`ip netns exec` replaces itself with the
        program), so signals sent to it reach the program. With shell=True, argv is a string
        run by /bin/sh -c and the pid is the shell's. The lab kills it at close() if it still
        runs."""
        proc = subprocess.Popen(self._argv(argv, shell, kwargs), **kwargs)
        self.lab._track(proc)
        return proc

    def run(self, argv, shell=False, **kwargs):
        """subprocess.run(argv, **kwargs) in this namespace (for short commands)."""
        return subprocess.run(self._argv(argv, shell, kwargs), **kwargs)

    def socket(self, family=socket.AF_INET, type=socket.SOCK_STREAM, proto=0):
        """A socket created in this namespace (usable from any thread of the caller): lets a
        test talk to the lab without a process of its own in it."""
        self.lab._check_open()
        return _call_in_netns(self.netns_path, socket.socket, family, type, proto)

    def create_connection(self, address, timeout=None):
        """A TCP connection from this namespace to `address` (host, port), like
        socket.create_connection: raises TimeoutError/OSError when it cannot be made."""
        sock = self.socket()
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except BaseException:
            sock.close()
            raise
        return sock


class Proxy:
    """A delay_proxy.py process in a node's namespace: node.ip:port and 127.0.0.1:port forward
    to the target. set() changes its delay/jitter/loss; it is in force once set() returns."""

    REPLY_TIMEOUT_S = 10.0

    def __init__(self, lab, node, listen_port, target_ip, target_port, seed=None):
        self.lab = lab
        self.node = node
        self.target = (target_ip, int(target_port))
        self._lock = threading.Lock()
        self._buf = b""
        self._ids = 0
        self.settings = {"delay_ms": 0.0, "jitter_ms": 0.0, "loss": 0.0}
        argv = [sys.executable, PROXY_SCRIPT, "--listen", f"{node.ip}:{int(listen_port)}",
                "--listen", f"127.0.0.1:{int(listen_port)}", "--target",
                f"{target_ip}:{int(target_port)}"]
        if seed is not None:
            argv += ["--seed", str(int(seed))]
        # stdin is the control channel and the lifeline: at its end (the lab closed it, or this
        # process died) the proxy exits. bufsize=0: raw pipes, so select() sees every byte.
        self.proc = node.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        try:
            ready = self._read_reply(time.monotonic() + self.REPLY_TIMEOUT_S)
        except Exception:
            self.close()
            raise
        if not ready.get("ready"):
            self.close()
            raise RuntimeError(f"proxy in {node.name} did not start: {ready.get('error')}")
        self.port = ready["port"]
        self.pid = self.proc.pid

    def __repr__(self):
        return (f"Proxy({self.node.name}:{getattr(self, 'port', '?')} -> "
                f"{self.target[0]}:{self.target[1]}, {self.settings})")

    @property
    def address(self):
        """Where clients outside the node connect: (node.ip, port)."""
        return (self.node.ip, self.port)

    def set(self, delay_ms=0, jitter_ms=0, loss=0.0):
        """Delays every chunk in each direction by delay_ms +- jitter_ms (uniform, never below
        0); with probability `loss` a chunk is held 200-1000 ms more (an emulated loss: a TCP
        retransmission stall; bytes are never dropped). Order within a connection is kept.
        set() with no arguments makes the proxy transparent again. In force when set() returns
        (the proxy acknowledges it), for the data it reads from then on."""
        if delay_ms < 0 or jitter_ms < 0:
            raise ValueError("delay_ms and jitter_ms must be >= 0")
        if not 0.0 <= loss <= 1.0:
            raise ValueError("loss must be within [0, 1]")
        r = self._request({"cmd": "set", "delay_ms": delay_ms, "jitter_ms": jitter_ms,
                           "loss": loss})
        self.settings = r["settings"]

    def stats(self):
        """{"accepted", "open", "stalls", ...}: counters of the proxy (for logs)."""
        return self._request({"cmd": "stats"})["stats"]

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        """Stops the proxy (idempotent): end of stdin, then SIGKILL if it lingers."""
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout and not self.proc.stdout.closed:
            self.proc.stdout.close()
        self.lab._forget_proxy(self)

    def _request(self, obj):
        with self._lock:
            if self.proc.poll() is not None or self.proc.stdin.closed:
                raise RuntimeError(f"proxy in {self.node.name} is not running "
                                   f"(status {self.proc.returncode})")
            self._ids += 1
            obj = dict(obj, id=self._ids)
            data = (json.dumps(obj) + "\n").encode()
            try:
                self.proc.stdin.write(data)  # a few dozen bytes: one write on a raw pipe
            except BrokenPipeError:
                raise RuntimeError(f"proxy in {self.node.name} exited "
                                   f"(status {self.proc.poll()})") from None
            deadline = time.monotonic() + self.REPLY_TIMEOUT_S
            while True:
                reply = self._read_reply(deadline)
                if reply.get("id") == obj["id"]:
                    break
            if not reply.get("ok"):
                raise RuntimeError(f"proxy in {self.node.name}: {reply.get('error')}")
            return reply

    def _read_reply(self, deadline):
        """The next JSON line from the proxy's stdout."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"proxy in {self.node.name} did not answer")
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"proxy in {self.node.name} exited "
                                   f"(status {self.proc.wait()})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)


class Lab:
    """A set of network namespaces on one bridge, and the faults between them.

    Lab(prefix="ntd", subnet=None): the tag is prefix + 4 hex digits; subnet (an IPv4 /24 as a
    string) overrides the choice of 10.213.N.0/24. Use as a context manager or call close();
    open labs are also closed at exit and on SIGTERM/SIGINT.
    """

    def __init__(self, prefix="ntd", subnet=None):
        if not PREFIX_RE.match(prefix):
            raise ValueError(f"prefix {prefix!r}: 1 to 16 of [a-z0-9], starting with a letter")
        self.prefix = prefix
        self.nodes = {}  # name -> Node, in creation order
        self._lock = threading.RLock()
        self._cuts = set()  # frozenset({name, name}) per cut pair
        self._procs = []  # every Popen started in the lab
        self._proxies = []
        self._closed = False
        self.tag, self._lock_fd = self._claim_tag(prefix)
        self.hub_ns = f"{self.tag}-{HUB}"
        _install_exit_hooks()
        with _open_labs_lock:
            _open_labs.add(self)
        try:
            self.subnet = ipaddress.ip_network(subnet) if subnet else _pick_subnet()
            if self.subnet.prefixlen != 24 or self.subnet.version != 4:
                raise ValueError(f"subnet {subnet}: an IPv4 /24 expected")
            self.sink_ip = str(self.subnet.network_address + SINK_HOST)
            self._make_hub()
        except BaseException:
            self.close()
            raise

    def __repr__(self):
        return f"Lab({self.tag}, {self.subnet}, nodes={list(self.nodes)})"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- set-up ------------------------------------------------------------------------------

    @staticmethod
    def _claim_tag(prefix):
        """A tag no other lab uses, and the descriptor of its lock file, created and flock()ed
        for the lab's lifetime (see cleanup_stale)."""
        os.makedirs(LOCK_DIR, exist_ok=True)
        existing = _netns_names()
        rng = random.SystemRandom()
        for _ in range(100):
            tag = f"{prefix}{rng.randrange(1 << 16):04x}"
            if any(n.startswith(tag + "-") for n in existing):
                continue
            try:
                fd = os.open(os.path.join(LOCK_DIR, tag + ".lock"),
                             os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, f"{os.getpid()}\n".encode())  # for people reading /run/netlab
            return tag, fd
        raise RuntimeError(f"no free lab tag with prefix {prefix!r}")

    def _make_hub(self):
        _ip("netns", "add", self.hub_ns)
        _ip_batch(self.hub_ns, [
            "link set lo up",
            f"link add {BRIDGE} type bridge",
            f"link set {BRIDGE} addrgenmode none",  # no IPv6 link-local chatter on the lab
            f"link set {BRIDGE} up",
            # The sink: cut routes point at this address; what reaches it to be forwarded meets
            # the blackhole below and is dropped without an ICMP error.
            f"addr add {self.sink_ip}/32 dev {BRIDGE}",
            f"route add blackhole {self.subnet}",
        ])
        _call_in_netns(os.path.join(NETNS_DIR, self.hub_ns), _write_file,
                       "/proc/sys/net/ipv4/ip_forward", "1")

    def add_node(self, name):
        """A new namespace <tag>-<name> with lo up and eth0 = the next address on the bridge."""
        with self._lock:
            self._check_open()
            if not NAME_RE.match(name) or name == HUB:
                raise ValueError(f"node name {name!r}: [A-Za-z0-9_.], at most 32, not {HUB!r}")
            if name in self.nodes:
                raise ValueError(f"node {name!r} exists already")
            index = len(self.nodes) + 1
            if index > MAX_NODES:
                raise ValueError(f"at most {MAX_NODES} nodes")
            node = Node(self, name, index, str(self.subnet.network_address + index))
            _ip("netns", "add", node.ns)
            self.nodes[name] = node  # from here on close() removes it
            # The pair is created in the hub, its other end straight in the node: no lab
            # interface ever appears in the root namespace, not even for a moment.
            _ip_batch(self.hub_ns, [
                f"link add {node.hub_if} type veth peer name {NODE_IF} netns {node.ns}",
                f"link set {node.hub_if} addrgenmode none",
                f"link set {node.hub_if} master {BRIDGE}",
                f"link set {node.hub_if} up",
            ])
            _ip_batch(node.ns, [
                "link set lo up",
                f"link set {NODE_IF} addrgenmode none",
                f"addr add {node.ip}/{self.subnet.prefixlen} dev {NODE_IF}",
                f"link set {NODE_IF} up",
            ])
            # A node may open a connection per request, thousands a second (the nemesis
            # clients do): with TIME_WAIT ports never reused the namespace runs out of
            # ephemeral ports within a minute, and connect() fails with EADDRNOTAVAIL as if
            # the server were down. tcp_tw_reuse=1 reuses them for outgoing connections after
            # 1 s (the root namespace's default, 2, does so on loopback only).
            _run([IP, "netns", "exec", node.ns, "/bin/sh", "-c",
                  "echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse"])
            return node

    def node(self, name):
        return self.nodes[name]

    def _node(self, n):
        if isinstance(n, Node):
            if n.lab is not self:
                raise ValueError(f"{n!r} belongs to another lab")
            return n
        return self.nodes[n]

    # ---- processes ---------------------------------------------------------------------------

    def _track(self, proc):
        with self._lock:
            self._procs = [p for p in self._procs if p.returncode is None]
            self._procs.append(proc)

    def _forget_proxy(self, proxy):
        with self._lock:
            if proxy in self._proxies:
                self._proxies.remove(proxy)

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"lab {self.tag} is closed")

    # ---- faults ------------------------------------------------------------------------------

    def _set_cuts(self, add=(), remove=()):
        """Adds and removes cut pairs (sets of two names), one `ip -batch` per namespace."""
        with self._lock:
            self._check_open()
            add = {p for p in add if p not in self._cuts}
            remove = {p for p in remove if p in self._cuts}
            commands = {}
            for pair, verb in [(p, "replace") for p in add] + [(p, "del") for p in remove]:
                a, b = (self.nodes[n] for n in sorted(pair))
                for here, there in ((a, b), (b, a)):
                    route = f"route {verb} {there.ip}/32"
                    if verb == "replace":
                        route += f" via {self.sink_ip} dev {NODE_IF}"
                    commands.setdefault(here.ns, []).append(route)
            for ns, lines in commands.items():
                _ip_batch(ns, lines)
            self._cuts |= add
            self._cuts -= remove

    def cut(self, a, b):
        """No packet between nodes a and b, either way (idempotent). Established connections
        between them stall silently; new ones time out."""
        a, b = self._node(a), self._node(b)
        if a is b:
            raise ValueError(f"cannot cut {a.name} from itself")
        self._set_cuts(add=[frozenset((a.name, b.name))])

    def uncut(self, a, b):
        """Undoes cut(a, b) (idempotent)."""
        a, b = self._node(a), self._node(b)
        self._set_cuts(remove=[frozenset((a.name, b.name))])

    def partition(self, group_a, group_b):
        """Cuts every node of group_a from every node of group_b (within a group: untouched)."""
        ga = {self._node(n).name for n in group_a}
        gb = {self._node(n).name for n in group_b}
        if ga & gb:
            raise ValueError(f"a node on both sides of a partition: {sorted(ga & gb)}")
        self._set_cuts(add=[frozenset((x, y)) for x in ga for y in gb])

    def isolate(self, node):
        """Cuts `node` from every other node there is now (nodes added later are not cut)."""
        node = self._node(node)
        self.partition([node], [n for n in self.nodes.values() if n is not node])

    def heal(self, proxies=True):
        """Removes every cut; with `proxies` (the default) also makes every proxy transparent
        again, so that no fault is left. Stalled connections resume at TCP's next
        retransmission (if TCP has not given up in the meantime)."""
        self._set_cuts(remove=list(self._cuts))
        if proxies:
            for p in list(self._proxies):
                if p.alive():  # a proxy the test killed on purpose stays dead
                    p.set()

    def cuts(self):
        """The pairs cut now, as a set of (name, name) tuples sorted within each pair."""
        with self._lock:
            return {tuple(sorted(p)) for p in self._cuts}

    def proxy(self, node, listen_port, target_ip, target_port, seed=None):
        """A delaying TCP proxy in `node`'s namespace on node.ip:listen_port and
        127.0.0.1:listen_port, forwarding to target_ip:target_port; transparent until set().
        listen_port 0 picks a free port (Proxy.port). `seed` makes its random draws
        repeatable."""
        node = self._node(node)
        with self._lock:
            self._check_open()
        p = Proxy(self, node, listen_port, target_ip, target_port, seed=seed)
        with self._lock:
            self._proxies.append(p)
        return p

    # ---- teardown ----------------------------------------------------------------------------

    def close(self):
        """Kills every process in the lab's namespaces and deletes the proxies, veths, bridge
        and namespaces (idempotent). Raises RuntimeError if something could not be removed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            problems = []
            for p in list(self._proxies):
                if p.proc.stdin and not p.proc.stdin.closed:
                    try:
                        p.proc.stdin.close()  # ends it; the kill below makes sure
                    except OSError:
                        pass
            namespaces = [n.ns for n in self.nodes.values()] + [self.hub_ns]
            existing = set(_netns_names())
            namespaces = [ns for ns in namespaces if ns in existing]
            # A process still being started (`ip` not yet in its namespace) is not listed by
            # `ip netns pids`: kill the ones we started by pid as well.
            for proc in self._procs:
                if proc.poll() is None:
                    try:
                        proc.kill()
                    except ProcessLookupError:
                        pass
            left = _kill_netns_processes(namespaces)
            if left:
                problems.append(f"processes still running: {left}")
            for proc in self._procs:
                try:
                    proc.wait(timeout=PROCESS_EXIT_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    problems.append(f"pid {proc.pid} did not exit")
            for p in list(self._proxies):
                if p.proc.stdout and not p.proc.stdout.closed:
                    p.proc.stdout.close()
            self._proxies.clear()
            # Deleting a veth deletes its pair; do it explicitly rather than leave it to the
            # namespace's (asynchronous) destruction.
            if self.hub_ns in existing:
                links = [f"link del {n.hub_if}" for n in self.nodes.values()]
                for line in links + [f"link del {BRIDGE}"]:
                    r = _ip(*line.split(), ns=self.hub_ns, check=False)
                    if r.returncode != 0 and "Cannot find device" not in r.stderr:
                        problems.append(r.stderr.strip())
            for ns in namespaces:
                r = _ip("netns", "del", ns, check=False)
                if r.returncode != 0:
                    problems.append(f"ip netns del {ns}: {r.stderr.strip()}")
            self._cuts.clear()
            remaining = [n for n in _netns_names() if n.startswith(self.tag + "-")]
            if remaining:
                problems.append(f"namespaces left: {remaining}")
            self._release_lock()
        with _open_labs_lock:
            _open_labs.discard(self)
        if problems:
            raise RuntimeError(f"lab {self.tag} not entirely removed: " + "; ".join(problems))

    def _release_lock(self):
        if self._lock_fd is None:
            return
        try:
            os.unlink(os.path.join(LOCK_DIR, self.tag + ".lock"))
        except FileNotFoundError:
            pass
        os.close(self._lock_fd)  # releases the flock
        self._lock_fd = None

    # ---- capability check --------------------------------------------------------------------

    @staticmethod
    def probe():
        """Checks that this machine can host a lab: namespaces, a bridge, a veth pair between
        two namespaces, `ip netns exec` and setns(). Raises RuntimeError naming what is
        missing; returns None when all is there."""
        if os.geteuid() != 0:
            raise RuntimeError("netlab needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for network "
                               f"namespaces; running as uid {os.geteuid()}")
        if shutil.which(IP) is None:
            raise RuntimeError("netlab needs iproute2's `ip`, which is not installed")
        tag = f"nlprobe{random.SystemRandom().randrange(1 << 16):04x}"
        a, b = f"{tag}-a", f"{tag}-b"
        steps = [
            ("create a network namespace", lambda: _ip("netns", "add", a)),
            ("create a second network namespace", lambda: _ip("netns", "add", b)),
            ("create a bridge in a namespace",
             lambda: _ip("link", "add", BRIDGE, "type", "bridge", ns=a)),
            ("create a veth pair across two namespaces",
             lambda: _ip("link", "add", "v1", "type", "veth", "peer", "name", NODE_IF,
                         "netns", b, ns=a)),
            ("attach a veth to a bridge and bring links up",
             lambda: _ip_batch(a, [f"link set v1 master {BRIDGE}", "link set v1 up",
                                   f"link set {BRIDGE} up"])),
            ("run a program in a namespace (ip netns exec)",
             lambda: _run([IP, "netns", "exec", b, "true"])),
            ("enter a namespace with setns()",
             lambda: _call_in_netns(os.path.join(NETNS_DIR, b), socket.socket).close()),
        ]
        try:
            for what, step in steps:
                try:
                    step()
                except (RuntimeError, OSError) as e:
                    raise RuntimeError(f"netlab cannot {what} on this machine: {e}") from None
        finally:
            for ns in (a, b):
                _ip("netns", "del", ns, check=False)


def _write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def wait_stopped(pid, timeout=5.0):
    """Waits until every thread of process `pid` is stopped (state T), e.g. after SIGSTOP;
    returns whether it is. kill() only queues the signal: the threads of a multi-threaded
    program stop one after the other, as they are scheduled, and one of them can still answer a
    request in the meantime."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            return False  # no such process
        states = []
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                pass  # a thread that just ended
        if states and all(s in ("T", "t") for s in states):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def cleanup_stale(prefix):
    """Deletes the namespaces of labs with this prefix whose owner died without closing them
    (their lock in /run/netlab is free), after SIGKILLing the processes in them. Labs still
    open, in this process or another, are left alone. Returns the namespaces deleted."""
    pattern = re.compile(rf"^({re.escape(prefix)}[0-9a-f]{{4}})-")
    tags = {}
    for name in _netns_names():
        m = pattern.match(name)
        if m:
            tags.setdefault(m.group(1), []).append(name)
    if os.path.isdir(LOCK_DIR):  # lock files of labs that left no namespace
        for f in os.listdir(LOCK_DIR):
            if f.endswith(".lock") and pattern.match(f[:-len(".lock")] + "-"):
                tags.setdefault(f[:-len(".lock")], [])
    removed = []
    for tag, namespaces in sorted(tags.items()):
        path = os.path.join(LOCK_DIR, tag + ".lock")
        fd = None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            pass  # no lock file: nobody can own these namespaces
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its owner is alive
            left = _kill_netns_processes(namespaces)
            if left:
                raise RuntimeError(f"stale lab {tag}: processes do not die: {left}")
            for ns in namespaces:
                r = _ip("netns", "del", ns, check=False)
                if r.returncode != 0 and ns in _netns_names():
                    raise RuntimeError(f"stale lab {tag}: ip netns del {ns}: {r.stderr.strip()}")
                removed.append(ns)
            if fd is not None:
                os.unlink(path)
        finally:
            if fd is not None:
                os.close(fd)
    return removed
