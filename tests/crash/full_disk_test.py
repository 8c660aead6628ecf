#!/usr/bin/python3
"""A full disk, on a real 16 MiB tmpfs: ticketd refuses writes with a clear error, never issues a
value twice, stays up, and resumes by itself when space returns; a restart on a full disk is
refused or served, never a crash.

Needs root (it mounts a tmpfs); it fails, rather than skips, without it.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

import pymysql  # noqa: E402

# cache: 1 makes every ticket a synced write, so the full disk shows on the next ticket.
CONFIG = Ticketd.DEFAULT_CONFIG.replace(
    "  - {{ name: Tickets64, kind: ticket }}",
    "  - {{ name: Tickets64, kind: ticket, cache: 1 }}") + \
    "  - {{ name: Invoices, kind: gapless }}\n"


def connect(port):
    return pymysql.connect(host="127.0.0.1", port=port, user="app", password="s3cret-app",
                           database="tickets", autocommit=True, connect_timeout=2,
                           read_timeout=10, write_timeout=10)


def http(port, method, path):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=b"{}" if method == "POST" else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Filler:
    """Keeps the tmpfs full: top_up() writes until ENOSPC (again, after RocksDB freed space)."""

    def __init__(self, mount):
        self.path = os.path.join(mount, "filler")
        self.f = open(self.path, "ab")

    def top_up(self):
        chunk = b"\0" * 4096
        try:
            while True:
                self.f.write(chunk)
                self.f.flush()
        except OSError:
            pass

    def close(self):
        try:
            self.f.close()
        except OSError:
            pass  # the last buffered write may not fit: it does not matter

    def remove(self):
        self.close()
        os.remove(self.path)


class FullDisk(unittest.TestCase):
    def setUp(self):
        self.assertEqual(os.geteuid(), 0, "this test mounts a tmpfs and must run as root")
        self.mount = tempfile.mkdtemp(prefix="ticketd-tmpfs-")
        subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", self.mount])
        self.t = Ticketd(config=CONFIG, data_dir=os.path.join(self.mount, "data"))

    def tearDown(self):
        self.t.cleanup()
        if getattr(self, "filler", None):
            self.filler.close()
        subprocess.call(["umount", self.mount])
        os.rmdir(self.mount)

    def take_until_refused(self, conn, filler, issued):
        """Takes tickets, topping the disk up, until one is refused; returns the error."""
        for _ in range(300000):
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT NEXTVAL(Tickets64)")
                    issued.append(int(cur.fetchone()[0]))
            except pymysql.err.OperationalError as e:
                return e
            if len(issued) % 500 == 0:
                filler.top_up()
        self.fail("no ticket was refused on a full disk")

    def test_full_disk_refuses_clearly_and_resumes_when_space_returns(self):
        t = self.t
        t.start()
        conn = connect(t.mysql_port)
        issued = []
        invoices = []
        for _ in range(50):
            with conn.cursor() as cur:
                cur.execute("SELECT NEXTVAL(Invoices)")
                invoices.append(int(cur.fetchone()[0]))
        filler = self.filler = Filler(self.mount)
        filler.top_up()
        err = self.take_until_refused(conn, filler, issued)
        self.assertIsNone(t.proc.poll(), "ticketd died on a full disk:\n" + t.log_text()[-2000:])
        self.assertIn("No space left on device", str(err))
        # Right after a refused write, nothing can be written: readiness says so.
        status, _ = http(t.http_port, "GET", "/readyz")
        self.assertEqual(status, 503, "/readyz must say the server cannot write")
        # Keep it full. RocksDB preallocates its log, so after a reopen some writes may fit
        # again (each synced, so each answer is durable); every round ends in a refusal.
        refused = 1
        for _ in range(3):
            filler.top_up()
            err = self.take_until_refused(conn, filler, issued)
            self.assertIn("No space left on device", str(err))
            refused += 1
            filler.top_up()
            status, body = http(t.http_port, "POST", "/v1/sequences/Tickets64/next")
            if status == 200:
                issued.extend(int(v) for v in json.loads(body)["ids"])
            else:
                self.assertEqual(status, 503, body)
                self.assertIn(b"storage", body)
        filler.top_up()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT NEXTVAL(Invoices)")
                invoices.append(int(cur.fetchone()[0]))
        except pymysql.err.OperationalError as e:
            self.assertIn("No space left on device", str(e))
        self.assertIsNone(t.proc.poll(), "ticketd died on a full disk:\n" + t.log_text()[-2000:])

        # Space returns: writes resume by themselves, above everything issued.
        filler.remove()
        deadline = time.time() + 10
        resumed = None
        while time.time() < deadline:
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT NEXTVAL(Tickets64)")
                    resumed = int(cur.fetchone()[0])
                break
            except pymysql.err.OperationalError:
                time.sleep(0.1)
        self.assertIsNotNone(resumed, "writes did not resume after space returned")
        self.assertGreater(resumed, max(issued))
        issued.append(resumed)
        self.assertEqual(len(issued), len(set(issued)), "a ticket was issued twice")
        self.assertEqual(issued, sorted(issued))
        with conn.cursor() as cur:
            cur.execute("SELECT NEXTVAL(Invoices)")
            invoices.append(int(cur.fetchone()[0]))
        self.assertEqual(invoices, list(range(1, len(invoices) + 1)), "gapless numbers broke")
        status, _ = http(t.http_port, "GET", "/readyz")
        self.assertEqual(status, 200)
        print(f"full disk: {len(issued)} tickets, {refused} refusals while full, resumed at "
              f"{resumed}", file=sys.stderr)

    def test_restart_on_a_full_disk_does_not_crash_and_resumes_above(self):
        t = self.t
        t.start()
        conn = connect(t.mysql_port)
        issued = []
        filler = self.filler = Filler(self.mount)
        filler.top_up()
        self.take_until_refused(conn, filler, issued)
        conn.close()
        self.assertEqual(t.stop(), 0, t.log_text()[-2000:])
        for _ in range(3):
            filler.top_up()
            t.start(wait=False)
            deadline = time.time() + 15
            while (t.proc.poll() is None and "ticketd ready" not in t.log_text()
                   and time.time() < deadline):
                time.sleep(0.05)
            rc = t.proc.poll()
            print(f"start on a full disk: {'serving' if rc is None else f'exit {rc}'}",
                  file=sys.stderr)
            if rc is None:
                # It started: every write it makes must still be refused or durable.
                t.stop()
            else:
                self.assertEqual(rc, 1, "a full disk at start is exit 1, not a crash:\n" +
                                 t.log_text()[-2000:])
                self.assertIn("No space left on device", t.log_text())
        filler.remove()
        t.start()
        conn = connect(t.mysql_port)
        with conn.cursor() as cur:
            cur.execute("SELECT NEXTVAL(Tickets64)")
            self.assertGreater(int(cur.fetchone()[0]), max(issued))


if __name__ == "__main__":
    unittest.main(verbosity=2)
