#!/usr/bin/python3
"""systemd's Type=notify protocol against the real binary: with NOTIFY_SOCKET naming a unix
datagram socket the test owns, ticketd sends READY=1 once it serves (a ticket over HTTP right
after it succeeds) and STOPPING=1 when SIGTERM begins the shutdown, in that order, from its own
PID (systemd's default NotifyAccess=main drops anything else). Without NOTIFY_SOCKET it starts
as before (every other test)."""
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
