#!/usr/bin/python3
"""A damaged or missing write-ahead log never makes ticketd start lower than it acknowledged.

Each case issues tickets (a small cache, so ceiling writes spread over the whole log) and gapless
numbers, kill -9s ticketd, damages the RocksDB directory in one way, and starts it again. The
start must either be refused (exit 1, the damage named, `ticketd verify` exit 1, the directory
left as it was) or resume above every acknowledged ticket and at exactly the next gapless
number. Only a torn record at the very end (a write that never finished) may start.
"""
import glob
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import BINARY, Ticketd  # noqa: E402

import pymysql  # noqa: E402

CONFIG = Ticketd.DEFAULT_CONFIG.replace(
    "  - {{ name: Tickets64, kind: ticket }}",
    "  - {{ name: Tickets64, kind: ticket, cache: 7 }}") + \
    "  - {{ name: Invoices, kind: gapless }}\n"


def connect(port):
    return pymysql.connect(host="127.0.0.1", port=port, user="app", password="s3cret-app",
                           database="tickets", autocommit=True, connect_timeout=2,
                           read_timeout=10, write_timeout=10)


def take(conn, sequence):
    with conn.cursor() as cur:
        cur.execute(f"SELECT NEXTVAL({sequence})")
        return int(cur.fetchone()[0])


def flip(path, offset, length=64):
    with open(path, "r+b") as f:
        f.seek(offset)
        data = bytearray(f.read(length))
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in data))


def truncate(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)


def wal(data_dir):
    logs = sorted(glob.glob(os.path.join(data_dir, "*.log")))
    assert logs, f"no write-ahead log in {os.listdir(data_dir)}"
    return logs[-1]


def sst(data_dir):
    tables = sorted(glob.glob(os.path.join(data_dir, "*.sst")))
    assert tables, f"no table file in {os.listdir(data_dir)}"
    return tables[-1]


def snapshot(data_dir):
    """Name -> bytes of every RocksDB file except RocksDB's own info LOG and the lock files."""
    out = {}
    for name in sorted(os.listdir(data_dir)):
        if name.startswith("LOG") or name in ("LOCK", "ticketd.lock"):
            continue
        with open(os.path.join(data_dir, name), "rb") as f:
            out[name] = f.read()
    return out


# name -> (damage(data_dir), must_refuse, words the refusal must contain)
DAMAGE = {
    "flip_64_bytes_early": (lambda d: flip(wal(d), 100), True, ["Corruption", ".log"]),
    "flip_64_bytes_in_the_middle": (lambda d: flip(wal(d), os.path.getsize(wal(d)) // 2), True,
                                    ["Corruption", ".log"]),
    "truncate_to_half": (lambda d: truncate(wal(d), os.path.getsize(wal(d)) // 2), True,
                         ["older than what ticketd acknowledged", ".log"]),
    "truncate_to_zero": (lambda d: truncate(wal(d), 0), True,
                         ["older than what ticketd acknowledged", ".log (0 bytes)"]),
    "delete_wal": (lambda d: os.remove(wal(d)), True,
                   ["older than what ticketd acknowledged", "no write-ahead log"]),
    "delete_current": (lambda d: os.remove(os.path.join(d, "CURRENT")), True,
                       ["CURRENT file is missing", "MANIFEST-"]),
    "delete_everything_but_the_mark": (
        lambda d: [os.remove(p) for p in glob.glob(os.path.join(d, "*"))
                   if os.path.basename(p) not in ("ticketd.durable", "ticketd.lock")],
        True, ["ticketd.durable"]),
    # Both slots (a torn one alone is survived: the other holds the mark).
    "damaged_mark": (lambda d: flip(os.path.join(d, "ticketd.durable"), 0,
                                    os.path.getsize(os.path.join(d, "ticketd.durable"))), True,
                     ["no readable durable mark"]),
    # Deleted: refused, never recreated (which would turn every check above off).
    "deleted_mark": (lambda d: os.remove(os.path.join(d, "ticketd.durable")), True,
                     ["not its durable mark", "ticketd.durable"]),
    # After a restart the recovered log is flushed to a table file: damage that instead.
    "flip_64_bytes_in_a_table_file": (lambda d: flip(sst(d), os.path.getsize(sst(d)) // 3),
                                      True, ["Corruption"]),
    # A write cut short by a crash leaves a partial record at the end: it was never synced, so
    # never acknowledged, and recovery drops it.
    "torn_tail": (lambda d: append(wal(d), b"\x17\x2a\x00\x00\x99\x10\x01"), False, []),
}


class WalDamage(unittest.TestCase):
    def run_case(self, name):
        damage, must_refuse, words = DAMAGE[name]
        t = Ticketd(config=CONFIG)
        try:
            t.start()
            conn = connect(t.mysql_port)
            last_ticket = 0
            for _ in range(600):
                last_ticket = take(conn, "Tickets64")
            last_invoice = 0
            for _ in range(40):
                last_invoice = take(conn, "Invoices")
            conn.close()
            if name == "flip_64_bytes_in_a_table_file":
                # A restart flushes what the log recovered into a table file.
                t.kill9()
                t.start()
            t.kill9()
            damage(t.data_dir)
            before = snapshot(t.data_dir)
            t.start(wait=False)
            deadline = time.time() + 20
            while (t.proc.poll() is None and "ticketd ready" not in t.log_text()
                   and time.time() < deadline):
                time.sleep(0.05)
            if must_refuse:
                rc = t.proc.wait(timeout=20)
                log = t.log_text()
                self.assertEqual(rc, 1, f"{name}: expected exit 1, got {rc}:\n{log}")
                for w in words:
                    self.assertIn(w, log, f"{name}: refusal must name {w!r}:\n{log}")
                self.assertEqual(snapshot(t.data_dir), before,
                                 f"{name}: a refused start must leave the store as it was")
                v = subprocess.run([BINARY, "verify", "--data-dir", t.data_dir],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(v.returncode, 1, f"{name}: verify must report it:\n{v.stdout}")
                self.assertIn("VIOLATION", v.stdout)
                self.assertEqual(snapshot(t.data_dir), before,
                                 f"{name}: verify must leave the store as it was")
                return t, last_ticket, last_invoice
            t.wait_ready()
            conn = connect(t.mysql_port)
            self.assertGreater(take(conn, "Tickets64"), last_ticket, name)
            self.assertEqual(take(conn, "Invoices"), last_invoice + 1, name)
            conn.close()
            return t, last_ticket, last_invoice
        finally:
            t.cleanup()

    def test_flip_64_bytes_early(self):
        self.run_case("flip_64_bytes_early")

    def test_flip_64_bytes_in_the_middle(self):
        self.run_case("flip_64_bytes_in_the_middle")

    def test_truncate_to_half(self):
        self.run_case("truncate_to_half")

    def test_truncate_to_zero(self):
        self.run_case("truncate_to_zero")

    def test_delete_wal(self):
        self.run_case("delete_wal")

    def test_delete_current(self):
        self.run_case("delete_current")

    def test_delete_everything_but_the_mark(self):
        self.run_case("delete_everything_but_the_mark")

    def test_damaged_mark(self):
        self.run_case("damaged_mark")

    def test_deleted_mark(self):
        self.run_case("deleted_mark")

    def test_flip_64_bytes_in_a_table_file(self):
        self.run_case("flip_64_bytes_in_a_table_file")

    def test_torn_tail_starts_above_everything_acknowledged(self):
        self.run_case("torn_tail")


class RestoredCurrent(unittest.TestCase):
    def test_restoring_current_as_the_message_says_resumes_above(self):
        t = Ticketd(config=CONFIG)
        try:
            t.start()
            conn = connect(t.mysql_port)
            last = max(take(conn, "Tickets64") for _ in range(300))
            inv = max(take(conn, "Invoices") for _ in range(10))
            conn.close()
            t.kill9()
            with open(os.path.join(t.data_dir, "CURRENT")) as f:
                current = f.read()
            os.remove(os.path.join(t.data_dir, "CURRENT"))
            t.start(wait=False)
            self.assertEqual(t.proc.wait(timeout=20), 1)
            self.assertIn(current.strip(), t.log_text())
            with open(os.path.join(t.data_dir, "CURRENT"), "w") as f:
                f.write(current)
            t.start()
            conn = connect(t.mysql_port)
            self.assertGreater(take(conn, "Tickets64"), last)
            self.assertEqual(take(conn, "Invoices"), inv + 1)
            conn.close()
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
