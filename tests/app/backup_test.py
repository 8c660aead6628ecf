#!/usr/bin/env python3
"""Backups and safe restores against the real binary: an online backup under load, a kill -9 and
a restore that issues above everything acknowledged; a backup refused as a data dir; gapless
sequences continuing at exactly the stated number; exact skips on the grid; the offline backup;
a restore into a non-empty dir; the HTTP route's 501 and 401; lease retention by count and, under
libfaketime, by age."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import pymysql

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from faked_clock import LIBFAKETIME, preload  # noqa: E402
from ticketd_process import BINARY, Ticketd  # noqa: E402

MANIFEST = "ticketd-backup.json"
TOKEN = "backup-test-token-0123456789"

# {backup} is filled in here; Ticketd fills in the rest.
CONFIG = """
data_dir: {{data_dir}}
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  users:
    - {{{{ name: ticket, password: ticket }}}}
http:
  listen: 127.0.0.1:{{http_port}}
{http_extra}{backup}sequences:
  - {{{{ name: Tickets64, kind: ticket, cache: {cache} }}}}
  - {{{{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295, max_rate: 1000 }}}}
{extra}"""

GAPLESS = ("  - {{ name: Invoices, kind: gapless }}\n"
           "  - {{ name: Receipts, kind: gapless, start: 100, increment: 10, offset: 10 }}\n")


def config(backup_dir=None, cache=1000, extra="", http_extra=""):
    backup = f"backup: {{{{ dir: {backup_dir} }}}}\n" if backup_dir else ""
    return CONFIG.format(backup=backup, cache=cache, extra=extra, http_extra=http_extra)


def run(args, timeout=60):
    return subprocess.run([BINARY] + args, capture_output=True, text=True, timeout=timeout)


def request(t, method, path, body=None, token=None, timeout=30):
    """(status, parsed JSON body) of one HTTP request to `t`."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(f"http://127.0.0.1:{t.http_port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def next_ids(t, name, count=1, token=None):
    status, body = request(t, "POST", f"/v1/sequences/{name}/next", {"count": count}, token)
    if status != 200:
        raise AssertionError(f"next {name}: {status} {body}")
    return [int(i) for i in body["ids"]]


def online_backup(t, token=None):
    status, body = request(t, "POST", "/v1/admin/backup", token=token, timeout=60)
    if status != 200:
        raise AssertionError(f"POST /v1/admin/backup: {status} {body}")
    return body


def by_name(manifest):
    return {s["name"]: s for s in manifest["sequences"]}


def dir_snapshot(path):
    """Every file under `path` with its bytes: to show a directory was left as found."""
    out = {}
    for root, dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), path) + "/"] = None
    return out


class BackupTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ticketd-backup-test-")
        self.backup_dir = os.path.join(self.tmp, "backups")
        self.daemons = []

    def tearDown(self):
        for t in self.daemons:
            t.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def ticketd(self, cfg, data_dir=None, start=True, env=None):
        t = Ticketd(config=cfg, data_dir=data_dir or os.path.join(self.tmp, "data"), env=env)
        self.daemons.append(t)
        if start:
            t.start()
        return t

    def path(self, name):
        return os.path.join(self.tmp, name)

    def restore(self, backup, data_dir, *flags):
        return run(["restore", "--from", backup, "--data-dir", data_dir] + list(flags))

    def assert_verifies(self, data_dir):
        r = run(["verify", "--data-dir", data_dir])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("0 violations", r.stdout + r.stderr)


class OnlineBackupUnderLoad(BackupTestCase):
    def test_restore_after_kill9_issues_above_everything_acknowledged(self):
        # A small cache: the skip must come from the measured rate, not from the 2 x cache floor.
        cache = 100
        cfg = config(self.backup_dir, cache=cache)
        t = self.ticketd(cfg)
        acked = []  # every value a client got an answer for, from any thread
        lock = threading.Lock()
        stop = threading.Event()
        killed = threading.Event()  # set before the kill -9: failures after it end the load
        errors = []
        from_mysql = []

        def http_worker():
            while not stop.is_set():
                try:
                    ids = next_ids(t, "Tickets64", 5)
                except (OSError, AssertionError) as e:
                    if not killed.is_set():
                        errors.append(e)
                    return
                with lock:
                    acked.extend(ids)

        def mysql_worker():
            try:
                conn = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="ticket",
                                       password="ticket", database="tickets", autocommit=True,
                                       connect_timeout=10)
            except pymysql.err.MySQLError as e:
                errors.append(e)
                return
            try:
                with conn.cursor() as cur:
                    while not stop.is_set():
                        cur.execute("SELECT NEXTVAL(Tickets64)")
                        value = int(cur.fetchone()[0])
                        with lock:
                            acked.append(value)
                            from_mysql.append(value)
            except (pymysql.err.MySQLError, OSError) as e:
                if not killed.is_set():
                    errors.append(e)
                return
            finally:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - the server is gone
                    pass

        workers = [threading.Thread(target=http_worker) for _ in range(3)]
        workers.append(threading.Thread(target=mysql_worker))
        for w in workers:
            w.start()
        try:
            deadline = time.time() + 30
            while len(acked) < 500:
                self.assertLess(time.time(), deadline, "the load never reached 500 values")
                time.sleep(0.05)
            # A first backup closes the rate window of the start-up and warm-up, so that the
            # window of the backup below measures the steady load alone.
            online_backup(t)
            deadline = time.time() + 3
            while time.time() < deadline or len(acked) < 2000:
                self.assertLess(time.time(), deadline + 30, "the load never reached 2000 values")
                time.sleep(0.05)
            with lock:
                before_backup = max(acked)
                count_before = len(acked)
            manifest = online_backup(t)
            after_backup = time.time()
            while time.time() < after_backup + 3:
                time.sleep(0.05)
            killed.set()
            t.kill9()
        finally:
            stop.set()
            for w in workers:
                w.join(30)
        self.assertEqual(errors, [])
        self.assertGreater(len(from_mysql), 0, "the MySQL client issued nothing")
        self.assertEqual(len(acked), len(set(acked)), "a value was issued twice")
        crash_max = max(acked)
        self.assertGreater(len(acked), count_before, "the load went on after the backup")

        self.assertTrue(manifest["online"])
        self.assertTrue(os.path.isfile(os.path.join(manifest["path"], MANIFEST)))
        self.assertEqual(os.path.basename(manifest["path"]), manifest["id"])
        self.assertIsInstance(manifest["taken_at_ms"], int)
        self.assertRegex(manifest["taken_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        t64 = by_name(manifest)["Tickets64"]
        self.assertEqual(t64["kind"], "ticket")
        self.assertIsInstance(t64["ceiling"], str)  # decimal strings, like IDs
        self.assertGreaterEqual(int(t64["ceiling"]), before_backup)
        peak = int(t64["peak_per_minute"])
        self.assertGreater(peak, 0)
        with open(os.path.join(manifest["path"], MANIFEST)) as f:
            on_disk = json.load(f)
        self.assertEqual(by_name(on_disk)["Tickets64"]["ceiling"], t64["ceiling"])

        restored = self.path("restored")
        r = self.restore(manifest["path"], restored, "--skip-ahead", "auto")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = r.stdout + r.stderr
        line = next((ln for ln in out.splitlines() if ln.startswith("restore: Tickets64: ")), None)
        self.assertIsNotNone(line, out)
        self.assertIn(f"ceiling {t64['ceiling']} -> ", line)
        # Auto is the enforced bound, not the peak: max_rate (the default, 10^8/s) x at least
        # the 60 s clock margin and the 1 s window, whatever the recorded peak.
        self.assertIn("auto: max_rate 100000000/s", line)
        new_ceiling = int(line.split(" -> ")[1].split(" ")[0])
        self.assertGreaterEqual(new_ceiling - int(t64["ceiling"]), 100000000 * 61, line)
        self.assertIn("restore: Tickets32: ", out)
        self.assert_verifies(restored)

        t2 = self.ticketd(cfg, data_dir=restored)
        first = next_ids(t2, "Tickets64", 100)
        self.assertGreater(min(first), crash_max,
                           f"issued {min(first)} again after the restore (acknowledged up to "
                           f"{crash_max} before the kill)")
        self.assertGreater(min(first), new_ceiling)
        conn = pymysql.connect(host="127.0.0.1", port=t2.mysql_port, user="ticket",
                               password="ticket", database="tickets", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("SELECT NEXTVAL(Tickets64)")
            self.assertGreater(int(cur.fetchone()[0]), max(first))
        conn.close()
        self.assertEqual(t2.stop(), 0)
        self.assert_verifies(restored)


class BackupIsNotADataDir(BackupTestCase):
    def test_starting_on_a_backup_or_a_copy_of_one_is_refused(self):
        cfg = config(self.backup_dir)
        t = self.ticketd(cfg)
        next_ids(t, "Tickets64", 10)
        manifest = online_backup(t)
        t.stop()
        copy = self.path("copy")
        subprocess.run(["cp", "-a", manifest["path"], copy], check=True)
        for data_dir in (manifest["path"], copy):
            b = self.ticketd(cfg, data_dir=data_dir, start=False)
            b.start(wait=False)
            self.assertEqual(b.proc.wait(30), 1, b.log_text())
            self.assertIn("ticketd restore", b.log_text())
            self.assertNotIn("ticketd ready", b.log_text())
        # Still a backup after the refused starts.
        r = self.restore(copy, self.path("restored"), "--skip-ahead", "auto")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_unfinished_backup_is_never_served_and_removed_at_the_next_start(self):
        # Issue 27.10: a daemon killed during a backup leaves backup-....partial. Made here from
        # a finished backup: its files without the real manifest, as the checkpoint leaves them
        # (with the empty placeholder manifest, and without it: a kill before the placeholder).
        cfg = config(self.backup_dir)
        t = self.ticketd(cfg)
        next_ids(t, "Tickets64", 10)
        manifest = online_backup(t)
        t.stop()
        partials = []
        for n, placeholder in enumerate((True, False)):
            partial = os.path.join(self.backup_dir, f"backup-2026-01-0{n + 1}T000000Z.partial")
            subprocess.run(["cp", "-a", manifest["path"], partial], check=True)
            os.remove(os.path.join(partial, "ticketd-backup.json"))
            if placeholder:
                open(os.path.join(partial, "ticketd-backup.json"), "w").close()
            partials.append(partial)
            copy = self.path(f"partial-copy-{n}")
            subprocess.run(["cp", "-a", partial, copy], check=True)
            b = self.ticketd(cfg, data_dir=copy, start=False)
            b.start(wait=False)
            self.assertEqual(b.proc.wait(30), 1, b.log_text())
            self.assertNotIn("ticketd ready", b.log_text())
            r = self.restore(copy, self.path(f"restored-{n}"), "--skip-ahead", "1000")
            self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        # The server that owns backup.dir removes them when it starts.
        t.start()
        for partial in partials:
            self.assertFalse(os.path.exists(partial), partial)
        self.assertIn("removed the unfinished backup", t.log_text())
        self.assertTrue(os.path.exists(manifest["path"]))

    def test_backup_dir_inside_the_data_dir_is_refused_at_start(self):
        data = self.path("data")
        t = self.ticketd(config(os.path.join(data, "backups")), data_dir=data, start=False)
        t.start(wait=False)
        self.assertEqual(t.proc.wait(30), 2, t.log_text())
        self.assertIn("backup.dir", t.log_text())


class ManifestIsChecked(BackupTestCase):
    """Issue 27.5: restore derives every sequence from the checkpoint's own keys; the manifest is
    a checksummed summary bound to that checkpoint, and any disagreement refuses the restore."""

    def backups(self):
        cfg = config(self.backup_dir, extra=GAPLESS)
        t = self.ticketd(cfg)
        next_ids(t, "Tickets64", 10)
        for _ in range(3):
            next_ids(t, "Invoices")
        first = online_backup(t)
        next_ids(t, "Tickets64", 10)
        next_ids(t, "Invoices")
        second = online_backup(t)
        t.stop()
        return first["path"], second["path"]

    def read(self, backup):
        with open(os.path.join(backup, MANIFEST)) as f:
            return json.load(f)

    def write(self, backup, manifest):
        with open(os.path.join(backup, MANIFEST), "w") as f:
            json.dump(manifest, f)

    def refused(self, backup, *flags, words=()):
        target = self.path("restored")
        r = self.restore(backup, target, "--gapless", "Invoices=4", "--gapless", "Receipts=0",
                         *flags)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 2, out)
        self.assertIn("nothing restored", out)
        for w in words:
            self.assertIn(w, out)
        self.assertFalse(os.path.exists(target) and os.listdir(target), out)

    def test_another_backups_manifest_is_refused(self):
        first, second = self.backups()
        shutil.copyfile(os.path.join(second, MANIFEST), os.path.join(first, MANIFEST))
        self.refused(first, words=["describes another checkpoint"])

    def test_an_edited_manifest_fails_its_checksum(self):
        first, _ = self.backups()
        m = self.read(first)
        m["sequences"] = [s for s in m["sequences"] if s["name"] != "Invoices"]
        self.write(first, m)
        r = self.restore(first, self.path("restored"), "--gapless", "Receipts=0")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("checksum", r.stdout + r.stderr)

    def unbound(self, original):
        """`original` as an earlier release wrote it: format 1, no checksum, no binding."""
        m = json.loads(json.dumps(original))
        m["format"] = 1
        for key in ("checksum", "store_identity", "store_position"):
            m.pop(key, None)
        return m

    def test_a_manifest_that_leaves_out_or_retypes_a_gapless_sequence_is_refused(self):
        first, _ = self.backups()
        original = self.read(first)
        m = self.unbound(original)
        m["sequences"] = [s for s in m["sequences"] if s["name"] != "Invoices"]
        self.write(first, m)
        self.refused(first, words=["'Invoices', which the manifest leaves out"])
        m = self.unbound(original)
        for s in m["sequences"]:
            if s["name"] == "Invoices":
                s["kind"] = "ticket"
                s["ceiling"] = "100"
        self.write(first, m)
        self.refused(first, words=["kind ticket, the checkpoint gapless"])

    def test_a_lowered_committed_number_is_refused(self):
        first, _ = self.backups()
        original = self.read(first)
        m = self.unbound(original)
        for s in m["sequences"]:
            if s["name"] == "Invoices":
                s["highest_committed"] = "1"
        self.write(first, m)
        self.refused(first, words=["highest_committed 1, the checkpoint 3"])
        # Stated below what the checkpoint holds committed: refused too.
        self.write(first, original)
        r = self.restore(first, self.path("restored"), "--gapless", "Invoices=2",
                         "--gapless", "Receipts=0")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("up to 3 committed", r.stdout)

    def test_an_unbound_manifest_that_agrees_restores(self):
        first, _ = self.backups()
        self.write(first, self.unbound(self.read(first)))
        r = self.restore(first, self.path("restored"), "--gapless", "Invoices=3",
                         "--gapless", "Receipts=0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("format 1", r.stdout)
        self.assert_verifies(self.path("restored"))

    def test_a_zero_skip_needs_force(self):
        first, _ = self.backups()
        for flags in (["--skip-ahead", "0"], ["--skip-ahead", "Tickets64=0"]):
            r = self.restore(first, self.path("restored"), "--gapless", "Invoices=3",
                             "--gapless", "Receipts=0", *flags)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("--force", r.stdout + r.stderr)
            self.assertFalse(os.path.exists(self.path("restored")))
        r = self.restore(first, self.path("restored"), "--gapless", "Invoices=3",
                         "--gapless", "Receipts=0", "--skip-ahead", "0", "--force")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class Gapless(BackupTestCase):
    def reserve(self, t, name):
        status, body = request(t, "POST", f"/v1/sequences/{name}/reservations",
                               {"holder": "backup-test", "ttl_ms": 60000})
        self.assertEqual(status, 201, body)
        return body["reservation_id"], int(body["id"])

    def finish(self, t, name, rid, how):
        body = {"reason": "cancelled order"} if how == "void" else {}
        status, body = request(t, "POST", f"/v1/sequences/{name}/reservations/{rid}/{how}", body)
        self.assertEqual(status, 200, body)

    def test_restore_needs_the_last_number_used_and_continues_right_after_it(self):
        cfg = config(self.backup_dir, extra=GAPLESS)
        t = self.ticketd(cfg)
        invoices = [next_ids(t, "Invoices")[0] for _ in range(3)]
        self.assertEqual(invoices, [1, 2, 3])
        rid4, n4 = self.reserve(t, "Invoices")
        self.finish(t, "Invoices", rid4, "void")  # 4 is used up, as a void
        rid5, n5 = self.reserve(t, "Invoices")  # in flight while the backup is taken
        self.assertEqual((n4, n5), (4, 5))
        receipts = [next_ids(t, "Receipts")[0] for _ in range(2)]
        self.assertEqual(receipts, [100, 110])
        manifest = online_backup(t)
        inv = by_name(manifest)["Invoices"]
        self.assertEqual(inv["kind"], "gapless")
        self.assertEqual(inv["highest_committed"], "4")
        self.assertIn("committed_below", inv)
        self.assertEqual(inv["reserved"], 1)
        self.assertEqual(inv["highest_reserved"], "5")
        self.assertEqual(by_name(manifest)["Receipts"]["highest_committed"], "110")
        # After the backup: 5 committed, then 6 and 7; Receipts 120.
        self.finish(t, "Invoices", rid5, "commit")
        invoices += [n4, n5] + [next_ids(t, "Invoices")[0] for _ in range(2)]
        receipts += [next_ids(t, "Receipts")[0]]
        t.kill9()
        last_invoice, last_receipt = invoices[-1], receipts[-1]
        self.assertEqual((last_invoice, last_receipt), (7, 120))

        missing = self.path("restored")
        empty = self.path("empty")
        os.mkdir(empty)
        for target in (missing, empty):
            r = self.restore(manifest["path"], target, "--skip-ahead", "auto")
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("--gapless Invoices=N", r.stdout)
            self.assertIn("--gapless Receipts=N", r.stdout)  # every refusal at once
            self.assertIn("numbers up to 4 committed", r.stdout)
        self.assertFalse(os.path.exists(missing), "a refused restore leaves no data dir")
        self.assertEqual(os.listdir(empty), [], "a refused restore leaves the dir as found")

        receipts_ok = ["--gapless", f"Receipts={last_receipt}"]
        refusals = [
            (["--gapless", "Invoices=3"] + receipts_ok,
             "--gapless Invoices=3: the backup shows numbers up to 4 committed"),
            (["--gapless", "Invoices=0"] + receipts_ok,
             "--gapless Invoices=0: the backup shows numbers up to 4 committed"),
            (["--gapless", f"Invoices={last_invoice}", "--gapless", "Receipts=125"],
             "--gapless Receipts=125: not a number of the sequence"),
            (["--gapless", f"Invoices={last_invoice}", "--gapless", "Receipts=100"],
             "--gapless Receipts=100: the backup shows numbers up to 110 committed"),
            (["--gapless", f"Invoices={last_invoice}", "--gapless", "Tickets64=5"] + receipts_ok,
             "--gapless Tickets64: the backup holds no gapless sequence of that name"),
        ]
        for flags, message in refusals:
            r = self.restore(manifest["path"], missing, *flags)
            self.assertEqual(r.returncode, 2, (flags, r.stdout + r.stderr))
            self.assertIn(message, r.stdout, flags)
            self.assertFalse(os.path.exists(missing), flags)

        # The highest number the backup shows is itself an acceptable statement.
        boundary = self.path("boundary")
        r = self.restore(manifest["path"], boundary, "--gapless", "Invoices=4", *receipts_ok)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("restore: Invoices: continues at exactly 5", r.stdout)

        r = self.restore(manifest["path"], missing, "--gapless", f"Invoices={last_invoice}",
                         *receipts_ok)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("restore: Invoices: continues at exactly 8 (last number used 7, as stated); "
                      "1 reservation(s) of the backup dropped", r.stdout)
        self.assertIn("restore: Receipts: continues at exactly 130", r.stdout)
        self.assert_verifies(missing)
        t2 = self.ticketd(cfg, data_dir=missing)
        self.assertEqual(next_ids(t2, "Invoices"), [last_invoice + 1])
        rid, n = self.reserve(t2, "Invoices")
        self.assertEqual(n, last_invoice + 2)
        self.finish(t2, "Invoices", rid, "commit")
        self.assertEqual(next_ids(t2, "Receipts"), [last_receipt + 10])
        self.assertEqual(t2.stop(), 0)
        self.assert_verifies(missing)


class ExactSkip(BackupTestCase):
    def test_skip_ahead_n_and_name_n_move_the_ceiling_by_exactly_n_values(self):
        cfg = config(self.backup_dir)
        t = self.ticketd(cfg)
        next_ids(t, "Tickets64", 7)
        manifest = online_backup(t)  # Tickets32 never issued: its ceiling 0 is off its grid
        t.kill9()
        seqs = by_name(manifest)
        c64, c32 = int(seqs["Tickets64"]["ceiling"]), int(seqs["Tickets32"]["ceiling"])
        self.assertGreaterEqual(c64, 7)

        def align_up(v, increment, offset):
            return v + (offset - v) % increment

        cases = [
            (["--skip-ahead", "5000"], c64 + 5000, align_up(c32 + 5000 * 2, 2, 1)),
            (["--skip-ahead", "Tickets64=3", "--skip-ahead", "Tickets32=7"], c64 + 3,
             align_up(c32 + 7 * 2, 2, 1)),
            (["--skip-ahead", "Tickets32=1", "--skip-ahead", "5000"], c64 + 5000,
             align_up(c32 + 2, 2, 1)),
        ]
        for i, (flags, ceiling64, ceiling32) in enumerate(cases):
            restored = self.path(f"restored-{i}")
            r = self.restore(manifest["path"], restored, *flags)
            self.assertEqual(r.returncode, 0, (flags, r.stdout + r.stderr))
            self.assertIn(f"restore: Tickets64: ceiling {c64} -> {ceiling64} (--skip-ahead ",
                          r.stdout, flags)
            self.assertIn(f"restore: Tickets32: ceiling {c32} -> {ceiling32} (--skip-ahead ",
                          r.stdout, flags)
            self.assert_verifies(restored)
            t2 = self.ticketd(cfg, data_dir=restored)
            self.assertEqual(next_ids(t2, "Tickets64", 2), [ceiling64 + 1, ceiling64 + 2], flags)
            got32 = next_ids(t2, "Tickets32", 2)
            self.assertEqual(got32, [ceiling32 + 2, ceiling32 + 4], flags)
            self.assertTrue(all(v % 2 == 1 for v in got32), got32)
            t2.stop()

    def test_unknown_names_and_bad_values_are_refused(self):
        cfg = config(self.backup_dir)
        t = self.ticketd(cfg)
        manifest = online_backup(t)
        t.stop()
        target = self.path("restored")
        r = self.restore(manifest["path"], target, "--skip-ahead", "Nope=5")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--skip-ahead Nope: the backup holds no sequence of that name", r.stdout)
        for bad in ("-5", "lots", "Tickets64=x"):
            r = self.restore(manifest["path"], target, "--skip-ahead", bad)
            self.assertEqual(r.returncode, 2, (bad, r.stdout + r.stderr))
        self.assertFalse(os.path.exists(target))


class OfflineBackup(BackupTestCase):
    def test_refused_while_ticketd_runs_then_restorable_after_stop(self):
        cfg = config()
        t = self.ticketd(cfg)
        issued = next_ids(t, "Tickets64", 50)
        out = self.path("offline")
        r = run(["backup", "--data-dir", t.data_dir, "--to", out])
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("POST /v1/admin/backup", r.stdout + r.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertFalse(os.path.exists(out + ".partial"))
        self.assertIsNone(t.proc.poll(), "the running ticketd must be left alone")
        issued += next_ids(t, "Tickets64", 50)
        self.assertEqual(t.stop(), 0)

        r = run(["backup", "--data-dir", t.data_dir, "--to", out])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, MANIFEST)) as f:
            manifest = json.load(f)
        self.assertFalse(manifest["online"])
        ceiling = int(by_name(manifest)["Tickets64"]["ceiling"])
        self.assertGreaterEqual(ceiling, max(issued))
        r = run(["backup", "--data-dir", t.data_dir, "--to", out])
        self.assertNotEqual(r.returncode, 0, "a backup never overwrites another")

        restored = self.path("restored")
        r = self.restore(out, restored, "--skip-ahead", "auto")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"restore: Tickets64: ceiling {ceiling} -> ", r.stdout)
        self.assert_verifies(restored)
        t2 = self.ticketd(cfg, data_dir=restored)
        self.assertGreater(next_ids(t2, "Tickets64")[0], ceiling)


    def test_restore_of_an_offline_backup_asks_about_an_unused_gapless_sequence(self):
        # The online backup lists a configured gapless sequence that has issued nothing yet, so
        # that a restore asks for its last number; the offline one must not let it restart at 1.
        cfg = config(extra=GAPLESS)
        t = self.ticketd(cfg)
        self.assertEqual(t.stop(), 0)
        out = self.path("offline")
        r = run(["backup", "--data-dir", t.data_dir, "--to", out])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        t2 = self.ticketd(cfg, data_dir=t.data_dir)
        used = [next_ids(t2, "Invoices")[0] for _ in range(3)]
        t2.kill9()
        restored = self.path("restored")
        r = self.restore(out, restored, "--skip-ahead", "auto")
        if r.returncode == 0:
            t3 = self.ticketd(cfg, data_dir=restored)
            again = next_ids(t3, "Invoices")[0]
            self.assertNotIn(again, used, "gapless number issued twice after restoring an "
                             "offline backup without --gapless:\n" + r.stdout)
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("--gapless Invoices=N", r.stdout)

    def test_offline_backup_holds_the_rate_of_the_run_before_the_stop(self):
        # SIGTERM, then an offline backup: the values issued since the last one-minute window
        # must count in peak_per_minute, or a restore skips only 2 x cache.
        cache = 100
        cfg = config(cache=cache)
        t = self.ticketd(cfg)

        def load(daemon, seconds):
            values, until = [], time.time() + seconds
            while time.time() < until:
                values += next_ids(daemon, "Tickets64", 100)
            return values

        before = load(t, 2)
        self.assertEqual(t.stop(), 0)
        out = self.path("offline")
        r = run(["backup", "--data-dir", t.data_dir, "--to", out])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        t2 = self.ticketd(cfg, data_dir=t.data_dir)
        issued = load(t2, 2)  # the same load again, then a crash
        t2.kill9()
        restored = self.path("restored")
        r = self.restore(out, restored, "--skip-ahead", "auto")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        t3 = self.ticketd(cfg, data_dir=restored)
        first = next_ids(t3, "Tickets64")[0]
        with open(os.path.join(out, MANIFEST)) as f:
            peak = by_name(json.load(f))["Tickets64"]["peak_per_minute"]
        self.assertGreater(first, max(issued),
                           f"value {first} issued twice: the offline backup recorded "
                           f"peak_per_minute {peak} after {len(before)} values in 2 s\n"
                           + r.stdout)


class RestoreTarget(BackupTestCase):
    def test_non_empty_data_dir_is_refused_and_left_untouched(self):
        cfg = config(self.backup_dir)
        t = self.ticketd(cfg)
        next_ids(t, "Tickets64", 10)
        manifest = online_backup(t)
        t.stop()
        target = self.path("occupied")
        os.makedirs(os.path.join(target, "sub"))
        with open(os.path.join(target, "keep.txt"), "w") as f:
            f.write("not a ticketd store\n")
        with open(os.path.join(target, "sub", "deep.bin"), "wb") as f:
            f.write(b"\x00\x01\x02")
        before = dir_snapshot(target)
        r = self.restore(manifest["path"], target, "--skip-ahead", "auto")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("not empty", r.stdout)
        self.assertEqual(dir_snapshot(target), before)

        # Not even the data dir of a stopped ticketd is overwritten.
        before = dir_snapshot(t.data_dir)
        r = self.restore(manifest["path"], t.data_dir, "--skip-ahead", "auto")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(dir_snapshot(t.data_dir), before)

    def test_from_a_directory_that_is_no_backup(self):
        os.mkdir(self.path("nothing"))
        r = self.restore(self.path("nothing"), self.path("restored"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("is not a ticketd backup", r.stdout)
        self.assertFalse(os.path.exists(self.path("restored")))


class HttpRoute(BackupTestCase):
    def test_not_configured_without_backup_dir(self):
        t = self.ticketd(config())
        status, body = request(t, "POST", "/v1/admin/backup")
        self.assertEqual(status, 501, body)
        self.assertEqual(body["error"]["code"], "not_configured")

    def test_needs_the_bearer_token_when_tokens_are_set(self):
        t = self.ticketd(config(self.backup_dir, http_extra=f"  tokens: [ {TOKEN} ]\n"))
        status, body = request(t, "POST", "/v1/admin/backup")
        self.assertEqual(status, 401, body)
        status, body = request(t, "POST", "/v1/admin/backup", token=TOKEN[:-1] + "x")
        self.assertEqual(status, 401, body)
        self.assertFalse(os.path.exists(self.backup_dir) and os.listdir(self.backup_dir),
                         "a refused request wrote a backup")
        manifest = online_backup(t, token=TOKEN)
        self.assertTrue(os.path.isfile(os.path.join(manifest["path"], MANIFEST)))
        # Concurrent requests: one at a time, each in its own directory.
        results = [None] * 3

        def take(i):
            results[i] = request(t, "POST", "/v1/admin/backup", token=TOKEN, timeout=60)

        threads = [threading.Thread(target=take, args=(i,)) for i in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        self.assertEqual([status for status, _ in results], [200] * 3, results)
        paths = {manifest["path"]} | {body["path"] for _, body in results}
        self.assertEqual(len(paths), 4, paths)
        self.assertEqual(sorted(os.listdir(self.backup_dir)),
                         sorted(os.path.basename(p) for p in paths))


class LeaseRetention(BackupTestCase):
    def lease(self, t, n):
        ids = []
        for _ in range(n):
            status, body = request(t, "POST", "/v1/sequences/Tickets64/blocks",
                                   {"size": 10, "holder": "backup-test"})
            self.assertEqual(status, 201, body)
            ids.append(body["lease_id"])
        return ids

    def leases(self, t):
        status, body = request(t, "GET", "/v1/sequences/Tickets64/blocks?limit=100")
        self.assertEqual(status, 200, body)
        return [entry["lease_id"] for entry in body["leases"]]  # newest first

    def wait_for_leases(self, t, expected, timeout=10):
        deadline = time.time() + timeout
        got = self.leases(t)
        while got != expected and time.time() < deadline:
            time.sleep(0.1)
            got = self.leases(t)
        self.assertEqual(got, expected, "\n" + t.log_text())

    def test_count_keeps_the_newest_per_sequence(self):
        t = self.ticketd(config())
        ids = self.lease(t, 12)
        self.assertEqual(self.leases(t), ids[::-1])
        self.assertEqual(t.stop(), 0)
        t2 = self.ticketd(config(http_extra="  lease_retention: 5\n"), data_dir=t.data_dir)
        self.wait_for_leases(t2, ids[::-1][:5])
        self.assertIn("lease retention: pruned 7 lease records", t2.log_text())

    def test_age_prunes_old_leases_and_keeps_young_ones(self):
        self.assertTrue(os.path.exists(LIBFAKETIME), "libfaketime (Debian faketime) is needed")
        t = self.ticketd(config())
        old = self.lease(t, 4)
        self.assertEqual(t.stop(), 0)
        later = self.ticketd(config(), data_dir=t.data_dir,
                             env={"LD_PRELOAD": preload(BINARY), "FAKETIME": "+31d",
                                  "FAKETIME_DONT_RESET": "1",
                                  # Under ASan the preloaded library comes before its runtime.
                                  "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
                                  ":verify_asan_link_order=0"})
        status, body = request(later, "POST", "/v1/sequences/Tickets64/blocks",
                               {"size": 10, "holder": "backup-test"})
        self.assertEqual(status, 201, body)
        granted = time.mktime(time.strptime(body["granted_at"][:19], "%Y-%m-%dT%H:%M:%S"))
        self.assertGreater(granted, time.time() + 30 * 86400, "faketime did not reach ticketd")
        self.wait_for_leases(later, [body["lease_id"]])
        self.assertIn(f"pruned {len(old)} lease records", later.log_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
