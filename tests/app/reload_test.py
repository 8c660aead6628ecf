#!/usr/bin/python3
"""Live config reload against the real binary: SIGHUP and POST /v1/admin/reload re-read the file.
What can apply live (sequences and worker pools added, changed ticket sequences, MySQL users,
HTTP tokens, log_level) applies without dropping a connection; a file with errors, or one that
also changes a setting that cannot apply live, changes nothing and says why; a sequence removed
from the file keeps serving. Under systemd's notify protocol a SIGHUP reload is announced with
RELOADING=1 and ends with READY=1. Every wait is a poll with a deadline."""
import json
import os
import re
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import pymysql

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

# How long a reload may take before the test calls it hung (a reload is a file read and a few
# store writes: milliseconds).
RELOAD_DEADLINE_S = 10

TOKEN = "reload-test-token-0123456789"
OTHER_TOKEN = "reload-test-other-token-abcdef"


def config(users=(("ticket", "ticket"), ("app", "s3cret-app")), tokens=(), sequences=None,
           pools=(), log_level=None, mysql_port="{mysql_port}", data_dir="{data_dir}",
           http_extra="", extra=""):
    """YAML for Ticketd (its {data_dir}/{mysql_port}/{http_port} are left to fill in)."""
    if sequences is None:
        sequences = ["{ name: Tickets64, kind: ticket }",
                     "{ name: Tickets32, kind: ticket, increment: 2, offset: 1, "
                     "max_value: 4294967295 }"]
    lines = [f"data_dir: {data_dir}"]
    if log_level:
        lines.append(f"log_level: {log_level}")
    lines += ["mysql:", f"  listen: 127.0.0.1:{mysql_port}", "  users:"]
    lines += [f"    - {{ name: {u}, password: {p} }}" for u, p in users]
    lines += ["http:", "  listen: 127.0.0.1:{http_port}"]
    if tokens:
        lines.append("  tokens: [" + ", ".join(tokens) + "]")
    if http_extra:
        lines.append(http_extra)
    lines.append("sequences:")
    lines += [f"  - {s}" for s in sequences]
    if pools:
        lines.append("worker_pools:")
        lines += [f"  - {p}" for p in pools]
    if extra:
        lines.append(extra)
    # Ticketd formats the text: literal braces are doubled.
    return "\n".join(lines).replace("{ ", "{{ ").replace(" }", " }}") + "\n"


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


# The line a SIGHUP reload ends with: applied, or refused (an error naming the reason).
DONE_LINE = re.compile(r"^\S+ (info  reload: applied .*|error reload: .*)$", re.M)


class ReloadCase(unittest.TestCase):
    def start(self, text=None, env=None):
        self.t = Ticketd(config=text or config())
        self.addCleanup(self._cleanup, self.t)
        if env:
            os.environ.update(env)
        try:
            self.t.start()
        finally:
            for k in env or {}:
                del os.environ[k]
        return self.t

    @staticmethod
    def _cleanup(t):
        # A hung server must not cost the suite 30 s per case.
        t.stop(timeout=5)
        t.cleanup()

    def write(self, text):
        """Rewrites the running server's config file in place (same path, still mode 0600)."""
        t = self.t
        with open(t.config_path, "w") as f:
            f.write(text.format(data_dir=t.data_dir, mysql_port=t.mysql_port,
                                http_port=t.http_port))

    def done_lines(self):
        return DONE_LINE.findall(self.t.log_text())

    def wait_done(self, before=0):
        """The line that ends reload number `before` + 1 (counted from the start)."""
        deadline = time.time() + RELOAD_DEADLINE_S
        while time.time() < deadline:
            lines = self.done_lines()
            if len(lines) > before:
                return lines[before]
            self.assertIsNone(self.t.proc.poll(), "ticketd exited:\n" + self.t.log_text())
            time.sleep(0.02)
        self.fail(f"the reload did not finish within {RELOAD_DEADLINE_S} s:\n"
                  + self.t.log_text()[-3000:])

    def sighup(self):
        """Sends SIGHUP and returns the line that ends that reload ("reload: applied ..." or the
        error); fails when none comes within the deadline."""
        before = len(self.done_lines())
        self.t.proc.send_signal(signal.SIGHUP)
        return self.wait_done(before)

    def http(self, method, path, body=None, token=None, timeout=RELOAD_DEADLINE_S):
        """(status, parsed JSON body or None)."""
        data = None if body is None else json.dumps(body).encode()
        if data is None and method == "POST":
            data = b""
        req = urllib.request.Request(f"http://127.0.0.1:{self.t.http_port}{path}", data=data,
                                     method=method)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw) if raw else None
            except ValueError:
                return e.code, raw.decode(errors="replace")
        except (socket.timeout, TimeoutError) as e:
            self.fail(f"{method} {path}: no answer within {timeout} s ({e}):\n"
                      + self.t.log_text()[-3000:])

    def next_ids(self, name, token=None):
        status, body = self.http("POST", f"/v1/sequences/{name}/next", token=token)
        self.assertEqual(status, 200, (name, body))
        return [int(i) for i in body["ids"]]

    def admin_reload(self, token=None):
        return self.http("POST", "/v1/admin/reload", token=token)

    def mysql(self, user, password):
        return pymysql.connect(host="127.0.0.1", port=self.t.mysql_port, user=user,
                               password=password, database="tickets", connect_timeout=10, read_timeout=10,
                               autocommit=True)


def nextval(conn, sequence="Tickets64"):
    with conn.cursor() as c:
        c.execute(f"SELECT NEXTVAL({sequence})")
        return int(c.fetchone()[0])


class Sequences(ReloadCase):
    def test_sighup_adds_a_ticket_and_a_gapless_sequence(self):
        self.start()
        self.assertEqual(self.http("POST", "/v1/sequences/Orders/next")[0], 404)
        self.write(config(sequences=[
            "{ name: Tickets64, kind: ticket }",
            "{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295 }",
            "{ name: Orders, kind: ticket, start: 1000, increment: 10, offset: 7 }",
            "{ name: Invoices, kind: gapless, start: 500, increment: 5, offset: 5 }"]))
        line = self.sighup()
        self.assertIn("reload: applied", line)
        self.assertIn("sequences.Orders (added)", line)
        self.assertIn("sequences.Invoices (added)", line)
        # start 1000, increment 10, offset 7: 1007, 1017, ...
        self.assertEqual(self.next_ids("Orders") + self.next_ids("Orders"), [1007, 1017])
        self.assertEqual(self.next_ids("Invoices") + self.next_ids("Invoices"), [500, 505])

    def test_removed_sequence_keeps_serving(self):
        self.start()
        first = self.next_ids("Tickets32")[0]
        self.write(config(sequences=["{ name: Tickets64, kind: ticket }"]))
        line = self.sighup()
        self.assertIn("reload: applied", line)
        self.assertIn("sequence 'Tickets32' is no longer in the config file", self.t.log_text())
        self.assertGreater(self.next_ids("Tickets32")[0], first)

    def test_changed_ticket_sequence_jumps_forward_never_back(self):
        self.start()
        before = self.next_ids("Tickets64")[0]
        self.write(config(sequences=[
            "{ name: Tickets64, kind: ticket, start: 1000000, cache: 10 }",
            "{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295 }"]))
        line = self.sighup()
        self.assertIn("sequences.Tickets64 (settings applied)", line)
        after = self.next_ids("Tickets64")[0]
        self.assertGreater(after, before)
        self.assertEqual(after, 1000000)
        # A smaller start than the values issued: applies, but never moves the counter back.
        self.write(config(sequences=[
            "{ name: Tickets64, kind: ticket, start: 5, cache: 10 }",
            "{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295 }"]))
        self.assertIn("reload: applied", self.sighup())
        self.assertGreater(self.next_ids("Tickets64")[0], after)

    def test_new_worker_pool(self):
        self.start()
        status, _ = self.http("POST", "/v1/workers/orders/leases", {"holder": "x"})
        self.assertEqual(status, 404)
        self.write(config(pools=["{ name: orders, worker_bits: 4, min_ttl_s: 1, max_ttl_s: 300, "
                                 "default_ttl_s: 10 }"]))
        self.assertIn("worker_pools.orders (added)", self.sighup())
        status, body = self.http("POST", "/v1/workers/orders/leases", {"holder": "x"})
        self.assertIn(status, (200, 201), body)
        self.assertIn(int(body["worker_id"]), range(16), body)


class Users(ReloadCase):
    def test_new_user_logs_in_removed_user_cannot_old_connection_keeps_working(self):
        self.start()
        old = self.mysql("app", "s3cret-app")
        other = self.mysql("ticket", "ticket")
        try:
            first = nextval(old)
            self.write(config(users=[("ticket", "ticket"), ("reporter", "n3w-pass-reporter")]))
            line = self.sighup()
            self.assertIn("mysql.users (2 users)", line)
            new = self.mysql("reporter", "n3w-pass-reporter")
            self.assertGreater(nextval(new), first)
            new.close()
            with self.assertRaises(pymysql.err.OperationalError) as e:
                self.mysql("app", "s3cret-app")
            self.assertEqual(e.exception.args[0], 1045, e.exception)
            with self.assertRaises(pymysql.err.OperationalError):
                self.mysql("reporter", "wrong-password")
            # Opened before the reload, as the removed user: still logged in, still served.
            self.assertGreater(nextval(old), first)
            self.assertGreater(nextval(other), first)
        finally:
            old.close()
            other.close()


class Tokens(ReloadCase):
    def test_tokens_added_by_sighup_and_removed_by_admin_reload(self):
        self.start()
        self.assertEqual(self.http("POST", "/v1/sequences/Tickets64/next")[0], 200)
        self.write(config(tokens=[TOKEN, OTHER_TOKEN]))
        self.assertIn("http.tokens (2 tokens)", self.sighup())
        status, body = self.http("POST", "/v1/sequences/Tickets64/next")
        self.assertEqual(status, 401, body)
        self.assertEqual(self.http("POST", "/v1/sequences/Tickets64/next", token="wrong-token-"
                                   "0123456789")[0], 401)
        self.assertEqual(self.admin_reload()[0], 401)  # the reload endpoint too
        self.next_ids("Tickets64", token=TOKEN)
        self.next_ids("Tickets64", token=OTHER_TOKEN)
        self.write(config(tokens=()))
        status, body = self.admin_reload(token=TOKEN)
        self.assertEqual(status, 200, body)
        self.assertIn("http.tokens (0 tokens)", body["applied"])
        self.next_ids("Tickets64")


class LogLevel(ReloadCase):
    SESSION_END = "debug mysql connection"

    def drop_mysql_connection(self):
        socket.create_connection(("127.0.0.1", self.t.mysql_port), timeout=10).close()

    def wait_for(self, text, start):
        deadline = time.time() + RELOAD_DEADLINE_S
        while text not in self.t.log_text()[start:]:
            if time.time() > deadline:
                self.fail(f"'{text}' not logged:\n" + self.t.log_text()[start:][-3000:])
            time.sleep(0.02)

    def test_debug_then_warn_stops_debug_lines(self):
        # A MySQL connection that the client drops without COM_QUIT ends with a debug line
        # ("mysql connection N ended: End of file"); urllib's HTTP sessions (Connection: close)
        # and a PyMySQL close (COM_QUIT) log nothing.
        self.start(config(log_level="debug"))
        mark = len(self.t.log_text())
        self.drop_mysql_connection()
        self.wait_for(self.SESSION_END, mark)

        self.write(config(log_level="warn"))
        status, body = self.admin_reload()
        self.assertEqual((status, body["applied"]), (200, ["log_level"]), body)
        mark = len(self.t.log_text())
        for _ in range(5):
            self.drop_mysql_connection()
        # An error line marks the end: a file with an unknown key, refused by a SIGHUP reload.
        self.write(config(log_level="warn", extra="bogus_key: 1"))
        self.assertIn("error reload:", self.sighup())
        self.assertNotIn(self.SESSION_END, self.t.log_text()[mark:])
        self.assertNotIn(" info ", self.t.log_text()[mark:])  # "signal 1 (SIGHUP)" is info

        self.write(config(log_level="debug"))
        self.assertEqual(self.admin_reload()[1]["applied"], ["log_level"])
        mark = len(self.t.log_text())
        self.drop_mysql_connection()
        self.wait_for(self.SESSION_END, mark)


class Refused(ReloadCase):
    LIVE_SEQUENCE = "{ name: Fresh, kind: ticket }"
    SEQUENCES = ["{ name: Tickets64, kind: ticket }",
                 "{ name: Tickets32, kind: ticket, increment: 2, offset: 1, "
                 "max_value: 4294967295 }"]

    def assert_unchanged(self):
        status, body = self.http("POST", "/v1/sequences/Fresh/next")
        self.assertEqual(status, 404, body)
        conn = self.mysql("app", "s3cret-app")  # the old listener and the old users
        try:
            nextval(conn)
        finally:
            conn.close()
        self.assertEqual(self.http("POST", "/v1/sequences/Tickets64/next")[0], 200)

    def test_fixed_settings_refuse_the_whole_reload(self):
        self.start()
        seqs = self.SEQUENCES + [self.LIVE_SEQUENCE]
        new_users = [("ticket", "ticket"), ("reporter", "n3w-pass-reporter")]
        cases = [
            ("mysql.listen", config(sequences=seqs, users=new_users, mysql_port=str(
                self.t.mysql_port + 1 if self.t.mysql_port < 65535 else self.t.mysql_port - 1))),
            ("data_dir", config(sequences=seqs, data_dir="{data_dir}/elsewhere")),
            ("snowflake (layout and worker ID)",
             config(sequences=seqs, extra="snowflake:\n  worker_id: { source: static, id: 7 }")),
            ("http (limits, metrics_public, lease_retention)",
             config(sequences=seqs, http_extra="  lease_retention: 7d")),
        ]
        for key, text in cases:
            with self.subTest(key=key):
                self.write(text)
                status, body = self.admin_reload()
                self.assertEqual(status, 422, body)
                self.assertEqual(body["error"]["code"], "invalid_argument", body)
                self.assertIn("cannot change while ticketd runs", body["error"]["message"])
                self.assertIn(key, body["error"]["message"])
                self.assertNotIn("sequences.Fresh", body["error"]["message"])
                self.assert_unchanged()
        # By SIGHUP: the log names the key.
        self.write(cases[0][1])
        line = self.sighup()
        self.assertIn("error reload: these settings cannot change while ticketd runs", line)
        self.assertIn("mysql.listen", line)
        self.assert_unchanged()
        with self.assertRaises(pymysql.err.OperationalError):
            self.mysql("reporter", "n3w-pass-reporter")

    def test_a_changed_grid_is_refused_and_nothing_changes(self):
        # Issue 27.3: one server of an odd/even pair edited 2/1 -> 3/1 and reloaded would issue
        # its partner's values (3/1 gives 7, 13, ... which 2/1's partner 2/2 never does, but
        # 2/2's values 4, 10, 16 ... meet 3/1's). A grid is never a config edit.
        self.start()
        before = self.next_ids("Tickets32")[0]
        self.assertEqual(before % 2, 1)
        new_users = [("ticket", "ticket"), ("reporter", "n3w-pass-reporter")]
        self.write(config(users=new_users, sequences=[
            "{ name: Tickets64, kind: ticket, cache: 50 }",
            "{ name: Tickets32, kind: ticket, increment: 3, offset: 1, "
            "max_value: 4294967295 }",
            self.LIVE_SEQUENCE]))
        status, body = self.admin_reload()
        self.assertEqual(status, 422, body)
        message = body["error"]["message"]
        self.assertIn("sequences.Tickets32", message)
        self.assertIn("ticketd restride", message)
        self.assertIn("nothing changed", message)
        self.assert_unchanged()
        with self.assertRaises(pymysql.err.OperationalError):
            self.mysql("reporter", "n3w-pass-reporter")
        status, body = self.http("GET", "/v1/sequences/Tickets32")
        self.assertEqual(status, 200, body)
        self.assertEqual((body["increment"], body["offset"]), (2, 1), body)
        status, body = self.http("GET", "/v1/sequences/Tickets64")
        self.assertEqual(status, 200, body)
        self.assertNotEqual(body["cache"], 50, body)  # checked before anything applied
        for _ in range(20):
            v = self.next_ids("Tickets32")[0]
            self.assertEqual(v % 2, 1, v)
            self.assertGreater(v, before)
            before = v
        # By SIGHUP: the error line says the same.
        line = self.sighup()
        self.assertIn("error reload: sequences.Tickets32", line)
        self.assertIn("ticketd restride", line)

    def test_yaml_error_or_unknown_key_changes_nothing(self):
        self.start()
        good = config(sequences=self.SEQUENCES + [self.LIVE_SEQUENCE])
        # Line numbers: the broken line is the last one of the file.
        broken = good + "  - {{ name: Broken, kind: ticket\n"
        unknown = good + "httpp: 1\n"
        for what, text, pattern in [
                ("yaml", broken, None),
                ("unknown key", unknown, r":%d: httpp: unknown key")]:
            with self.subTest(what=what):
                self.write(text)
                last_line = text.count("\n")
                line = self.sighup()
                self.assertIn("error reload: " + self.t.config_path + " has errors; nothing "
                              "changed", line)
                self.assertRegex(line, re.escape(self.t.config_path) + r":\d+:")
                if pattern:
                    self.assertRegex(line, pattern % last_line)
                status, body = self.admin_reload()
                self.assertEqual(status, 422, body)
                self.assertIn(self.t.config_path + ":", body["error"]["message"])
                self.assert_unchanged()
        self.assertIsNone(self.t.proc.poll())


class AdminReload(ReloadCase):
    def test_applied_list_then_nothing_changed(self):
        self.start()
        self.write(config(sequences=Refused.SEQUENCES + ["{ name: Fresh, kind: ticket }"],
                          tokens=[TOKEN]))
        status, body = self.admin_reload()
        self.assertEqual(status, 200, body)
        self.assertEqual(body["status"], "reloaded")
        self.assertEqual(sorted(body["applied"]),
                         sorted(["http.tokens (1 tokens)", "sequences.Fresh (added)"]), body)
        status, body = self.admin_reload(token=TOKEN)
        self.assertEqual((status, body), (200, {"status": "reloaded",
                                                "applied": ["nothing changed"]}))
        self.next_ids("Fresh", token=TOKEN)


class Notify(ReloadCase):
    def test_sighup_sends_reloading_then_ready(self):
        notify = NotifySocket()
        self.addCleanup(notify.close)
        self.start(env={"NOTIFY_SOCKET": notify.path})
        self.assertEqual(notify.receive(timeout=30), ("READY=1", self.t.proc.pid))
        self.write(config(sequences=Refused.SEQUENCES + ["{ name: Fresh, kind: ticket }"]))
        self.t.proc.send_signal(signal.SIGHUP)
        self.assertEqual(notify.receive(timeout=RELOAD_DEADLINE_S),
                         ("RELOADING=1", self.t.proc.pid))
        self.assertEqual(notify.receive(timeout=RELOAD_DEADLINE_S), ("READY=1", self.t.proc.pid))
        # READY=1 comes once the reload is done (its log line may follow it).
        self.assertIn("sequences.Fresh (added)", self.wait_done())
        self.next_ids("Fresh")
        # A refused reload ends with READY=1 as well: the server still serves the old config.
        self.write(config(extra="bogus_key: 1"))
        self.t.proc.send_signal(signal.SIGHUP)
        self.assertEqual(notify.receive(timeout=RELOAD_DEADLINE_S)[0], "RELOADING=1")
        self.assertEqual(notify.receive(timeout=RELOAD_DEADLINE_S)[0], "READY=1")
        with self.assertRaises(socket.timeout):
            notify.receive(timeout=0.2)


class Burst(ReloadCase):
    def test_twenty_sighups_while_clients_issue_tickets(self):
        self.start()
        errors, issued = [], []
        stop = threading.Event()

        def http_client():
            while not stop.is_set():
                try:
                    req = urllib.request.Request(
                        f"http://127.0.0.1:{self.t.http_port}/v1/sequences/Tickets64/next",
                        data=b"", method="POST")
                    with urllib.request.urlopen(req, timeout=RELOAD_DEADLINE_S) as r:
                        issued.append(int(json.loads(r.read())["ids"][0]))
                except Exception as e:  # noqa: BLE001 - every failure is a finding
                    errors.append(f"http: {e!r}")

        def mysql_client():
            try:
                conn = self.mysql("app", "s3cret-app")
            except Exception as e:  # noqa: BLE001
                errors.append(f"mysql connect: {e!r}")
                return
            try:
                while not stop.is_set():
                    try:
                        issued.append(nextval(conn))
                    except Exception as e:  # noqa: BLE001
                        errors.append(f"mysql: {e!r}")
                        return
            finally:
                conn.close()

        threads = [threading.Thread(target=f) for f in (http_client, http_client, mysql_client)]
        for th in threads:
            th.start()
        try:
            self.write(config(sequences=Refused.SEQUENCES + ["{ name: Fresh, kind: ticket }"],
                              users=[("ticket", "ticket"), ("app", "s3cret-app"),
                                     ("reporter", "n3w-pass-reporter")]))
            for _ in range(20):
                self.t.proc.send_signal(signal.SIGHUP)
            # The kernel and asio coalesce pending SIGHUPs: at least one reload, every one done.
            deadline = time.time() + RELOAD_DEADLINE_S
            while True:
                text = self.t.log_text()
                started = text.count("signal 1 (SIGHUP): reloading")
                if started and len(self.done_lines()) == started:
                    break
                self.assertLess(time.time(), deadline, "reloads did not finish:\n" + text[-3000:])
                time.sleep(0.02)
        finally:
            stop.set()
            for th in threads:
                th.join(30)
        self.assertIsNone(self.t.proc.poll(), self.t.log_text())
        self.assertEqual(errors, [])
        self.assertGreater(len(issued), 0)
        self.assertEqual(len(issued), len(set(issued)), "an ID was issued twice")
        self.assertEqual([l for l in self.done_lines() if "error" in l], [])
        self.next_ids("Fresh")
        conn = self.mysql("reporter", "n3w-pass-reporter")
        conn.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
