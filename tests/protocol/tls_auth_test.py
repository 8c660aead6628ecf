#!/usr/bin/python3
"""TLS on both front ends and MySQL 8 authentication, with real clients over loopback: the
mariadb CLI, PyMySQL, mysqlclient (MySQLdb), Node mysql2, sysbench and curl, each verifying the
server's certificate against a CA this test creates with openssl. Also: caching_sha2_password
users over TLS and without, password_hash and sha256: token entries, require_secure_transport,
client certificates, and the config-permission check."""
import hashlib
import json
import os
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from test_pki import TestPki  # noqa: E402
from ticketd_process import BINARY, Ticketd  # noqa: E402

import MySQLdb  # noqa: E402
import pymysql  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
NODE_DIR = os.path.join(ROOT, "tests", "clients")
TOKEN = "tls-test-token-0123456789"
HASHED_PASSWORD = "hashed-pass"


def hash_password(password):
    r = subprocess.run([BINARY, "hash-password"], input=password + "\n", capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    return lines


def config(pki, extra_mysql="", tokens=None, http_tls=True):
    sha2 = hash_password(HASHED_PASSWORD)["caching_sha2_password"]
    token_entry = "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()
    http = f"  tls: {{{{ cert_file: {pki.server_cert}, key_file: {pki.server_key} }}}}\n" \
        if http_tls else ""
    return f"""
data_dir: {{data_dir}}
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  default_auth_plugin: caching_sha2_password
  tls: {{{{ cert_file: {pki.server_cert}, key_file: {pki.server_key}, ca_file: {pki.ca} }}}}
{extra_mysql}  users:
    - {{{{ name: app, password: s3cret-app }}}}
    - {{{{ name: old, password: old-pass, plugin: mysql_native_password }}}}
    - {{{{ name: hashed, password_hash: '{sha2}' }}}}
http:
  listen: 127.0.0.1:{{http_port}}
  tokens: ['{tokens or token_entry}']
{http}sequences:
  - {{{{ name: Tickets64, kind: ticket }}}}
"""


class TlsAndAuth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pki = TestPki()
        cls.t = Ticketd(config(cls.pki)).start()

    @classmethod
    def tearDownClass(cls):
        cls.t.cleanup()
        shutil.rmtree(cls.pki.dir, ignore_errors=True)

    # --- the mariadb CLI ------------------------------------------------------------------------

    def mariadb(self, sql, *tls, user="app", password="s3cret-app"):
        return subprocess.run(["mariadb", "-h127.0.0.1", f"-P{self.t.mysql_port}", f"-u{user}",
                               f"-p{password}", "--batch", "--skip-column-names", *tls, "tickets",
                               "-e", sql], capture_output=True, text=True, timeout=30)

    def test_mariadb_cli_verifies_the_server_and_logs_in_with_caching_sha2(self):
        r = self.mariadb("SELECT NEXTVAL(Tickets64); SHOW STATUS LIKE 'Ssl_version'",
                         f"--ssl-ca={self.pki.ca}", "--ssl-verify-server-cert")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split("\n")
        self.assertGreater(int(lines[0]), 0)
        self.assertRegex(lines[1], r"^Ssl_version\tTLSv1\.[23]$")

    def test_mariadb_cli_status_shows_the_cipher(self):
        r = subprocess.run(["mariadb", "-h127.0.0.1", f"-P{self.t.mysql_port}", "-uapp",
                            "-ps3cret-app", f"--ssl-ca={self.pki.ca}", "--ssl-verify-server-cert",
                            "tickets", "-e", "status"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"SSL:\s+Cipher in use is \S+")

    def test_mariadb_cli_refuses_a_server_signed_by_another_ca(self):
        r = self.mariadb("SELECT 1", f"--ssl-ca={self.pki.other_ca}", "--ssl-verify-server-cert")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("2026", r.stderr)  # CR_SSL_CONNECTION_ERROR, the client's own verdict

    def test_mariadb_cli_caching_sha2_without_tls_uses_fast_authentication(self):
        r = self.mariadb("SELECT NEXTVAL(Tickets64); SHOW STATUS LIKE 'Ssl_version'",
                         "--skip-ssl")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\n")[1], "Ssl_version\t")

    def test_mariadb_cli_native_user_and_hashed_user(self):
        for user, password in (("old", "old-pass"), ("hashed", HASHED_PASSWORD)):
            for tls in ((f"--ssl-ca={self.pki.ca}", "--ssl-verify-server-cert"), ("--skip-ssl",)):
                r = self.mariadb("SELECT CURRENT_USER()", *tls, user=user, password=password)
                self.assertEqual(r.returncode, 0, (user, tls, r.stderr))

    def test_mariadb_cli_wrong_password_over_tls_is_denied_after_full_authentication(self):
        r = self.mariadb("SELECT 1", f"--ssl-ca={self.pki.ca}", "--ssl-verify-server-cert",
                         password="wrong")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("1045", r.stderr)

    # --- PyMySQL ------------------------------------------------------------------------------

    def pymysql(self, user="app", password="s3cret-app", **kw):
        return pymysql.connect(host="127.0.0.1", port=self.t.mysql_port, user=user,
                               password=password, database="tickets", **kw)

    def ssl_status(self, cur):
        cur.execute("SHOW STATUS LIKE 'Ssl_%'")
        return dict(cur.fetchall())

    def test_pymysql_over_tls_verifies_and_takes_tickets(self):
        conn = self.pymysql(ssl={"ca": self.pki.ca, "check_hostname": True})
        cur = conn.cursor()
        cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
        ticket = cur.lastrowid
        cur.execute("SELECT LAST_INSERT_ID()")
        self.assertEqual(cur.fetchone()[0], ticket)
        status = self.ssl_status(cur)
        self.assertRegex(status["Ssl_version"], r"^TLSv1\.[23]$")
        self.assertTrue(status["Ssl_cipher"])
        self.assertEqual(status["Ssl_cipher"], conn._sock.cipher()[0])
        conn.close()

    def test_pymysql_wrong_ca_fails_on_the_client_side(self):
        with self.assertRaises(pymysql.err.OperationalError) as e:
            self.pymysql(ssl={"ca": self.pki.other_ca})
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(e.exception))

    def test_pymysql_caching_sha2_without_tls(self):
        conn = self.pymysql()
        cur = conn.cursor()
        cur.execute("SELECT NEXTVAL(Tickets64)")
        self.assertGreater(cur.fetchone()[0], 0)
        self.assertEqual(self.ssl_status(cur)["Ssl_version"], "")
        conn.close()

    def test_pymysql_wrong_password_without_tls_is_refused_clearly(self):
        # Full authentication is asked for; PyMySQL then requests the RSA key, which ticketd
        # refuses with a message saying why.
        with self.assertRaises(pymysql.err.OperationalError) as e:
            self.pymysql(password="wrong")
        self.assertEqual(e.exception.args[0], 1045)
        self.assertIn("needs a TLS connection", e.exception.args[1])

    def test_pymysql_wrong_password_over_tls_is_denied(self):
        with self.assertRaises(pymysql.err.OperationalError) as e:
            self.pymysql(password="wrong", ssl={"ca": self.pki.ca})
        self.assertEqual(e.exception.args[0], 1045)
        self.assertIn("(using password: YES)", e.exception.args[1])

    def test_full_authentication_inside_tls_accepts_the_right_password(self):
        # No stock client takes this path with a right password (its fast-auth token is
        # right), so this speaks the exchange itself: a wrong token, then the password.
        import socket
        import struct

        def read_packet(s):
            head = b""
            while len(head) < 4:
                head += s.recv(4 - len(head))
            n = head[0] | head[1] << 8 | head[2] << 16
            body = b""
            while len(body) < n:
                body += s.recv(n - len(body))
            return head[3], body

        def write_packet(s, seq, body):
            s.sendall(struct.pack("<I", len(body))[:3] + bytes([seq]) + body)

        raw = socket.create_connection(("127.0.0.1", self.t.mysql_port), timeout=10)
        seq, greeting = read_packet(raw)
        caps = 0x00000200 | 0x00008000 | 0x00080000 | 0x00000800 | 0x00000008 | 0x01000000
        write_packet(raw, 1, struct.pack("<IIB23x", caps, 1 << 24, 45))
        ctx = ssl.create_default_context(cafile=self.pki.ca)
        s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        body = (struct.pack("<IIB23x", caps, 1 << 24, 45) + b"app\0" + bytes([32]) + b"x" * 32 +
                b"tickets\0caching_sha2_password\0")
        write_packet(s, 2, body)
        seq, more = read_packet(s)
        self.assertEqual((seq, more), (3, b"\x01\x04"))
        write_packet(s, 4, b"s3cret-app\0")
        seq, ok = read_packet(s)
        self.assertEqual(seq, 5)
        self.assertEqual(ok[0], 0x00, ok)
        write_packet(s, 0, b"\x03SELECT NEXTVAL(Tickets64)")
        seq, count = read_packet(s)
        self.assertEqual(count, b"\x01")
        s.close()

    # --- hostile TLS clients -------------------------------------------------------------------

    def raw_ssl_request(self):
        import socket
        import struct
        s = socket.create_connection(("127.0.0.1", self.t.mysql_port), timeout=30)
        greeting = s.recv(4096)
        self.assertGreater(len(greeting), 4)
        caps = 0x00000200 | 0x00008000 | 0x00080000 | 0x00000800
        s.sendall(struct.pack("<I", 32)[:3] + b"\x01" + struct.pack("<IIB23x", caps, 1 << 24, 45))
        return s

    def test_garbage_after_an_ssl_request_closes_only_that_connection(self):
        s = self.raw_ssl_request()
        s.sendall(b"GET / HTTP/1.1\r\n\r\n" * 10)
        self.assertEqual(s.recv(4096), b"")  # closed: no TLS handshake, no answer
        s.close()
        conn = self.pymysql(ssl={"ca": self.pki.ca})
        conn.close()

    def test_stalled_handshakes_do_not_block_others_and_are_closed_by_the_deadline(self):
        import time
        stalled = [self.raw_ssl_request() for _ in range(300)]
        t0 = time.time()
        conn = self.pymysql(ssl={"ca": self.pki.ca})
        cur = conn.cursor()
        cur.execute("SELECT NEXTVAL(Tickets64)")
        conn.close()
        self.assertLess(time.time() - t0, 5)
        # The login exchange has connect_timeout (10 s), TLS handshake included.
        stalled[0].settimeout(30)
        self.assertEqual(stalled[0].recv(4096), b"")
        self.assertLess(time.time() - t0, 25)
        for s in stalled:
            s.close()

    # --- mysqlclient (MySQLdb, on libmariadb) ----------------------------------------------------

    def test_mysqlclient_over_tls_and_without(self):
        # mysqlclient 1.4 has no ssl_mode; libmariadb verifies the chain once a CA is given.
        for kw in ({"ssl": {"ca": self.pki.ca}}, {}):
            conn = MySQLdb.connect(host="127.0.0.1", port=self.t.mysql_port, user="app",
                                   password="s3cret-app", database="tickets", **kw)
            cur = conn.cursor()
            cur.execute("SELECT NEXTVAL(Tickets64)")
            self.assertGreater(int(cur.fetchone()[0]), 0)
            cur.execute("SHOW STATUS LIKE 'Ssl_version'")
            version = cur.fetchone()[1]
            if kw:
                self.assertRegex(version, r"^TLSv1\.[23]$")
            else:
                self.assertEqual(version, "")
            conn.close()

    def test_mysqlclient_wrong_ca_fails(self):
        with self.assertRaises(MySQLdb.OperationalError) as e:
            MySQLdb.connect(host="127.0.0.1", port=self.t.mysql_port, user="app",
                            password="s3cret-app", database="tickets",
                            ssl={"ca": self.pki.other_ca})
        self.assertEqual(e.exception.args[0], 2026)  # CR_SSL_CONNECTION_ERROR

    # --- Node mysql2 -------------------------------------------------------------------------

    def mysql2(self, **o):
        o.setdefault("port", self.t.mysql_port)
        o.setdefault("user", "app")
        o.setdefault("password", "s3cret-app")
        r = subprocess.run(["node", os.path.join(NODE_DIR, "mysql2_login.js"), json.dumps(o)],
                           capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_node_mysql2_caching_sha2_over_tls_and_without(self):
        out = self.mysql2(ssl={"ca": self.pki.ca})
        self.assertTrue(out["ok"], out)
        self.assertRegex(out["ssl_version"], r"^TLSv1\.[23]$")
        self.assertLess(int(out["ticket"]), int(out["prepared"]))
        out = self.mysql2()
        self.assertTrue(out["ok"], out)
        self.assertEqual(out["ssl_version"], "")
        out = self.mysql2(user="hashed", password=HASHED_PASSWORD, ssl={"ca": self.pki.ca})
        self.assertTrue(out["ok"], out)

    def test_node_mysql2_wrong_ca_and_wrong_password(self):
        out = self.mysql2(ssl={"ca": self.pki.other_ca})
        self.assertFalse(out["ok"])
        self.assertIn("certificate", out["message"].lower())
        out = self.mysql2(password="wrong", ssl={"ca": self.pki.ca})
        self.assertFalse(out["ok"])
        self.assertEqual(out["errno"], 1045)

    # --- sysbench ----------------------------------------------------------------------------

    def test_sysbench_over_tls(self):
        # sysbench 1.0 reads cacert.pem, client-cert.pem and client-key.pem from its working
        # directory when --mysql-ssl=on.
        work = tempfile.mkdtemp(prefix="ticketd-sb-", dir=self.pki.dir)
        shutil.copy(self.pki.ca, os.path.join(work, "cacert.pem"))
        shutil.copy(self.pki.client_cert, os.path.join(work, "client-cert.pem"))
        shutil.copy(self.pki.client_key, os.path.join(work, "client-key.pem"))
        prefix = os.path.join(work, "ids")
        r = subprocess.run(
            ["sysbench", os.path.join(ROOT, "bench", "sysbench", "tickets.lua"),
             "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={self.t.mysql_port}",
             "--mysql-user=app", "--mysql-password=s3cret-app", "--mysql-db=tickets",
             "--mysql-ssl=on", "--threads=2", "--events=400", "--mode=text",
             f"--verify-file={prefix}", "run"],
            capture_output=True, text=True, timeout=120, cwd=work)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("FATAL", r.stdout + r.stderr)
        seen = []
        for tid in range(2):
            with open(f"{prefix}.{tid}") as f:
                seen += [int(x) for x in f.read().split()]
        self.assertEqual(len(set(seen)), 400)

    # --- HTTPS -------------------------------------------------------------------------------

    def curl(self, *args):
        return subprocess.run(["curl", "-sS", "-X", "POST", "-H", f"Authorization: Bearer {TOKEN}",
                               *args], capture_output=True, text=True, timeout=30)

    def test_curl_https_with_the_hashed_token(self):
        url = f"https://127.0.0.1:{self.t.http_port}/v1/sequences/Tickets64/next"
        r = self.curl("--cacert", self.pki.ca, url)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(int(json.loads(r.stdout)["ids"][0]), 0)
        # Keep-alive over TLS: two requests on one connection.
        r = self.curl("--cacert", self.pki.ca, "-w", "%{num_connects}\n", url, url)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.rstrip().endswith("0"), r.stdout)  # the second reused it

    def test_curl_https_wrong_ca_fails_and_a_wrong_token_is_401(self):
        url = f"https://127.0.0.1:{self.t.http_port}/v1/sequences/Tickets64/next"
        r = self.curl("--cacert", self.pki.other_ca, url)
        self.assertEqual(r.returncode, 60, r.stderr)  # peer certificate cannot be authenticated
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                            "-H", "Authorization: Bearer " + "x" * 24, "--cacert", self.pki.ca,
                            url], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.stdout, "401")
        # The token's hash itself is not a token.
        entry = "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                            "-H", "Authorization: Bearer " + entry, "--cacert", self.pki.ca, url],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.stdout, "401")

    def test_plain_http_to_the_https_port_gets_no_answer(self):
        r = subprocess.run(["curl", "-sS", "-m", "5", "-X", "POST",
                            f"http://127.0.0.1:{self.t.http_port}/v1/sequences/Tickets64/next"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)

    def test_audit_trail_of_logins_tokens_and_changes(self):
        with self.assertRaises(pymysql.err.OperationalError):
            self.pymysql(password="not-the-password", ssl={"ca": self.pki.ca})
        conn = self.pymysql(ssl={"ca": self.pki.ca})
        cur = conn.cursor()
        cur.execute("CREATE SEQUENCE AuditSeq")
        cur.execute("SELECT SETVAL(AuditSeq, 700)")
        cur.execute("DROP SEQUENCE AuditSeq")
        conn.close()
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-X", "POST", "-H",
                            "Authorization: Bearer wrong-token-0123456789", "--cacert", self.pki.ca,
                            f"https://127.0.0.1:{self.t.http_port}/v1/sequences/Tickets64/next"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        log = self.t.log_text()
        for line in ("audit login_failed: mysql user 'app' from 127.0.0.1",
                     "audit sequence_created: sequence 'AuditSeq' created",
                     "audit sequence_advanced: sequence 'AuditSeq' moved past 700",
                     "audit sequence_dropped: sequence 'AuditSeq' dropped",
                     "audit token_refused: http POST /v1/sequences/Tickets64/next "
                     "(wrong bearer token) from 127.0.0.1"):
            self.assertIn(line, log)
        self.assertNotIn("not-the-password", log)
        self.assertNotIn("wrong-token-0123456789", log)
        r = subprocess.run(["curl", "-sS", "-H", f"Authorization: Bearer {TOKEN}", "--cacert",
                            self.pki.ca, f"https://127.0.0.1:{self.t.http_port}/metrics"],
                           capture_output=True, text=True, timeout=30)
        for event in ("login_failed", "sequence_created", "sequence_dropped", "token_refused"):
            self.assertRegex(r.stdout, 'ticketd_audit_events_total{event="' + event + '"} [1-9]')

    def test_secrets_never_reach_the_log(self):
        log = self.t.log_text()
        for secret in ("s3cret-app", "old-pass", HASHED_PASSWORD, TOKEN):
            self.assertNotIn(secret, log)


class RequiredTransport(unittest.TestCase):
    """require_secure_transport and required client certificates."""

    @classmethod
    def setUpClass(cls):
        cls.pki = TestPki()
        text = config(cls.pki, extra_mysql="  require_secure_transport: true\n", http_tls=False)
        text = text.replace(f"ca_file: {cls.pki.ca} }}}}",
                            f"ca_file: {cls.pki.ca}, require_client_cert: true }}}}")
        cls.t = Ticketd(text).start()

    @classmethod
    def tearDownClass(cls):
        cls.t.cleanup()
        shutil.rmtree(cls.pki.dir, ignore_errors=True)

    def connect(self, **kw):
        return pymysql.connect(host="127.0.0.1", port=self.t.mysql_port, user="old",
                               password="old-pass", database="tickets", **kw)

    def test_a_clear_text_login_is_refused_with_3159(self):
        with self.assertRaises(pymysql.err.OperationalError) as e:
            self.connect()
        self.assertEqual(e.exception.args[0], 3159)
        r = subprocess.run(["mariadb", "-h127.0.0.1", f"-P{self.t.mysql_port}", "-uold",
                            "-pold-pass", "--skip-ssl", "-e", "SELECT 1"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("3159", r.stderr)

    def test_tls_without_a_client_certificate_is_refused(self):
        with self.assertRaises(pymysql.err.OperationalError):
            self.connect(ssl={"ca": self.pki.ca})

    def test_tls_with_a_client_certificate_logs_in(self):
        conn = self.connect(ssl={"ca": self.pki.ca, "cert": self.pki.client_cert,
                                 "key": self.pki.client_key})
        cur = conn.cursor()
        cur.execute("SHOW VARIABLES LIKE 'require_secure_transport'")
        self.assertEqual(cur.fetchone()[1], "ON")
        cur.execute("SELECT @@have_ssl")
        self.assertEqual(cur.fetchone()[0], "YES")
        conn.close()


class StartupChecks(unittest.TestCase):
    def test_hash_password_prints_both_verifiers(self):
        lines = hash_password("password")
        # MySQL's own PASSWORD('password') prints this double SHA1.
        self.assertEqual(lines["mysql_native_password"],
                         "*2470c0c06dee42fd1618bb99005adca2ec9d1e19")
        stage2 = hashlib.sha256(hashlib.sha256(b"password").digest()).hexdigest()
        self.assertEqual(lines["caching_sha2_password"], "sha256x2:" + stage2)
        r = subprocess.run([BINARY, "hash-password"], input="", capture_output=True, text=True,
                           timeout=10)
        self.assertEqual(r.returncode, 2)

    def test_hash_token_prints_a_tokens_entry(self):
        r = subprocess.run([BINARY, "hash-token"], input=TOKEN + "\n", capture_output=True,
                           text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest())

    def world_readable(self, extra=""):
        t = Ticketd(Ticketd.DEFAULT_CONFIG + extra)
        os.chmod(t.config_path, 0o644)
        return t

    def test_a_world_readable_config_with_passwords_warns(self):
        t = self.world_readable().start()
        try:
            self.assertIn("readable by other users", t.log_text())
            self.assertNotIn("s3cret-app", t.log_text())
        finally:
            t.cleanup()

    def test_a_private_or_hashed_config_gets_no_warning(self):
        t = Ticketd()  # mkstemp: mode 0600
        try:
            t.start()
            self.assertNotIn("readable by other users", t.log_text())
        finally:
            t.cleanup()
        sha = hash_password("s3cret-app")["caching_sha2_password"]
        t = self.world_readable_text(Ticketd.DEFAULT_CONFIG.replace(
            "    - {{ name: ticket, password: ticket }}\n", "").replace(
            "password: s3cret-app", f"password_hash: '{sha}'"))
        try:
            t.start()
            self.assertNotIn("readable by other users", t.log_text())
        finally:
            t.cleanup()

    def world_readable_text(self, text):
        t = Ticketd(text)
        os.chmod(t.config_path, 0o644)
        return t

    def test_strict_config_permissions_refuses_to_start(self):
        t = self.world_readable("security:\n  strict_config_permissions: true\n")
        try:
            t.start(wait=False)
            self.assertEqual(t.proc.wait(30), 2)
            self.assertIn("strict_config_permissions", t.log_text())
        finally:
            t.cleanup()

    def test_a_missing_certificate_fails_at_start_naming_the_file(self):
        t = Ticketd(Ticketd.DEFAULT_CONFIG.replace(
            "http:\n", "  tls: {{ cert_file: /nonexistent/c.pem, key_file: /nonexistent/k.pem }}\n"
                       "http:\n"))
        try:
            t.start(wait=False)
            self.assertEqual(t.proc.wait(30), 2)
            self.assertIn("mysql.tls: cert_file /nonexistent/c.pem", t.log_text())
        finally:
            t.cleanup()

    def test_a_readable_private_key_warns_and_a_fifo_is_refused_at_once(self):
        # Issue 27.13: a key others can read is warned about like the config; a key path that
        # is a FIFO (nothing writes to it) would block start-up forever, and is refused.
        pki = TestPki()
        self.addCleanup(shutil.rmtree, pki.dir, True)
        os.chmod(pki.server_key, 0o644)
        t = Ticketd(config(pki))
        self.addCleanup(t.cleanup)
        t.start()
        self.assertIn(f"key_file {pki.server_key} (a private key) is readable by other users "
                      "(mode 0644)", t.log_text())
        t.stop()
        fifo = os.path.join(pki.dir, "key.fifo")
        os.mkfifo(fifo, 0o600)
        f = Ticketd(config(pki).replace(pki.server_key, fifo))
        self.addCleanup(f.cleanup)
        f.start(wait=False)
        self.assertEqual(f.proc.wait(30), 2)
        self.assertIn(f"key_file {fifo} is a FIFO, not a regular file", f.log_text())

    def test_an_https_listener_over_its_cap_closes_without_a_clear_text_answer(self):
        pki = TestPki()
        self.addCleanup(shutil.rmtree, pki.dir, True)
        t = Ticketd(config(pki).replace("  tokens:", "  max_connections: 2\n  tokens:"))
        self.addCleanup(t.cleanup)
        t.start()
        # The held connections finish their TLS handshake, so both are registered sessions
        # before the first probe (a session registers when its coroutine first runs, which
        # under ASan came after the probes); each then holds its place until header_timeout.
        ctx = ssl.create_default_context(cafile=pki.ca)
        held = [ctx.wrap_socket(socket.create_connection(("127.0.0.1", t.http_port), timeout=10),
                                server_hostname="127.0.0.1") for _ in range(2)]
        self.addCleanup(lambda: [s.close() for s in held])
        # A third gets nothing in clear.
        deadline = time.time() + 30
        while True:
            extra = socket.create_connection(("127.0.0.1", t.http_port), timeout=10)
            extra.sendall(b"\x16\x03\x01\x00\x05hello")  # the start of a ClientHello
            try:
                data = extra.recv(4096)
            except (ConnectionResetError, socket.timeout):
                data = b""
            extra.close()
            self.assertNotIn(b"HTTP/1.1", data)
            if data == b"":
                break  # closed: over the cap
            self.assertLess(time.time(), deadline, "never over the cap")
            time.sleep(0.05)

    def test_a_hashed_default_password_is_refused_off_loopback(self):
        native = hash_password("ticket")["mysql_native_password"]
        t = Ticketd(Ticketd.DEFAULT_CONFIG.replace(
            "{{ name: ticket, password: ticket }}", "{{ name: ticket, password_hash: '" + native + "' }}"),
            extra_args=["--mysql-listen", "0.0.0.0:0", "--http-listen", "127.0.0.1:0"])
        try:
            t.start(wait=False)
            self.assertEqual(t.proc.wait(30), 2)
            self.assertIn("has the default password (as password_hash)", t.log_text())
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main()
