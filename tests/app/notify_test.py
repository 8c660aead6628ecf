#!/usr/bin/python3
"""systemd's Type=notify protocol against the real binary: with NOTIFY_SOCKET naming a unix
datagram socket the test owns, ticketd sends READY=1 once it serves (a ticket over HTTP right
after it succeeds) and STOPPING=1 when SIGTERM begins the shutdown, in that order, from its own
PID (systemd's default NotifyAccess=main drops anything else). Without NOTIFY_SOCKET it starts
as before (every other test). With storage.engine etcd (NotifyEtcd, a real etcd): a follower
sends READY=1 too, and a deposed leader that re-executes itself sends no STOPPING=1 and a second
READY=1 from the same pid."""
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

ETCD_CONFIG = """
storage:
  engine: etcd
  endpoints: [{endpoint}]
  prefix: /ticketd/notify-test/
  leader_ttl_s: 2
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  users:
    - {{{{ name: ticket, password: ticket }}}}
http:
  listen: 127.0.0.1:{{http_port}}
sequences:
  - {{{{ name: Tickets64, kind: ticket }}}}
"""


class NotifySocket:
    """A unix datagram socket that receives sd_notify messages with the sender's credentials."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ticketd-notify-")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(self.path)

    def receive(self, timeout):
        """(message, sender pid); raises socket.timeout when nothing comes."""
        self.sock.settimeout(timeout)
        data, ancdata, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = None
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, _, _ = struct.unpack("iII", payload[:12])
        return data.decode(), pid

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


class Notify(unittest.TestCase):
    def test_ready_then_stopping_from_the_main_pid(self):
        notify = NotifySocket()
        t = Ticketd()
        os.environ["NOTIFY_SOCKET"] = notify.path
        try:
            t.start(wait=False)
            message, pid = notify.receive(timeout=60)
            self.assertEqual(message, "READY=1", t.log_text())
            self.assertEqual(pid, t.proc.pid)
            self.assertIn("ticketd ready", t.log_text())
            # READY=1 means serving: a ticket at once, no retry.
            req = urllib.request.Request(
                f"http://127.0.0.1:{t.http_port}/v1/sequences/Tickets64/next", data=b"",
                method="POST")
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(json.loads(r.read())["ids"], ["1"])
            t.proc.send_signal(signal.SIGTERM)
            message, pid = notify.receive(timeout=30)
            self.assertEqual(message, "STOPPING=1")
            self.assertEqual(pid, t.proc.pid)
            self.assertEqual(t.proc.wait(timeout=30), 0, t.log_text())
            notify.sock.setblocking(False)
            with self.assertRaises(BlockingIOError):
                notify.sock.recv(4096)  # nothing after STOPPING=1
        finally:
            del os.environ["NOTIFY_SOCKET"]
            t.cleanup()
            notify.close()

    def test_without_notify_socket_it_serves_and_stops_as_before(self):
        self.assertNotIn("NOTIFY_SOCKET", os.environ)
        t = Ticketd()
        try:
            t.start()
            self.assertEqual(t.stop(), 0, t.log_text())
            self.assertNotIn("sd_notify", t.log_text())
        finally:
            t.cleanup()


def role(t):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{t.http_port}/v1/cluster", timeout=1) as r:
            return json.loads(r.read())["role"]
    except (OSError, ValueError, KeyError):
        return None


def wait_role(t, wanted, timeout=30):
    deadline = time.time() + timeout
    while role(t) != wanted:
        if time.time() > deadline:
            raise AssertionError(f"never {wanted}:\n{t.log_text()[-3000:]}")
        time.sleep(0.05)


class NotifyEtcd(unittest.TestCase):
    def start(self, t, notify):
        os.environ["NOTIFY_SOCKET"] = notify.path
        try:
            t.start(wait=False)
        finally:
            del os.environ["NOTIFY_SOCKET"]

    def test_follower_is_ready_and_a_deposed_leader_reexecutes_without_stopping(self):
        from etcd_process import Etcd
        etcd = Etcd().start()
        config = ETCD_CONFIG.format(endpoint=etcd.endpoint)
        a, b = Ticketd(config=config), Ticketd(config=config)
        na, nb = NotifySocket(), NotifySocket()
        try:
            self.start(a, na)
            self.assertEqual(na.receive(timeout=60), ("READY=1", a.proc.pid), a.log_text())
            wait_role(a, "leader")
            self.start(b, nb)
            # READY=1 means up: the follower is ready while the other instance leads.
            self.assertEqual(nb.receive(timeout=60), ("READY=1", b.proc.pid), b.log_text())
            self.assertEqual(role(b), "follower")
            a.proc.send_signal(signal.SIGSTOP)
            wait_role(b, "leader")
            a.proc.send_signal(signal.SIGCONT)
            # Deposed: it shuts down, execs itself in place and is READY=1 again as a follower.
            self.assertEqual(na.receive(timeout=60), ("READY=1", a.proc.pid), a.log_text())
            wait_role(a, "follower")
            self.assertIn("re-executing as a follower", a.log_text())
            for t, n in ((a, na), (b, nb)):
                t.proc.send_signal(signal.SIGTERM)
                self.assertEqual(n.receive(timeout=30), ("STOPPING=1", t.proc.pid))
                self.assertEqual(t.proc.wait(timeout=30), 0, t.log_text())
            with self.assertRaises(socket.timeout):
                nb.receive(timeout=0.2)  # becoming leader sent nothing
        finally:
            a.proc and a.proc.send_signal(signal.SIGCONT)
            a.cleanup()
            b.cleanup()
            na.close()
            nb.close()
            etcd.cleanup()


if __name__ == "__main__":
    unittest.main()
