#!/usr/bin/env python3
"""`ticketd import` against real MariaDB servers: the Flickr Tickets64 table, an odd/even pair,
a MariaDB SEQUENCE, dry runs, re-runs, a wrong password and a data dir in use. Each old server
is a private mariadbd on 127.0.0.1 (a free port, a data dir in a temp dir); each imported data
dir is then served by the real ticketd, whose tickets must all lie above what the old server
issued."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ticketd_process import BINARY, Ticketd, free_port  # noqa: E402

MARIADBD = "/usr/sbin/mariadbd"
IMPORT_USER = "migrator"
IMPORT_PASSWORD = "imp-Pa55-q7Zr"  # must never appear in ticketd's output
MARGIN = 1000

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: ticket, password: ticket }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
"""

FLICKR_DDL = """
CREATE TABLE Tickets64 (
  id bigint(20) unsigned NOT NULL auto_increment,
  stub char(1) NOT NULL default '',
  PRIMARY KEY (id),
  UNIQUE KEY stub (stub)
) ENGINE=InnoDB AUTO_INCREMENT={start};
"""


def wait_port(port, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mariadbd exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("mariadbd did not listen")


class MariaDb:
    """One private mariadbd, as root on loopback (as bench/mysql_bench.py starts it)."""

    template = None  # a freshly installed data dir, copied for every server

    def __init__(self, tmp, name, *flags):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        data = os.path.join(self.dir, "data")
        shutil.copytree(MariaDb.template, data, symlinks=True)
        self.socket = os.path.join(self.dir, "mariadb.sock")
        self.port = free_port()
        self.err = open(os.path.join(self.dir, "mariadb.err"), "w")
        self.proc = subprocess.Popen(
            [MARIADBD, "--no-defaults", f"--datadir={data}", "--user=root", f"--port={self.port}",
             "--bind-address=127.0.0.1", f"--socket={self.socket}", "--skip-log-bin",
             "--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M",
             f"--pid-file={self.dir}/mariadb.pid"] + list(flags),
            stdout=subprocess.DEVNULL, stderr=self.err)
        wait_port(self.port, self.proc)
        self.sql(f"CREATE USER '{IMPORT_USER}'@'127.0.0.1' IDENTIFIED BY '{IMPORT_PASSWORD}';")

    @staticmethod
    def install(tmp):
        MariaDb.template = os.path.join(tmp, "template")
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={MariaDb.template}",
                        "--user=root", "--auth-root-authentication-method=normal",
                        "--skip-test-db"], check=True, capture_output=True)

    def sql(self, text, db=None):
        """Runs statements as root; returns the rows (tab-separated fields)."""
        r = subprocess.run(["mariadb", f"--socket={self.socket}", "-uroot", "-N", "-B"]
                           + ([db] if db else []), input=text, capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb failed: {r.stderr}")
        return [line.split("\t") for line in r.stdout.splitlines()]

    def database(self, db, ddl):
        self.sql(f"CREATE DATABASE {db}; USE {db}; {ddl}\n"
                 f"GRANT SELECT ON {db}.* TO '{IMPORT_USER}'@'127.0.0.1';")

    def flickr_tickets(self, db, n):
        """n tickets the Flickr way (REPLACE INTO + LAST_INSERT_ID), as issued values."""
        rows = self.sql("REPLACE INTO Tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID();\n"
                        * n, db)
        return [int(r[0]) for r in rows]

    def url(self, db, password=IMPORT_PASSWORD):
        auth = IMPORT_USER + (f":{password}" if password is not None else "")
        return f"mysql://{auth}@127.0.0.1:{self.port}/{db}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


def run_import(*args, env=None, timeout=60):
    full_env = dict(os.environ)
    full_env.pop("MYSQL_PWD", None)
    full_env.update(env or {})
    return subprocess.run([BINARY, "import"] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def plan_lines(stdout):
    """{name: (old_next, increment, offset, first, status)} from the import's output."""
    out = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) >= 9 and f[2] == "old_next" and f[4] == "grid" and f[6] == "first":
            inc, off = f[5].split("/")
            out[f[0]] = (int(f[3]), int(inc), int(off), int(f[7]), " ".join(f[8:]))
    return out


def http_next(t, name, count):
    req = urllib.request.Request(
        f"http://127.0.0.1:{t.http_port}/v1/sequences/{name}/next",
        data=json.dumps({"count": count}).encode(), method="POST",
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return [int(i) for i in json.load(r)["ids"]]


def mysql_tickets(t, table, n):
    """n tickets from ticketd's MySQL front end with the Flickr recipe, through the mariadb CLI."""
    r = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(t.mysql_port), "-uticket", "-pticket", "-N", "-B",
         "tickets"],
        input=f"REPLACE INTO {table} (stub) VALUES ('a'); SELECT LAST_INSERT_ID();\n" * n,
        capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"mariadb against ticketd failed: {r.stderr}")
    return [int(line) for line in r.stdout.split()]


class Import(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # scripts/setup installs mariadb-server: without it this fails, it never passes skipped.
        assert os.path.exists(MARIADBD), f"{MARIADBD} is missing: run scripts/setup"
        cls.tmp = tempfile.mkdtemp(prefix="ticketd-import-")
        MariaDb.install(cls.tmp)
        cls.old = MariaDb(cls.tmp, "old")  # the server's grid is 1/1

    @classmethod
    def tearDownClass(cls):
        cls.old.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for c in reversed(self.cleanups):
            c()

    def data_dir(self):
        d = tempfile.mkdtemp(prefix="data-", dir=self.tmp)
        return d

    def ticketd(self, data_dir, sequences=""):
        t = Ticketd(config=CONFIG + (sequences or "  - {{ name: Unrelated, kind: ticket }}\n"),
                    data_dir=data_dir)
        self.cleanups.append(t.cleanup)
        return t.start()

    def assert_no_secret(self, r):
        self.assertNotIn(IMPORT_PASSWORD, r.stdout + r.stderr)

    def test_flickr_tickets64_continues_above_the_old_server(self):
        self.old.database("flickr", FLICKR_DDL.format(start=5000000000) +
                          "CREATE TABLE Tickets32 (id int(10) unsigned NOT NULL auto_increment,"
                          " stub char(1) NOT NULL default '', PRIMARY KEY (id),"
                          " UNIQUE KEY stub (stub)) ENGINE=InnoDB;"
                          "CREATE TABLE notes (k int PRIMARY KEY, v text);")
        issued = self.old.flickr_tickets("flickr", 5)
        self.assertEqual(issued, list(range(5000000000, 5000000005)))
        d = self.data_dir()
        r = run_import("--from", self.old.url("flickr"), "--data-dir", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assert_no_secret(r)
        self.assertIn(f"mysql://{IMPORT_USER}:***@127.0.0.1:{self.old.port}/flickr", r.stdout)
        plan = plan_lines(r.stdout)
        self.assertEqual(plan["Tickets64"], (5000000005, 1, 1, 5000000005 + MARGIN, "created"))
        self.assertEqual(plan["Tickets32"], (1, 1, 1, 1 + MARGIN, "created"))
        self.assertRegex(r.stdout, r"notes +skipped: AUTO_INCREMENT is NULL")
        self.assertIn("audit sequence_created: sequence 'Tickets64' created", r.stderr)
        v = subprocess.run([BINARY, "verify", "--data-dir", d], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(v.returncode, 0, v.stdout)
        self.assertRegex(v.stdout, r"ticket +Tickets64 +ceiling 5000001004\n")

        # The config defines Tickets64 on the same grid (1/1): ensure_configured keeps the
        # imported start, so the first ticket is the imported first value.
        t = self.ticketd(d, "  - {{ name: Tickets64, kind: ticket }}\n")
        got = mysql_tickets(t, "Tickets64", 3) + http_next(t, "Tickets64", 1000)
        got += mysql_tickets(t, "Tickets32", 2)
        self.assertEqual(got[0], 5000000005 + MARGIN)
        sixty_four = got[:1003]
        self.assertEqual(sixty_four, sorted(set(sixty_four)))
        self.assertGreater(min(sixty_four), max(issued))
        self.assertEqual(got[1003:], [1 + MARGIN, 2 + MARGIN])
        # Tickets32 kept its column's limit.
        with urllib.request.urlopen(f"http://127.0.0.1:{t.http_port}/v1/sequences/Tickets32",
                                    timeout=30) as resp:
            self.assertEqual(str(json.load(resp)["max_value"]), "4294967295")

    def test_odd_even_pair_stays_disjoint(self):
        odd = MariaDb(self.tmp, "odd", "--auto-increment-increment=2", "--auto-increment-offset=1")
        self.cleanups.append(odd.stop)
        even = MariaDb(self.tmp, "even", "--auto-increment-increment=2",
                       "--auto-increment-offset=2")
        self.cleanups.append(even.stop)
        old_values = []
        for server in (odd, even):
            server.database("tickets", FLICKR_DDL.format(start=1000))
            old_values += server.flickr_tickets("tickets", 40)
        self.assertEqual(len(set(old_values)), 80)
        dirs = {}
        for name, server, offset in (("odd", odd, 1), ("even", even, 2)):
            dirs[name] = self.data_dir()
            # The password from MYSQL_PWD this time.
            r = run_import("--from", server.url("tickets", password=None), "--margin", "100",
                           "--data-dir", dirs[name], env={"MYSQL_PWD": IMPORT_PASSWORD})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assert_no_secret(r)
            old_next, inc, off, first, status = plan_lines(r.stdout)["Tickets64"]
            self.assertEqual((inc, off, status), (2, offset, "created"))
            self.assertGreaterEqual(first, old_next + 100)
            self.assertEqual(first % 2, offset % 2)
        # One ticketd configures the name on the same grid, the other leaves it out.
        t_odd = self.ticketd(dirs["odd"],
                             "  - {{ name: Tickets64, kind: ticket, increment: 2, offset: 1 }}\n")
        t_even = self.ticketd(dirs["even"])
        from_odd, from_even = [], []
        for _ in range(10):
            from_odd += http_next(t_odd, "Tickets64", 500)
            from_even += http_next(t_even, "Tickets64", 500)
            from_odd += mysql_tickets(t_odd, "Tickets64", 5)
            from_even += mysql_tickets(t_even, "Tickets64", 5)
        new = from_odd + from_even
        self.assertEqual(len(new), 10100)
        self.assertEqual(len(set(new)), len(new), "a ticket was issued twice")
        self.assertTrue(set(new).isdisjoint(old_values))
        self.assertGreater(min(new), max(old_values))
        self.assertTrue(all(v % 2 == 1 for v in from_odd))
        self.assertTrue(all(v % 2 == 0 for v in from_even))
        self.assertEqual(from_odd, sorted(from_odd))
        self.assertEqual(from_even, sorted(from_even))

    def test_mariadb_sequence_on_its_increment_grid(self):
        self.old.database("seqs", "CREATE SEQUENCE s START WITH 100 INCREMENT BY 5;")
        issued = [int(r[0]) for r in self.old.sql("SELECT NEXTVAL(s);\n" * 3, "seqs")]
        self.assertEqual(issued, [100, 105, 110])
        next_not_cached = int(self.old.sql("SELECT next_not_cached_value FROM s", "seqs")[0][0])
        d = self.data_dir()
        r = run_import("--from", self.old.url("seqs"), "--tables", "s", "--data-dir", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        old_next, inc, off, first, status = plan_lines(r.stdout)["s"]
        # The grid of START WITH 100 INCREMENT BY 5: the multiples of 5 (increment 5, offset 5).
        self.assertEqual((old_next, inc, off, status), (next_not_cached, 5, 5, "created"))
        self.assertEqual(first, next_not_cached + MARGIN)  # 5100 + 1000 is on the grid
        t = self.ticketd(d)
        got = http_next(t, "s", 20)
        self.assertEqual(got, [first + 5 * i for i in range(20)])
        self.assertTrue(all(v % 5 == 0 and v > max(issued) for v in got))
        t.cleanup()
        # The caveat of docs/operations.md: a config entry for the name without the same grid would
        # re-grid it; a grid is never a config edit, so the start is refused, naming restride.
        with self.assertRaises(RuntimeError) as refused:
            self.ticketd(d, "  - {{ name: s, kind: ticket }}\n")
        self.assertIn("ticketd restride", str(refused.exception))
        self.assertIn("the store increment 5 offset 5", str(refused.exception))
        # With the same grid in the entry it starts and continues on the grid.
        t = self.ticketd(d, "  - {{ name: s, kind: ticket, increment: 5, offset: 5 }}\n")
        again = http_next(t, "s", 2)
        self.assertGreater(again[0], max(got))
        self.assertEqual(again[1], again[0] + 5)

    def test_dry_run_writes_nothing(self):
        self.old.database("dry", FLICKR_DDL.format(start=77))
        missing = os.path.join(self.tmp, "never-created")
        r = run_import("--from", self.old.url("dry"), "--dry-run", "--data-dir", missing)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(plan_lines(r.stdout)["Tickets64"], (77, 1, 1, 77 + MARGIN, "planned"))
        self.assertIn("nothing written", r.stdout)
        self.assertFalse(os.path.exists(missing))
        r = run_import("--from", self.old.url("dry"), "--dry-run")  # no data dir at all
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # An existing data dir is not touched either.
        d = self.data_dir()
        r = run_import("--from", self.old.url("dry"), "--dry-run", "--data-dir", d)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(os.listdir(d), [])

    def test_rerun_is_idempotent_and_never_lowers(self):
        self.old.database("again", FLICKR_DDL.format(start=9000))
        self.old.flickr_tickets("again", 3)
        d = self.data_dir()
        url = self.old.url("again")
        first = plan_lines(run_import("--from", url, "--data-dir", d).stdout)["Tickets64"]
        self.assertEqual(first, (9003, 1, 1, 9003 + MARGIN, "created"))
        r = run_import("--from", url, "--data-dir", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(plan_lines(r.stdout)["Tickets64"], (9003, 1, 1, 9003 + MARGIN, "unchanged"))
        # A smaller margin never lowers the sequence: it keeps its next value.
        r = run_import("--from", url, "--margin", "0", "--data-dir", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(plan_lines(r.stdout)["Tickets64"], (9003, 1, 1, 9003 + MARGIN, "unchanged"))
        # Tickets taken after the import move the sequence past a later plan: unchanged again.
        t = self.ticketd(d)
        taken = http_next(t, "Tickets64", 2000)
        self.assertEqual(taken[0], 9003 + MARGIN)
        t.stop()
        r = run_import("--from", url, "--margin", "2000", "--data-dir", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        status = plan_lines(r.stdout)["Tickets64"]
        self.assertEqual(status[4], "unchanged")
        self.assertGreater(status[3], max(taken))
        # A larger margin than what was used moves it forward.
        r = run_import("--from", url, "--margin", "1000000", "--data-dir", d)
        self.assertEqual(plan_lines(r.stdout)["Tickets64"], (9003, 1, 1, 1009003, "advanced"))
        t.start()
        self.assertEqual(http_next(t, "Tickets64", 1), [1009003])

    def test_other_grid_in_ticketd_is_refused(self):
        self.old.database("regrid", FLICKR_DDL.format(start=50))
        d = self.data_dir()
        t = self.ticketd(d, "  - {{ name: Tickets64, kind: ticket, increment: 3, offset: 2 }}\n")
        before = http_next(t, "Tickets64", 1)
        t.stop()
        r = run_import("--from", self.old.url("regrid"), "--data-dir", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("not re-gridding", r.stderr)
        self.assertRegex(r.stdout, r"Tickets64 .* refused: ticketd's sequence is on "
                                   r"increment/offset 3/2, the old server's on 1/1")
        t.start()
        after = http_next(t, "Tickets64", 1)[0]  # untouched: still on 3/2
        self.assertEqual(after % 3, 2)
        self.assertGreater(after, before[0])

    def test_wrong_password_fails_without_printing_it(self):
        self.old.database("secret", FLICKR_DDL.format(start=1))
        d = self.data_dir()
        wrong = "wrong-Pa55-z9"
        for args, env in ((["--from", self.old.url("secret", password=wrong)], None),
                          (["--from", self.old.url("secret", password=None)],
                           {"MYSQL_PWD": wrong})):
            r = run_import(*args, "--data-dir", d, env=env)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("cannot connect to", r.stderr)
            self.assertIn("Access denied", r.stderr)
            self.assertNotIn(wrong, r.stdout + r.stderr)
        self.assertEqual(os.listdir(d), [], "nothing may be written after a failed read")
        # A server that is not there: exit 1 too.
        r = run_import("--from", f"mysql://u:{wrong}@127.0.0.1:{free_port()}/x", "--dry-run")
        self.assertEqual(r.returncode, 1)
        self.assertNotIn(wrong, r.stdout + r.stderr)

    def test_password_is_blanked_in_the_process_list(self):
        # A server that accepts and never greets keeps the import waiting in its connect.
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        self.cleanups.append(silent.close)
        secret = "cmdline-Pa55-w0rd"
        proc = subprocess.Popen(
            [BINARY, "import", "--from",
             f"mysql://u:{secret}@127.0.0.1:{silent.getsockname()[1]}/d", "--dry-run"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            conn, _ = silent.accept()  # the import is connecting: argv was parsed
            self.cleanups.append(conn.close)
            with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            self.assertNotIn(secret, cmdline)
            self.assertIn("mysql://u:" + "x" * len(secret) + "@127.0.0.1:", cmdline)
        finally:
            proc.kill()
            out, err = proc.communicate()
        self.assertNotIn(secret, out + err)

    def test_data_dir_in_use_is_refused(self):
        self.old.database("busy", FLICKR_DDL.format(start=500))
        d = self.data_dir()
        t = self.ticketd(d)
        r = run_import("--from", self.old.url("busy"), "--data-dir", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"is in use by another ticketd (pid {t.proc.pid})", r.stderr)
        self.assertIsNone(t.proc.poll(), "the running ticketd must keep running")
        with self.assertRaises(urllib.error.HTTPError):
            http_next(t, "Tickets64", 1)  # nothing was imported behind its back

    def test_usage_errors_exit_2(self):
        for args, message in (
                ([], "--from mysql://USER[:PASS]@HOST[:PORT]/DB is required"),
                (["--from", self.old.url("x")], "--data-dir DIR is required"),
                (["--from", "postgres://u:hunter2@h/d", "--dry-run"], "the scheme must be"),
                (["--from", "mysql://u:hunter2@h:0/d", "--dry-run"], "the port must be"),
                (["--from", self.old.url("x"), "--margin", "-1", "--dry-run"], "--margin"),
                (["--from", self.old.url("x"), "--tables", "a,,b", "--dry-run"], "empty name"),
                (["--bogus"], "unknown argument '--bogus'")):
            r = run_import(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(message, r.stderr, args)
            self.assertNotIn("hunter2", r.stdout + r.stderr)
            self.assertNotIn(IMPORT_PASSWORD, r.stdout + r.stderr)
        r = run_import("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("MYSQL_PWD", r.stdout)

    def test_unknown_table_in_list_fails(self):
        self.old.database("some", FLICKR_DDL.format(start=10))
        r = run_import("--from", self.old.url("some"), "--tables", "Tickets64,Nope", "--dry-run")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("'Nope' is not a table or sequence of 'some'", r.stderr)
        self.assertIn("Tickets64", plan_lines(r.stdout))

    def test_tables_the_user_cannot_see_refuse_the_import_unless_told(self):
        # Issue 27.10: granted one table only, the user does not see the other in
        # information_schema; the import says so and writes nothing.
        self.old.sql("CREATE DATABASE partial; USE partial; "
                     + FLICKR_DDL.format(start=700)
                     + "CREATE TABLE Hidden (id bigint unsigned NOT NULL auto_increment, "
                       "stub char(1) NOT NULL default '', PRIMARY KEY (id)) "
                       "AUTO_INCREMENT=900000;\n"
                     f"GRANT SELECT ON partial.Tickets64 TO '{IMPORT_USER}'@'127.0.0.1';")
        data = self.data_dir()
        r = run_import("--from", self.old.url("partial"), "--data-dir", data)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("refused, nothing written", r.stderr)
        self.assertIn("has no privilege on all of 'partial'", r.stderr)
        self.assertIn("--visible-tables-only", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(data, "CURRENT")))
        self.assert_no_secret(r)
        # Told to, it imports what it sees, and only that.
        r = run_import("--from", self.old.url("partial"), "--data-dir", data,
                       "--visible-tables-only")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(set(plan_lines(r.stdout)), {"Tickets64"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
