"""Starts a real ticketd on loopback for tests: free ports, temporary data dir, log capture."""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

BINARY = os.environ.get("TICKETD_BINARY", "build/ticketd")


# Ports for listeners are taken below the kernel's ephemeral range: a port the kernel handed out
# with bind(0) and that we then released is soon handed out again as the local end of some other
# test's client connection, and the listener that wanted it fails with "Address already in use"
# (seen in CI under ctest -j). A port is reserved across processes of one machine by a file created
# with O_EXCL; reservations older than RESERVATION_TTL_S are free again.
PORT_RANGE = (12000, 32000)
RESERVATION_DIR = os.path.join(tempfile.gettempdir(), "ticketd-test-ports")
RESERVATION_TTL_S = 3600


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def _reserve(port):
    os.makedirs(RESERVATION_DIR, exist_ok=True)
    path = os.path.join(RESERVATION_DIR, str(port))
    try:
        if time.time() - os.stat(path).st_mtime > RESERVATION_TTL_S:
            os.unlink(path)
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def free_port():
    """A loopback TCP port nobody listens on, outside the ephemeral range, reserved for this
    caller for an hour so that no other test process picks it meanwhile."""
    low, high = PORT_RANGE
    eph_low, eph_high = _ephemeral_range()
    for _ in range(10000):
        port = random.randrange(low, high)
        if eph_low <= port <= eph_high or not _reserve(port):
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free loopback port outside the ephemeral range")


class Ticketd:
    """One ticketd process. `config` is YAML text; {data_dir}, {mysql_port} and {http_port} are
    filled in."""

    DEFAULT_CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: ticket, password: ticket }}
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Tickets64, kind: ticket }}
  - {{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295 }}
"""

    def __init__(self, config=None, data_dir=None, binary=BINARY, extra_args=(), preexec_fn=None,
                 env=None):
        self.binary = binary
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="ticketd-test-")
        self.mysql_port = free_port()
        self.http_port = free_port()
        self.config_text = (config or self.DEFAULT_CONFIG).format(
            data_dir=self.data_dir, mysql_port=self.mysql_port, http_port=self.http_port)
        fd, self.config_path = tempfile.mkstemp(prefix="ticketd-", suffix=".yaml")
        with os.fdopen(fd, "w") as f:
            f.write(self.config_text)
        self.extra_args = list(extra_args)
        self.preexec_fn = preexec_fn  # e.g. lowers RLIMIT_NOFILE in the child
        # Added to the environment of the child, e.g. LD_PRELOAD and FAKETIME for libfaketime
        # (preloaded directly: the `faketime` wrapper forks, so a signal would miss ticketd).
        self.env = dict(os.environ, **env) if env else None
        self.proc = None
        self.log = None
        self.log_path = self.config_path + ".log"

    def start(self, wait=True):
        if self.log:
            self.log.close()
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "--config", self.config_path] + self.extra_args,
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=self.preexec_fn, env=self.env)
        if wait:
            self.wait_ready()
        return self

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ticketd exited with {self.proc.returncode}:\n{self.log_text()}")
            if "ticketd ready" in self.log_text() and self._port_open(self.mysql_port):
                return
            time.sleep(0.02)
        raise RuntimeError("ticketd did not become ready:\n" + self.log_text())

    def _port_open(self, port):
        if "mysql listening" not in self.log_text():
            return True  # no MySQL front end in this build
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def cleanup(self):
        self.stop()
        if self.log:
            self.log.close()
            self.log = None
        if self.own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        for p in (self.config_path, self.log_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
