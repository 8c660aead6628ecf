#!/usr/bin/python3
"""Real MySQL clients against a real ticketd over loopback: the mariadb CLI, PyMySQL, mysqlclient
(MySQLdb), Node mysql2 (query and execute) and sysbench. Runs with Debian's python3, which has the
driver packages."""
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

import MySQLdb  # noqa: E402
import pymysql  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def pymysql_conn(t, **kw):
    args = dict(host="127.0.0.1", port=t.mysql_port, user="app", password="s3cret-app",
                database="tickets")
    args.update(kw)
    return pymysql.connect(**args)


class Clients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = Ticketd().start()

    @classmethod
    def tearDownClass(cls):
        cls.t.cleanup()

    def mariadb(self, sql, *extra):
        r = subprocess.run(["mariadb", "-h127.0.0.1", f"-P{self.t.mysql_port}", "-uapp",
                            "-ps3cret-app", "--batch", "--skip-column-names", *extra, "tickets",
                            "-e", sql], capture_output=True, text=True, timeout=30)
        return r

    def assert_increasing(self, values):
        self.assertEqual(values, sorted(values))
        self.assertEqual(len(values), len(set(values)))

    def test_mariadb_cli_flickr_recipe(self):
        r = self.mariadb("REPLACE INTO Tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID();" * 5)
        self.assertEqual(r.returncode, 0, r.stderr)
        ids = [int(x) for x in r.stdout.split()]
        self.assertEqual(len(ids), 5)
        self.assert_increasing(ids)
        r = self.mariadb("SELECT NEXTVAL(Tickets64); SELECT NEXT VALUE FOR Tickets64; "
                         "SELECT NEXT 10 VALUES FROM Tickets64; SELECT NEXTVAL(Tickets64)")
        self.assertEqual(r.returncode, 0, r.stderr)
        a, b, block, c = [int(x) for x in r.stdout.split()]
        self.assertLess(a, b)
        self.assertLess(b, block)
        self.assertEqual(c, block + 10)  # the block took 10 values

    def test_mariadb_cli_interactive_connect_chatter(self):
        # Without --batch the client asks for @@version_comment and, with auto-rehash, the
        # field lists of every table (COM_FIELD_LIST).
        r = subprocess.run(["mariadb", "-h127.0.0.1", f"-P{self.t.mysql_port}", "-uapp",
                            "-ps3cret-app", "--auto-rehash", "tickets", "-e", "status"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("8.0.36-ticketd", r.stdout)

    def check_driver_flickr(self, conn, lastrowid, commit):
        cur = conn.cursor()
        ids = []
        for _ in range(20):
            cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            native = lastrowid(cur)
            cur.execute("SELECT LAST_INSERT_ID()")
            (selected,) = cur.fetchone()
            self.assertEqual(native, selected)
            ids.append(selected)
            commit()
        self.assert_increasing(ids)
        cur.execute("SELECT NEXTVAL(Tickets64)")
        (a,) = cur.fetchone()
        cur.execute("SELECT NEXT VALUE FOR Tickets64")
        (b,) = cur.fetchone()
        cur.execute("SELECT NEXT 1000 VALUES FROM Tickets64")
        (first,) = cur.fetchone()
        cur.execute("SELECT NEXTVAL(Tickets64)")
        (after,) = cur.fetchone()
        self.assertLess(ids[-1], a)
        self.assertLess(a, b)
        self.assertLess(b, first)
        self.assertEqual(after, first + 1000)

    def test_pymysql(self):
        conn = pymysql_conn(self.t)  # PyMySQL turns autocommit off and we COMMIT each time
        self.check_driver_flickr(conn, lambda c: c.lastrowid, conn.commit)
        conn.close()

    def test_mysqlclient(self):
        conn = MySQLdb.connect(host="127.0.0.1", port=self.t.mysql_port, user="app",
                               passwd="s3cret-app", db="tickets")
        self.check_driver_flickr(conn, lambda c: c.lastrowid, conn.commit)
        conn.cursor().execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
        self.assertGreater(conn.insert_id(), 0)  # mysql_insert_id()
        conn.close()

    def test_mysqlclient_multi_statements(self):
        conn = MySQLdb.connect(host="127.0.0.1", port=self.t.mysql_port, user="app",
                               passwd="s3cret-app", db="tickets",
                               client_flag=MySQLdb.constants.CLIENT.MULTI_STATEMENTS)
        cur = conn.cursor()
        cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID()")
        native = cur.lastrowid
        self.assertTrue(cur.nextset())
        self.assertEqual(cur.fetchone()[0], native)
        conn.close()

    def test_metrics_count_mysql_statements_and_blocks(self):
        def scrape():
            c = http.client.HTTPConnection("127.0.0.1", self.t.http_port, timeout=10)
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
            c.close()
            return text

        def value(text, prefix):
            lines = [line for line in text.splitlines() if line.startswith(prefix)]
            return float(lines[0].split()[-1]) if lines else 0.0

        duration = ('ticketd_request_duration_seconds_count{frontend="mysql",'
                    'route="select_next_block"}')
        blocks = 'ticketd_blocks_leased_total{frontend="mysql",sequence="Tickets32"}'
        before = scrape()
        conn = pymysql_conn(self.t)
        cur = conn.cursor()
        cur.execute("SELECT NEXT 7 VALUES FROM Tickets32")
        cur.execute("REPLACE INTO Tickets32 (stub) VALUES ('a'), ('b')")
        cur.execute("REPLACE INTO Tickets32 (stub) VALUES ('a')")  # one ID: not a block
        conn.close()
        after = scrape()
        self.assertEqual(value(after, duration) - value(before, duration), 1, after)
        self.assertEqual(value(after, blocks) - value(before, blocks), 2, after)
        self.assertIn('ticketd_request_duration_seconds_count{frontend="mysql",'
                      'route="insert_ticket"}', after)

    def test_node_mysql2_query_and_execute(self):
        node_dir = os.path.join(ROOT, "tests", "clients")
        r = subprocess.run(["node", os.path.join(node_dir, "mysql2_client.js"),
                            str(self.t.mysql_port)], capture_output=True, text=True, timeout=60,
                           cwd=node_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        for native, selected, affected in out["query"]:
            self.assertEqual(native, selected)
            self.assertEqual(affected, 2)  # REPLACE over the stub row
        for native, selected in out["execute"]:
            self.assertEqual(native, selected)
        ids = [int(x[0]) for x in out["query"]] + [int(x[0]) for x in out["execute"]]
        self.assert_increasing(ids)
        nextvals = [int(x) for x in out["nextval"]]
        self.assert_increasing(nextvals)
        self.assertGreater(nextvals[0], ids[-1])
        self.assertGreater(int(out["block"]), nextvals[-1])
        self.assertEqual(out["errors"]["unknown"][:2], [1146, "42S02"])
        self.assertEqual(out["errors"]["syntax"], [1064, "42000"])
        self.assertEqual(str(out["after_errors"]), "1")
        # Described at prepare as sent at execute: name, type, flags, charset, length.
        for p in out["prepared"]:
            self.assertTrue(p["executed"], p["sql"])
            self.assertEqual(p["described"], p["executed"], p["sql"])
        one = out["prepared"][0]
        self.assertEqual(one["described"][0][1], 8, "SELECT 1 is a LONGLONG")  # MYSQL_TYPE_LONGLONG
        self.assertEqual(one["first"], "1")

    def test_sysbench_text_and_prepared(self):
        prefix = os.path.join(self.t.data_dir, "sb")
        for mode in ("text", "prepared"):
            r = subprocess.run(
                ["sysbench", os.path.join(ROOT, "bench", "sysbench", "tickets.lua"),
                 "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={self.t.mysql_port}",
                 "--mysql-user=app", "--mysql-password=s3cret-app", "--mysql-db=tickets",
                 "--threads=4", "--events=2000", f"--mode={mode}",
                 f"--verify-file={prefix}-{mode}", "run"],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("transactions:", r.stdout)
            self.assertNotIn("FATAL", r.stdout + r.stderr)
        seen = []
        for tid in range(4):
            with open(f"{prefix}-text.{tid}") as f:
                values = [int(x) for x in f.read().split()]
            self.assert_increasing(values)  # per connection
            seen += values
        self.assertEqual(len(seen), 2000)
        self.assertEqual(len(set(seen)), 2000)


class Statements(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = Ticketd().start()

    @classmethod
    def tearDownClass(cls):
        cls.t.cleanup()

    def setUp(self):
        self.conn = pymysql_conn(self.t, autocommit=True)
        self.cur = self.conn.cursor()

    def tearDown(self):
        self.conn.close()

    def one(self, sql):
        self.cur.execute(sql)
        return self.cur.fetchone()

    def error_of(self, sql):
        with self.assertRaises(pymysql.err.MySQLError) as cm:
            self.cur.execute(sql)
        return cm.exception.args

    def test_flickr_setup_script_runs_unchanged(self):
        self.cur.execute("""CREATE TABLE `Flickr64` (
  `id` bigint(20) unsigned NOT NULL auto_increment,
  `stub` char(1) NOT NULL default '',
  PRIMARY KEY  (`id`),
  UNIQUE KEY `stub` (`stub`)
) ENGINE=InnoDB""")
        self.cur.execute("REPLACE INTO Flickr64 (stub) VALUES ('a')")
        self.assertEqual(self.cur.lastrowid, 1)
        self.assertEqual(self.one("SELECT LAST_INSERT_ID()")[0], 1)
        self.cur.execute("ALTER TABLE Flickr64 AUTO_INCREMENT = 5000")
        self.cur.execute("INSERT INTO Flickr64 () VALUES ()")
        self.assertEqual(self.cur.lastrowid, 5000)
        self.cur.execute("ALTER TABLE Flickr64 AUTO_INCREMENT = 10")  # never backwards
        self.cur.execute("INSERT INTO Flickr64 (stub) VALUES ('a'), ('b'), ('c')")
        self.assertEqual(self.cur.lastrowid, 5001)  # the first of the block, as MySQL
        self.assertEqual(self.one("SELECT LAST_INSERT_ID()")[0], 5001)
        tables = [r[0] for r in (self.cur.execute("SHOW TABLES") and self.cur.fetchall())]
        self.assertIn("Flickr64", tables)
        create = self.one("SHOW CREATE TABLE Flickr64")[1]
        self.assertIn("AUTO_INCREMENT=5004", create)
        self.cur.execute("CREATE TABLE IF NOT EXISTS Flickr64 (id bigint unsigned NOT NULL "
                         "auto_increment, stub char(1), PRIMARY KEY (id))")
        self.assertEqual(self.one("SHOW WARNINGS")[1], 1050)
        self.assertEqual(self.error_of("CREATE TABLE Flickr64 (id int auto_increment, "
                                       "PRIMARY KEY (id))")[0], 1050)
        self.cur.execute("DROP TABLE Flickr64")
        self.assertEqual(self.error_of("REPLACE INTO Flickr64 (stub) VALUES ('a')")[0], 1146)
        # Re-creating the name resumes above everything the dropped table issued.
        self.cur.execute("CREATE TABLE Flickr64 (id bigint unsigned NOT NULL auto_increment "
                         "PRIMARY KEY, stub char(1)) AUTO_INCREMENT=1")
        self.cur.execute("REPLACE INTO tickets.`Flickr64` (stub) VALUES ('a')")
        self.assertGreater(self.cur.lastrowid, 5003)
        self.cur.execute("DROP TABLE IF EXISTS Flickr64, NotThere")
        self.assertEqual(self.error_of("DROP TABLE NotThere")[0], 1051)

    def test_create_table_needs_one_auto_increment_column(self):
        self.assertEqual(self.error_of("CREATE TABLE x (a int, b int)")[0], 1235)
        self.assertEqual(self.error_of("CREATE TABLE x (a int auto_increment, b int "
                                       "auto_increment)")[0], 1075)

    def test_mariadb_sequences(self):
        self.cur.execute("CREATE SEQUENCE s1 START WITH 100 INCREMENT BY 10 CACHE 5")
        self.assertIsNone(self.one("SELECT LASTVAL(s1)")[0])
        self.assertEqual(self.one("SELECT NEXTVAL(s1)")[0], 100)
        self.assertEqual(self.one("SELECT NEXT VALUE FOR s1")[0], 110)
        self.assertEqual(self.one("SELECT PREVIOUS VALUE FOR s1")[0], 110)
        self.assertEqual(self.one("SELECT SETVAL(s1, 1000)")[0], 1000)
        self.assertEqual(self.one("SELECT NEXTVAL(s1)")[0], 1010)
        self.assertIsNone(self.one("SELECT SETVAL(s1, 5)")[0])  # forward only
        self.assertEqual(self.one("SELECT NEXTVAL(s1)")[0], 1020)
        self.assertIn("increment by 10", self.one("SHOW CREATE SEQUENCE s1")[1])
        self.cur.execute("CREATE SEQUENCE IF NOT EXISTS s1")
        self.assertEqual(self.error_of("CREATE SEQUENCE s1")[0], 1050)
        self.assertEqual(self.error_of("CREATE SEQUENCE s2 CYCLE")[0], 1235)
        self.cur.execute("DROP SEQUENCE s1")
        self.assertEqual(self.error_of("SELECT NEXTVAL(s1)")[0], 1146)
        self.cur.execute("DROP SEQUENCE IF EXISTS s1")
        self.assertEqual(self.error_of("DROP SEQUENCE s1")[0], 4091)
        self.cur.execute("CREATE SEQUENCE s1 START WITH 100 INCREMENT BY 10")
        self.assertGreater(self.one("SELECT NEXTVAL(s1)")[0], 1020)

    def test_counter_idiom_from_the_manual(self):
        self.cur.execute("CREATE TABLE sequence (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY)")
        self.cur.execute("UPDATE sequence SET id=LAST_INSERT_ID(id+1)")
        first = self.one("SELECT LAST_INSERT_ID()")[0]
        self.cur.execute("UPDATE sequence SET id=LAST_INSERT_ID(id+1)")
        self.assertEqual(self.one("SELECT LAST_INSERT_ID()")[0], first + 1)

    def test_session_chatter(self):
        self.cur.execute("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
        self.cur.execute("SET SESSION sql_mode = concat(@@sql_mode, ',NO_ZERO_DATE'), "
                         "@@session.time_zone = '+00:00', @myvar = 42")
        self.assertTrue(self.one("SELECT @@sql_mode")[0].endswith(",NO_ZERO_DATE"))
        self.assertEqual(self.one("SELECT @@session.time_zone AS tz")[0], "+00:00")
        self.assertEqual(self.one("SELECT @myvar")[0], "42")
        self.assertEqual(self.one("SELECT @@auto_increment_increment, @@auto_increment_offset"),
                         (1, 1))
        self.assertEqual(self.one("SELECT @@max_allowed_packet")[0], 16777216)
        self.assertEqual(self.one("SELECT DATABASE()")[0], "tickets")
        self.assertTrue(self.one("SELECT VERSION()")[0].startswith("8.0."))
        self.assertEqual(self.one("SELECT USER()")[0], "app@127.0.0.1")
        self.assertGreater(self.one("SELECT CONNECTION_ID()")[0], 0)
        self.assertEqual(self.one("SELECT 1")[0], 1)
        rows = dict(self.cur.fetchall() if self.cur.execute(
            "SHOW VARIABLES LIKE 'auto_increment%'") else [])
        self.assertEqual(rows["auto_increment_increment"], "1")
        self.assertEqual(rows["auto_increment_offset"], "1")
        self.assertEqual(self.error_of("SET auto_increment_increment = 2")[0], 1235)
        self.cur.execute("SET auto_increment_increment = 1")  # the server's own value is fine
        self.assertEqual(self.error_of("SET GLOBAL wait_timeout = 5")[0], 1227)
        self.cur.execute("SET autocommit = 0")
        self.assertEqual(self.one("SELECT @@autocommit")[0], 0)
        self.cur.execute("BEGIN")
        self.cur.execute("COMMIT")
        self.cur.execute("START TRANSACTION")
        self.cur.execute("ROLLBACK")
        self.cur.execute("USE tickets")
        self.assertEqual(self.error_of("USE nowhere")[0], 1049)

    def test_uuid_v7_is_rfc9562_and_monotonic(self):
        uuids = []
        for _ in range(300):
            uuids.append(self.one("SELECT UUID_V7()")[0])
        for u in uuids:
            self.assertRegex(u, r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        self.assertEqual(uuids, sorted(uuids))  # generation order is sort order
        self.assertEqual(len(set(uuids)), len(uuids))
        ms = int(uuids[-1].replace("-", "")[:12], 16)
        self.assertLess(abs(ms - time.time() * 1000), 5000)

    def test_ulid_is_crockford_base32_and_monotonic(self):
        ulids = [self.one("SELECT ULID()")[0] for _ in range(300)]
        for u in ulids:
            self.assertRegex(u, r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
        self.assertEqual(ulids, sorted(ulids))  # generation order is sort order
        self.assertEqual(len(set(ulids)), len(ulids))
        alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
        ms = 0
        for c in ulids[-1][:10]:
            ms = ms * 32 + alphabet.index(c)
        self.assertLess(abs(ms - time.time() * 1000), 5000)

    def test_errors_keep_the_connection_usable(self):
        self.assertEqual(self.error_of("REPLACE INTO Nope (stub) VALUES ('a')")[:2],
                         (1146, "Table 'tickets.Nope' doesn't exist"))
        self.assertEqual(self.error_of("REPLACE INTO other.Tickets64 (stub) VALUES ('a')")[0],
                         1146)
        self.assertEqual(self.error_of("SELEKT 1")[0], 1064)
        self.assertEqual(self.error_of("DELETE FROM Tickets64")[0], 1235)
        self.assertEqual(self.error_of("")[0], 1065)
        self.assertEqual(self.one("SELECT 2")[0], 2)

    def test_wrong_password_unknown_user_and_database(self):
        for kw, code in ((dict(password="nope"), 1045), (dict(user="ghost"), 1045),
                         (dict(password=""), 1045), (dict(database="nodb"), 1049)):
            with self.assertRaises(pymysql.err.OperationalError) as cm:
                pymysql_conn(self.t, **kw)
            self.assertEqual(cm.exception.args[0], code, kw)
        with self.assertRaises(pymysql.err.OperationalError) as cm:
            pymysql_conn(self.t, password="nope")
        self.assertIn("Access denied for user 'app'@'127.0.0.1' (using password: YES)",
                      cm.exception.args[1])
        self.assertNotIn("s3cret-app", self.t.log_text())

    def test_oversized_packet_is_refused_and_server_stays_up(self):
        conn = pymysql_conn(self.t, max_allowed_packet=64 * 1024 * 1024)
        with self.assertRaises(pymysql.err.MySQLError) as cm:
            conn.cursor().execute("SELECT '" + "x" * (17 * 1024 * 1024) + "'")
        self.assertIn(1153, cm.exception.args + (getattr(cm.exception, "errno", None),))
        self.assertEqual(self.one("SELECT 3")[0], 3)

    def test_concurrent_connections_get_distinct_increasing_tickets(self):
        results = {}

        def worker(n):
            c = pymysql_conn(self.t, autocommit=True)
            cur = c.cursor()
            got = []
            for _ in range(200):
                cur.execute("REPLACE INTO Tickets32 (stub) VALUES ('a')")
                got.append(cur.lastrowid)
            results[n] = got
            c.close()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        everything = []
        for got in results.values():
            self.assertEqual(got, sorted(got))
            everything += got
        self.assertEqual(len(everything), 16 * 200)
        self.assertEqual(len(set(everything)), len(everything))
        self.assertTrue(all(v % 2 == 1 for v in everything))  # Tickets32 is 2/1: odd


LIMITS_CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  max_connections: 2
  wait_timeout: 1
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Tickets64, kind: ticket }}
"""


class Limits(unittest.TestCase):
    def test_max_connections_and_wait_timeout(self):
        t = Ticketd(config=LIMITS_CONFIG).start()
        try:
            # The fixture's readiness probe (a bare TCP connect) may still hold a slot for a
            # moment: wait until two real connections fit, then a third must be refused.
            a = pymysql_conn(t)
            for _ in range(100):
                try:
                    b = pymysql_conn(t)
                    break
                except pymysql.err.OperationalError:
                    time.sleep(0.02)
            else:
                self.fail("a second connection never fitted under max_connections: 2")
            with self.assertRaises(pymysql.err.OperationalError) as cm:
                pymysql_conn(t)
            self.assertEqual(cm.exception.args[0], 1040)
            self.assertIn("Too many connections", cm.exception.args[1])
            b.close()
            # A slot frees up when a connection ends (give the server a moment to see the FIN).
            for _ in range(50):
                try:
                    c = pymysql_conn(t)
                    break
                except pymysql.err.OperationalError:
                    time.sleep(0.05)
            else:
                self.fail("a freed connection slot was never reused")
            # wait_timeout: 1 s of idleness closes the connection, as mysqld does.
            time.sleep(2.5)
            with self.assertRaises(pymysql.err.OperationalError):
                a.cursor().execute("SELECT 1")
            with self.assertRaises(pymysql.err.OperationalError):
                c.cursor().execute("SELECT 1")
            d = pymysql_conn(t)
            d.cursor().execute("SELECT 1")
            d.close()
        finally:
            t.cleanup()

    def test_sigterm_with_open_connections_exits_cleanly(self):
        t = Ticketd().start()
        try:
            conns = [pymysql_conn(t) for _ in range(5)]
            conns[0].cursor().execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            self.assertEqual(t.stop(), 0)
            self.assertIn("ticketd stopped", t.log_text())
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
