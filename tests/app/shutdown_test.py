#!/usr/bin/python3
"""Every exit is clean: a SIGTERM while a session is stuck writing to a client that never reads
(past the 10 s drain deadline) still exits 0, without touching freed objects (the ASan build
runs this too and fails on any report)."""
import os
import socket
import struct
import sys
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

import pymysql  # noqa: E402


def com_query(sql):
    payload = b"\x03" + sql.encode()
    return struct.pack("<I", len(payload))[:3] + b"\x00" + payload


class Shutdown(unittest.TestCase):
    def test_sigterm_with_a_session_stuck_writing_exits_cleanly(self):
        t = Ticketd()
        try:
            t.start()
            conn = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="app",
                                   password="s3cret-app", database="tickets", autocommit=True)
            sock = conn._sock  # logged in; from here on raw packets, and never read a reply
            sock.setblocking(False)
            packet = com_query("SELECT NEXTVAL(Tickets64), @@version_comment, @@version")
            sent = 0
            deadline = time.time() + 20
            stalled_since = None
            while time.time() < deadline:
                try:
                    sock.send(packet)
                    sent += 1
                    stalled_since = None
                except BlockingIOError:
                    # Both directions' buffers are full: ticketd is stuck in a write.
                    stalled_since = stalled_since or time.time()
                    if time.time() - stalled_since > 1.0:
                        break
                    time.sleep(0.01)
            self.assertIsNotNone(stalled_since, f"never stalled after {sent} queries")
            # A second, ordinary connection is served meanwhile.
            other = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="app",
                                    password="s3cret-app", database="tickets", autocommit=True)
            with other.cursor() as cur:
                cur.execute("SELECT NEXTVAL(Tickets64)")
                self.assertGreater(int(cur.fetchone()[0]), 0)
            other.close()
            started = time.time()
            rc = t.stop(timeout=60)
            took = time.time() - started
            log = t.log_text()
            self.assertEqual(rc, 0, log[-3000:])
            self.assertLess(took, 30, "shutdown must not wait for the stuck client's deadline")
            self.assertIn("ticketd stopped", log)
            self.assertNotIn("AddressSanitizer", log)
            self.assertNotIn("runtime error", log)
            sock.close()
        finally:
            t.cleanup()


STRICT_CONFIG = Ticketd.DEFAULT_CONFIG + \
    "  - {{ name: Invoices, kind: gapless, order: strict, strict_wait_ms: 60000 }}\n"


class ShutdownPastTheDrainDeadline(unittest.TestCase):
    def test_sigterm_with_a_session_waiting_in_the_engine_exits_cleanly(self):
        """A reservation holds the strict sequence's turn; a MySQL session queues for it (up to
        60 s). SIGTERM: the waiting session outlives the 10 s drain deadline, so its frame is
        destroyed with the io_context, after which nothing it references may be gone."""
        t = Ticketd(config=STRICT_CONFIG)
        try:
            t.start()
            # The turn is held by a durable HTTP reservation: shutting down does not end it.
            req = urllib.request.Request(
                f"http://127.0.0.1:{t.http_port}/v1/sequences/Invoices/reservations",
                data=b'{"ttl_ms": 120000}', method="POST",
                headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(r.status, 201)
            waiter = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="app",
                                     password="s3cret-app", database="tickets", autocommit=True)
            waiter._sock.sendall(com_query("SELECT NEXTVAL(Invoices)"))
            time.sleep(0.5)
            started = time.time()
            rc = t.stop(timeout=60)
            took = time.time() - started
            log = t.log_text()
            self.assertEqual(rc, 0, log[-3000:])
            self.assertLess(took, 30)
            self.assertGreater(took, 9, "the waiting session should have held the drain")
            self.assertIn("ticketd stopped", log)
            self.assertNotIn("AddressSanitizer", log)
            self.assertNotIn("runtime error", log)
            waiter._sock.close()
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
