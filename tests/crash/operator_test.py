#!/usr/bin/python3
"""What an operator can do to a data directory never makes ticketd issue a value twice.

Against the real binary:
- deleting both lock files (ticketd.lock and RocksDB's LOCK) of a running server does not let a
  second server in (the directory itself is locked), and the running one notices and says so;
- deleting ticketd.durable, or replacing it with the mark of another store, is refused at start
  and by `ticketd verify`, which writes nothing;
- a config that moves a stored sequence's increment/offset is refused at start, naming
  `ticketd restride`; --force-grid-change applies it, above every value issued, audited;
- a config that raises a stored sequence's max_rate is refused at reload (nothing changes) and at
  start, naming --force-rate-raise, which applies it, audited; a lower rate applies freely;
- a name created after a backup, restored, starts above what it can have issued (ticket) or is
  refused until named with --force-not-in-backup (gapless);
- a data directory rolled back as a whole is refused with durability.external_mark.
Every wait is a poll with a deadline.
"""
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from faked_clock import LIBFAKETIME, preload  # noqa: E402
from ticketd_process import BINARY, Ticketd  # noqa: E402

import pymysql  # noqa: E402

# The background check of the lock file runs every 10 s (server/app/background_tasks.cpp).
LOCK_CHECK_DEADLINE_S = 30


def http(t, method, path, body=None):
    """(status, parsed JSON body) of one request to `t`."""
    req = urllib.request.Request(f"http://127.0.0.1:{t.http_port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def parse_utc(text):
    """A timestamp as ticketd writes them ("2026-12-05T09:00:10.865Z")."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def faketime_env(offset):
    """libfaketime for a ticketd whose clock reads `offset` ("+30s") from the real one."""
    assert os.path.exists(LIBFAKETIME), "libfaketime (Debian faketime) is needed"
    return {"LD_PRELOAD": preload(BINARY), "FAKETIME": offset, "FAKETIME_DONT_RESET": "1",
            # Under ASan the preloaded library comes before its runtime.
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}


def connect(port):
    return pymysql.connect(host="127.0.0.1", port=port, user="app", password="s3cret-app",
                           database="tickets", autocommit=True, connect_timeout=5,
                           read_timeout=10, write_timeout=10)


def take(port, sequence, n=1):
    conn = connect(port)
    try:
        out = []
        with conn.cursor() as cur:
            for _ in range(n):
                cur.execute(f"SELECT NEXTVAL({sequence})")
                out.append(int(cur.fetchone()[0]))
        return out
    finally:
        conn.close()


def files(data_dir):
    """Name -> bytes of every file in the directory but the lock files (RocksDB's LOCK, empty,
    and ticketd.lock, which a refused start rewrites with its pid)."""
    out = {}
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        if name not in ("LOCK", "ticketd.lock") and os.path.isfile(path):
            with open(path, "rb") as f:
                out[name] = f.read()
    return out


def verify(data_dir):
    return subprocess.run([BINARY, "verify", "--data-dir", data_dir], capture_output=True,
                          text=True, timeout=60)


class Case(unittest.TestCase):
    def server(self, config=None, data_dir=None, extra_args=(), env=None):
        t = Ticketd(config=config, data_dir=data_dir, extra_args=extra_args, env=env)
        self.addCleanup(t.cleanup)
        return t

    def refused_start(self, t, words):
        """Starts `t`, which must exit 1 with every one of `words` in its log."""
        t.start(wait=False)
        rc = t.proc.wait(timeout=30)
        log = t.log_text()
        self.assertEqual(rc, 1, log)
        for w in words:
            self.assertIn(w, log)
        return log


class Locks(Case):
    def test_deleting_both_lock_files_does_not_let_a_second_server_in(self):
        first = self.server().start()
        issued = take(first.mysql_port, "Tickets64", 50)
        os.remove(os.path.join(first.data_dir, "ticketd.lock"))
        os.remove(os.path.join(first.data_dir, "LOCK"))
        second = self.server(data_dir=first.data_dir)
        self.refused_start(second, ["in use by another ticketd"])
        # The first one still serves, above everything, and has noticed.
        self.assertGreater(take(first.mysql_port, "Tickets64")[0], max(issued))
        deadline = time.time() + LOCK_CHECK_DEADLINE_S
        while "ticketd.lock' was deleted" not in first.log_text():
            self.assertLess(time.time(), deadline, "the deleted lock file went unnoticed:\n"
                            + first.log_text()[-2000:])
            time.sleep(0.1)
        # ... and wrote it again, so the next refusal names the right pid.
        deadline = time.time() + LOCK_CHECK_DEADLINE_S
        path = os.path.join(first.data_dir, "ticketd.lock")
        while not (os.path.exists(path) and open(path).read().strip() == str(first.proc.pid)):
            self.assertLess(time.time(), deadline, "ticketd.lock was not written again")
            time.sleep(0.1)
        third = self.server(data_dir=first.data_dir)
        self.refused_start(third, [f"pid {first.proc.pid}"])

    def test_verify_refuses_a_running_servers_directory_and_writes_nothing(self):
        t = self.server().start()
        take(t.mysql_port, "Tickets64", 5)
        os.remove(os.path.join(t.data_dir, "ticketd.lock"))
        v = verify(t.data_dir)
        self.assertEqual(v.returncode, 3, v.stdout)
        self.assertIn("in use by another ticketd", v.stdout)


class Mark(Case):
    def issue_and_kill(self, t):
        t.start()
        last = max(take(t.mysql_port, "Tickets64", 300))
        t.kill9()
        return last

    def test_a_deleted_mark_is_refused_not_recreated(self):
        t = self.server()
        self.issue_and_kill(t)
        os.remove(os.path.join(t.data_dir, "ticketd.durable"))
        before = files(t.data_dir)
        v = verify(t.data_dir)
        self.assertEqual(v.returncode, 1, v.stdout)
        self.assertIn("VIOLATION", v.stdout)
        self.assertIn("ticketd.durable", v.stdout)
        self.assertEqual(files(t.data_dir), before, "verify must write nothing")
        self.refused_start(t, ["not its durable mark", "ticketd.durable"])
        self.assertEqual(files(t.data_dir), before, "a refused start must write nothing")
        self.assertFalse(os.path.exists(os.path.join(t.data_dir, "ticketd.durable")))

    def test_a_mark_of_another_store_is_refused(self):
        other = self.server()
        self.issue_and_kill(other)
        t = self.server()
        self.issue_and_kill(t)
        shutil.copyfile(os.path.join(other.data_dir, "ticketd.durable"),
                        os.path.join(t.data_dir, "ticketd.durable"))
        before = files(t.data_dir)
        v = verify(t.data_dir)
        self.assertEqual(v.returncode, 1, v.stdout)
        self.assertIn("belongs to another store", v.stdout)
        self.refused_start(t, ["belongs to another store"])
        self.assertEqual(files(t.data_dir), before)

    def test_a_put_back_mark_starts_above_everything(self):
        t = self.server()
        last = self.issue_and_kill(t)
        path = os.path.join(t.data_dir, "ticketd.durable")
        saved = path + ".saved"
        os.rename(path, saved)
        self.refused_start(t, ["not its durable mark"])
        os.rename(saved, path)
        v = verify(t.data_dir)
        self.assertEqual(v.returncode, 0, v.stdout)
        t.start()
        self.assertGreater(take(t.mysql_port, "Tickets64")[0], last)


GRID_CONFIG = Ticketd.DEFAULT_CONFIG.replace(
    "{{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295 }}",
    "{{ name: Tickets32, kind: ticket, increment: INC, offset: 1, max_value: 4294967295 }}")


class Grid(Case):
    def test_a_changed_grid_is_refused_at_start_unless_forced(self):
        t = self.server(config=GRID_CONFIG.replace("INC", "2"))
        t.start()
        data_dir = t.data_dir
        issued = take(t.mysql_port, "Tickets32", 30)
        self.assertTrue(all(v % 2 == 1 for v in issued))
        t.stop()
        moved = self.server(config=GRID_CONFIG.replace("INC", "3"), data_dir=data_dir)
        log = self.refused_start(moved, ["ticketd restride", "--force-grid-change Tickets32"])
        self.assertNotIn("ticketd ready", log)
        forced = self.server(config=GRID_CONFIG.replace("INC", "3"), data_dir=data_dir,
                             extra_args=["--force-grid-change", "Tickets32"])
        forced.start()
        self.assertIn("moved by a forced config change from increment 2 offset 1 to increment 3",
                      forced.log_text())
        values = take(forced.mysql_port, "Tickets32", 30)
        self.assertTrue(all(v % 3 == 1 for v in values), values)
        self.assertGreater(min(values), max(issued))
        forced.stop()
        # The stored grid is now 3/1: the same config starts without the flag.
        again = self.server(config=GRID_CONFIG.replace("INC", "3"), data_dir=data_dir)
        again.start()
        self.assertGreater(take(again.mysql_port, "Tickets32")[0], max(values))

    def test_force_for_a_name_the_config_lacks_is_a_usage_error(self):
        t = self.server(extra_args=["--force-grid-change", "Nope"])
        t.start(wait=False)
        rc = t.proc.wait(timeout=30)
        self.assertEqual(rc, 2, t.log_text())
        self.assertIn("--force-grid-change Nope", t.log_text())


RATE_CONFIG = Ticketd.DEFAULT_CONFIG.replace(
    "{{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295 }}",
    "{{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295, "
    "max_rate: RATE }}")
RELOAD_LINE = re.compile(r"^\S+ (info  reload: applied .*|error reload: .*)$", re.M)


class RateRaise(Case):
    """`ticketd restore --skip-ahead auto` bounds what a sequence issued since the backup by the
    max_rate the backup recorded; a config that raised it afterwards would let an auto restore
    resume below values already issued (rate 2000 at the backup, 10^8 after: resumed at 441,251
    below 400,000 issued). A raise is therefore an explicit, start-only choice."""

    def rewrite(self, t, rate):
        with open(t.config_path, "w") as f:
            f.write(RATE_CONFIG.replace("RATE", str(rate)).format(
                data_dir=t.data_dir, mysql_port=t.mysql_port, http_port=t.http_port))

    def reload(self, t):
        """SIGHUP; returns the reload's outcome line once it is logged."""
        before = len(RELOAD_LINE.findall(t.log_text()))
        t.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while len(RELOAD_LINE.findall(t.log_text())) <= before:
            self.assertLess(time.monotonic(), deadline, t.log_text())
            time.sleep(0.02)
        return RELOAD_LINE.findall(t.log_text())[before]

    def test_a_raise_is_refused_unless_forced_at_start_and_a_lower_rate_applies(self):
        t = self.server(config=RATE_CONFIG.replace("RATE", "2000"))
        t.start()
        data_dir = t.data_dir
        issued = take(t.mysql_port, "Tickets32", 20)
        self.rewrite(t, 100000000)
        line = self.reload(t)
        self.assertIn("error reload:", line)
        self.assertIn("--force-rate-raise Tickets32", line)
        self.assertIn("nothing changed", line)
        self.assertEqual(http(t, "GET", "/v1/sequences/Tickets32")[1]["max_rate"], 2000)
        self.rewrite(t, 1000)
        self.assertIn("reload: applied", self.reload(t))
        self.assertEqual(http(t, "GET", "/v1/sequences/Tickets32")[1]["max_rate"], 1000)
        issued += take(t.mysql_port, "Tickets32", 20)
        self.assertEqual(t.stop(), 0)

        raised = self.server(config=RATE_CONFIG.replace("RATE", "100000000"), data_dir=data_dir)
        log = self.refused_start(raised, ["--force-rate-raise Tickets32", "from 1000 to 100000000"])
        self.assertNotIn("ticketd ready", log)
        forced = self.server(config=RATE_CONFIG.replace("RATE", "100000000"), data_dir=data_dir,
                             extra_args=["--force-rate-raise", "Tickets32"])
        forced.start()
        self.assertIn("max_rate raised by a forced config change from 1000 to 100000000",
                      forced.log_text())
        self.assertEqual(http(forced, "GET", "/v1/sequences/Tickets32")[1]["max_rate"], 100000000)
        values = take(forced.mysql_port, "Tickets32", 20)
        self.assertGreater(min(values), max(issued))
        self.assertEqual(forced.stop(), 0)
        # The stored rate is the raised one: the same config starts without the flag.
        again = self.server(config=RATE_CONFIG.replace("RATE", "100000000"), data_dir=data_dir)
        again.start()
        self.assertGreater(take(again.mysql_port, "Tickets32")[0], max(values))

    def test_force_rate_raise_for_a_name_the_config_lacks_is_a_usage_error(self):
        t = self.server(extra_args=["--force-rate-raise", "Nope"])
        t.start(wait=False)
        self.assertEqual(t.proc.wait(timeout=30), 2, t.log_text())
        self.assertIn("--force-rate-raise Nope", t.log_text())


POOL_CONFIG = Ticketd.DEFAULT_CONFIG + """worker_pools:
  - {{ name: orders, size: 4, min_ttl_s: 1, max_ttl_s: 300, default_ttl_s: 60 }}
"""


class WorkerLeaseClocks(Case):
    """Issue 27.9: a server that reads stored leases judges them on its own clock, so one whose
    clock runs 30 s ahead (a new leader, or a restart after a clock step) never grants a worker
    ID whose holder may still be using it."""

    def lease(self, t, holder, ttl_s):
        status, body = http(t, "POST", "/v1/workers/orders/leases",
                            {"holder": holder, "ttl_s": ttl_s})
        self.assertEqual(status, 201, body)
        return body

    def test_a_clock_thirty_seconds_ahead_does_not_end_a_live_lease(self):
        first = self.server(config=POOL_CONFIG).start()
        held = self.lease(first, "holder-a", 40)  # 40 s on the real clock
        first.kill9()
        ahead = self.server(config=POOL_CONFIG, data_dir=first.data_dir,
                            env=faketime_env("+50s"))
        ahead.start()
        # On this clock the stored lease expired 10 s ago; its holder still has ~40 s.
        second = self.lease(ahead, "holder-b", 40)
        # (The fake clock is in effect: the second grant is dated about 50 s after the first.)
        skew = (parse_utc(second["granted_at"]) - parse_utc(held["granted_at"])).total_seconds()
        self.assertGreater(skew, 45, (held, second))
        self.assertNotEqual(second["worker_id"], held["worker_id"], second)
        status, body = http(ahead, "POST",
                            f"/v1/workers/orders/leases/{held['lease_id']}/keepalive", {})
        self.assertEqual(status, 200, body)


class RestoreBound(Case):
    """Issue 27.4: a sequence that never issued (no recorded rate) and one whose burst after the
    backup far exceeds its recorded peak both restore above everything they issued."""

    def test_auto_covers_an_idle_sequence_and_a_burst_above_the_peak(self):
        config = Ticketd.DEFAULT_CONFIG + "backup: {{ dir: {data_dir}-backups }}\n"
        t = self.server(config=config).start()
        self.addCleanup(shutil.rmtree, t.data_dir + "-backups", True)
        take(t.mysql_port, "Tickets64", 5)  # a peak of a few values a minute
        status, manifest = http(t, "POST", "/v1/admin/backup")
        self.assertEqual(status, 200, manifest)
        # The burst: 300,000 values in blocks, far above twice the recorded peak.
        issued = []
        for _ in range(3):
            status, body = http(t, "POST", "/v1/sequences/Tickets64/next", {"count": 100000})
            self.assertEqual(status, 200, body)
            issued.append(int(body["ids"][-1]))
        issued.append(max(take(t.mysql_port, "Tickets32", 50)))  # never issued before the backup
        t.kill9()
        restored = t.data_dir + "-restored"
        self.addCleanup(shutil.rmtree, restored, True)
        r = subprocess.run([BINARY, "restore", "--from", manifest["path"], "--data-dir", restored,
                            "--skip-ahead", "Tickets32=1000000"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        back = self.server(data_dir=restored).start()
        self.assertGreater(take(back.mysql_port, "Tickets64")[0], max(issued[:3]))
        for line in r.stdout.splitlines():
            if line.startswith("restore: Tickets64:"):
                self.assertIn("auto: max_rate", line)
        # The peak estimate would not have covered it: it says it is one, and is named.
        peak = subprocess.run([BINARY, "restore", "--from", manifest["path"], "--data-dir",
                               restored + "-peak", "--skip-ahead", "peak"],
                              capture_output=True, text=True, timeout=60)
        self.addCleanup(shutil.rmtree, restored + "-peak", True)
        self.assertIn("not a bound", peak.stdout + peak.stderr)


class NotInBackup(Case):
    """A sequence created after the backup is not in it: restored, the config (or a client)
    would create it again at its start and issue its values twice. The restore records the
    time the backup did not see; a ticket sequence of such a name starts above what it can have
    issued, a gapless one is refused until the operator names it."""

    def test_a_name_created_after_the_backup_never_reissues(self):
        base = Ticketd.DEFAULT_CONFIG + "backup: {{ dir: {data_dir}-backups }}\n"
        later = base.replace("sequences:\n", "sequences:\n"
                             "  - {{ name: Later, kind: ticket, cache: 10, max_rate: 1000 }}\n"
                             "  - {{ name: Bills, kind: gapless }}\n")
        t = self.server(config=base).start()
        self.addCleanup(shutil.rmtree, t.data_dir + "-backups", True)
        status, manifest = http(t, "POST", "/v1/admin/backup")
        self.assertEqual(status, 200, manifest)
        self.assertEqual(t.stop(), 0)
        # After the backup: two new names, one of them issuing.
        grown = self.server(config=later, data_dir=t.data_dir).start()
        issued = take(grown.mysql_port, "Later", 30)
        grown.kill9()
        restored = t.data_dir + "-restored"
        self.addCleanup(shutil.rmtree, restored, True)
        # (Tickets32, 32-bit at the default max_rate, takes a number of its own.)
        r = subprocess.run([BINARY, "restore", "--from", manifest["path"], "--data-dir",
                            restored, "--skip-ahead", "Tickets32=1000"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("restore: (names not in the backup): ", r.stdout)
        refused = self.server(config=later, data_dir=restored)
        self.refused_start(refused, ["gapless sequence 'Bills' is not in the backup",
                                     "--force-not-in-backup Bills"])
        back = self.server(config=later, data_dir=restored,
                           extra_args=["--force-not-in-backup", "Bills"]).start()
        self.assertIn("created without the restore floor", back.log_text())
        values = take(back.mysql_port, "Later", 5)
        self.assertGreater(min(values), max(issued))
        # It skipped max_rate x (the backup's age + 60 s margin + a (10 + 100000) / 1000 s
        # window) values past its start.
        self.assertGreater(min(values), 1000 * (60 + 100))


class ExternalMark(Case):
    """Issue 27.7: a data directory rolled back as a whole (a disk or VM snapshot put back, its
    own ticketd.durable included) is refused when durability.external_mark lives elsewhere;
    restore --external-mark makes the mark the new directory's."""

    def test_a_snapshot_put_back_is_refused_and_restore_rebinds_the_mark(self):
        volume = tempfile.mkdtemp(prefix="ticketd-volume-")  # "another volume"
        self.addCleanup(shutil.rmtree, volume, True)
        mark = os.path.join(volume, "ticketd.external")
        config = Ticketd.DEFAULT_CONFIG + f"durability: {{{{ external_mark: {mark} }}}}\n"
        t = self.server(config=config).start()
        take(t.mysql_port, "Tickets64", 5)
        t.stop()
        snapshot = t.data_dir + "-snapshot"
        self.addCleanup(shutil.rmtree, snapshot, True)
        shutil.copytree(t.data_dir, snapshot)
        t.start()
        # Far past the snapshot's ceiling (cache 1000 by default): several raises.
        issued = max(take(t.mysql_port, "Tickets64", 20)
                     + [int(http(t, "POST", "/v1/sequences/Tickets64/next",
                                 {"count": 5000})[1]["ids"][-1])])
        t.kill9()
        shutil.rmtree(t.data_dir)
        shutil.copytree(snapshot, t.data_dir)
        # The snapshot's own mark came with it: on its own, nothing can tell (the limit the docs
        # state); with the external mark, verify and start refuse.
        self.assertEqual(verify(t.data_dir).returncode, 0)
        before = files(t.data_dir)
        v = subprocess.run([BINARY, "verify", "--data-dir", t.data_dir, "--external-mark", mark],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(v.returncode, 1, v.stdout)
        self.assertIn("rolled back as a whole", v.stdout)
        self.refused_start(t, ["rolled back as a whole", mark])
        self.assertEqual(files(t.data_dir), before, "a refused start must write nothing")
        # Restore from a backup of that snapshot: the mark becomes the new directory's, which
        # starts above everything issued.
        backup = t.data_dir + "-backup"
        restored = t.data_dir + "-restored"
        for d in (backup, restored):
            self.addCleanup(shutil.rmtree, d, True)
        b = subprocess.run([BINARY, "backup", "--data-dir", snapshot, "--to", backup],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(b.returncode, 0, b.stdout + b.stderr)
        r = subprocess.run([BINARY, "restore", "--from", backup, "--data-dir", restored,
                            "--skip-ahead", "100000", "--external-mark", mark],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("now belongs to", r.stdout)
        # The rolled-back directory is still refused: the mark is the restored store's now, at
        # a higher position than the snapshot reaches.
        self.refused_start(t, ["external durable mark"])
        back = self.server(config=config, data_dir=restored).start()
        self.assertGreater(take(back.mysql_port, "Tickets64")[0], issued)


if __name__ == "__main__":
    unittest.main()
