#!/usr/bin/python3
"""Log lines of the real binary: with `log_format: json` every line of stderr is one JSON object
({"time","level","message"} and fields), and the lines about a sequence, a client or a lease
name it as a field (`sequence`, `client` and `user`, `lease`); a user name full of quotes,
control characters and invalid UTF-8 keeps every line valid JSON; no password or token ever
reaches the log. A reload switches text to JSON and back. Every wait is a poll with a
deadline."""
import json
import os
import re
import socket
import sys
import time
import unittest
import urllib.error
import urllib.request

import pymysql

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

DEADLINE_S = 10
TOKEN = "logs-test-token-0123456789abcdef"
WRONG_TOKEN = "logs-test-WRONG-token-fedcba9876543210"
APP_PASSWORD = "s3cret-app-Pa55"
WRONG_PASSWORD = "wr0ng-Pa55word-xyzzy"
# Sent as the MySQL user name of a failed login: a quote, a backslash, a newline, a control
# byte, an equals sign and bytes that are not UTF-8.
NASTY_USER = b'o"b\\r\n\x01=\xff\xc3('
SECRETS = (APP_PASSWORD, WRONG_PASSWORD, TOKEN, WRONG_TOKEN)
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LEVELS = {"debug", "info", "warn", "error", "audit"}


def config(log_format=None, log_level=None):
    lines = ["data_dir: {data_dir}"]
    if log_format:
        lines.append(f"log_format: {log_format}")
    if log_level:
        lines.append(f"log_level: {log_level}")
    lines += [
        "mysql:",
        "  listen: 127.0.0.1:{mysql_port}",
        "  users:",
        f"    - {{{{ name: app, password: {APP_PASSWORD} }}}}",
        "http:",
        "  listen: 127.0.0.1:{http_port}",
        f"  tokens: [{TOKEN}]",
        "sequences:",
        "  - {{ name: Tickets64, kind: ticket }}",
        "worker_pools:",
        "  - {{ name: orders, worker_bits: 4 }}",
    ]
    return "\n".join(lines) + "\n"


class LogCase(unittest.TestCase):
    def start(self, text):
        self.t = Ticketd(config=text)
        self.addCleanup(self._cleanup, self.t)
        self.t.start()
        return self.t

    @staticmethod
    def _cleanup(t):
        t.stop(timeout=5)
        t.cleanup()

    def raw_log(self):
        with open(self.t.log_path, "rb") as f:
            return f.read()

    def http(self, method, path, body=None, token=TOKEN):
        data = None if body is None else json.dumps(body).encode()
        if data is None and method in ("POST", "PUT"):
            data = b""
        req = urllib.request.Request(f"http://127.0.0.1:{self.t.http_port}{path}", data=data,
                                     method=method)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw) if raw else None

    def json_lines(self, stopped=False):
        """Every line of the log as a parsed object; fails on any line that is not strict UTF-8
        JSON of the expected shape. While the server runs, a line still being written (no
        newline yet) is left for the next call."""
        raw = self.raw_log()
        if stopped:
            self.assertTrue(raw.endswith(b"\n"), raw[-200:])
        out = []
        for n, line in enumerate(raw.split(b"\n")[:-1], 1):
            try:
                obj = json.loads(line.decode("utf-8"))  # strict: invalid UTF-8 raises
            except ValueError as e:
                self.fail(f"log line {n} is not JSON ({e}): {line!r}")
            self.assertIsInstance(obj, dict, line)
            self.assertEqual(list(obj)[:3], ["time", "level", "message"], line)
            self.assertRegex(obj["time"], TIME)
            self.assertIn(obj["level"], LEVELS, line)
            self.assertIsInstance(obj["message"], str, line)
            self.assertEqual("event" in obj, obj["level"] == "audit", line)
            out.append(obj)
        return out

    def wait_for(self, predicate, what):
        """The first parsed line for which predicate(line) holds, polling until the deadline."""
        deadline = time.time() + DEADLINE_S
        while True:
            for obj in self.json_lines():
                if predicate(obj):
                    return obj
            if time.time() > deadline:
                self.fail(f"no line {what}:\n" + self.t.log_text()[-4000:])
            time.sleep(0.02)

    def assert_no_secret(self):
        raw = self.raw_log()
        for secret in SECRETS:
            self.assertNotIn(secret.encode(), raw, secret)


class JsonLines(LogCase):
    def test_every_line_is_json_and_names_its_sequence_client_and_lease(self):
        self.start(config(log_format="json", log_level="debug"))
        port = str(self.t.mysql_port)

        # A sequence: created at run time (an audit line) and taken a hi-lo block of.
        status, body = self.http("PUT", "/v1/sequences/Orders", {"kind": "ticket"})
        self.assertIn(status, (200, 201), body)
        created = self.wait_for(lambda o: o.get("event") == "sequence_created"
                                and o.get("sequence") == "Orders", "sequence_created for Orders")
        self.assertIn("sequence 'Orders' created", created["message"])
        status, block = self.http("POST", "/v1/sequences/Orders/blocks",
                                  {"size": 10, "holder": "billing-7"})
        self.assertEqual(status, 201, block)
        leased = self.wait_for(lambda o: o.get("lease") == block["lease_id"], "about the block")
        self.assertEqual((leased["sequence"], leased["holder"], leased["count"]),
                         ("Orders", "billing-7", 10), leased)

        # A worker lease: granted, then released.
        status, lease = self.http("POST", "/v1/workers/orders/leases", {"holder": "svc-a"})
        self.assertEqual(status, 201, lease)
        granted = self.wait_for(lambda o: o.get("lease") == lease["lease_id"]
                                and "leased to" in o["message"], "about the worker lease")
        self.assertEqual((granted["level"], granted["pool"], granted["worker_id"],
                          granted["holder"]), ("info", "orders", lease["worker_id"], "svc-a"))
        status, _ = self.http("DELETE", f"/v1/workers/orders/leases/{lease['lease_id']}")
        self.assertEqual(status, 204)
        self.wait_for(lambda o: o.get("lease") == lease["lease_id"]
                      and "released" in o["message"], "about the released worker lease")

        # Clients: failed MySQL logins (a known user with a wrong password, a nasty user name)
        # and HTTP requests refused for their token.
        for user in ("app", NASTY_USER):
            with self.assertRaises(pymysql.err.OperationalError) as e:
                pymysql.connect(host="127.0.0.1", port=self.t.mysql_port, user=user,
                                password=WRONG_PASSWORD, connect_timeout=10, read_timeout=10)
            self.assertEqual(e.exception.args[0], 1045, e.exception)
        refused = self.wait_for(lambda o: o.get("event") == "login_failed"
                                and o.get("user") == "app", "login_failed for app")
        self.assertEqual(refused["client"], "127.0.0.1", refused)
        warned = self.wait_for(lambda o: o["level"] == "warn" and o.get("user") == "app",
                               "a warning about the failed login")
        self.assertIn("mysql login failed for user 'app'", warned["message"])
        self.assertEqual(warned["client"], "127.0.0.1")
        # The nasty name arrives whole, its invalid bytes replaced.
        nasty = NASTY_USER.decode("utf-8", errors="replace")
        nasty_line = self.wait_for(lambda o: o.get("event") == "login_failed"
                                   and o.get("user") == nasty, "login_failed for the nasty user")
        self.assertEqual(nasty_line["client"], "127.0.0.1")

        for token in (None, WRONG_TOKEN):
            status, _ = self.http("POST", "/v1/sequences/Tickets64/next", token=token)
            self.assertEqual(status, 401)
        tokens = [o for o in self.json_lines() if o.get("event") == "token_refused"]
        deadline = time.time() + DEADLINE_S
        while len(tokens) < 2 and time.time() < deadline:
            time.sleep(0.02)
            tokens = [o for o in self.json_lines() if o.get("event") == "token_refused"]
        self.assertEqual(len(tokens), 2, tokens)
        for o in tokens:
            self.assertEqual((o["client"], o["method"], o["target"]),
                             ("127.0.0.1", "POST", "/v1/sequences/Tickets64/next"), o)

        # A MySQL connection the client drops: a debug line naming the client (one more than
        # before: the readiness probe of the test harness dropped one too).
        def ended():
            return [o for o in self.json_lines() if o["level"] == "debug"
                    and re.match(r"mysql connection \d+ ended", o["message"])]
        before = len(ended())
        socket.create_connection(("127.0.0.1", self.t.mysql_port), timeout=10).close()
        deadline = time.time() + DEADLINE_S
        while len(ended()) == before and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual(len(ended()), before + 1, self.t.log_text()[-3000:])
        for o in ended():
            self.assertEqual(o.get("client"), "127.0.0.1", o)
            self.assertIsInstance(o.get("connection"), int, o)

        self.assertEqual(self.t.stop(), 0)
        lines = self.json_lines(stopped=True)
        # Lines from start to stop, all JSON (checked by json_lines), the listener's among them.
        self.assertIn(f"mysql listening on 127.0.0.1:{port}", [o["message"] for o in lines])
        self.assertEqual(lines[-1]["message"], "ticketd stopped")
        # Every line whose message names a sequence, pool lease or client carries the field.
        for o in lines:
            m = re.match(r"(?:gapless )?sequence '([^']+)'", o["message"])
            if m:
                self.assertEqual(o.get("sequence"), m.group(1), o)
            if " from 127.0.0.1" in o["message"]:
                self.assertEqual(o.get("client"), "127.0.0.1", o)
        self.assert_no_secret()


class Reload(LogCase):
    def admin_reload(self):
        status, body = self.http("POST", "/v1/admin/reload")
        self.assertEqual(status, 200, body)
        return body["applied"]

    def write(self, text):
        t = self.t
        with open(t.config_path, "w") as f:
            f.write(text.format(data_dir=t.data_dir, mysql_port=t.mysql_port,
                                http_port=t.http_port))

    def test_reload_switches_text_to_json_and_back(self):
        self.start(config())
        text_part = self.raw_log()
        self.assertRegex(text_part.decode(), r"^\S+Z info  ")
        self.assertNotIn(b'{"time"', text_part)

        self.write(config(log_format="json"))
        self.assertEqual(self.admin_reload(), ["log_format"])
        status, _ = self.http("PUT", "/v1/sequences/AfterReload", {"kind": "ticket"})
        self.assertIn(status, (200, 201))
        with self.assertRaises(pymysql.err.OperationalError):
            pymysql.connect(host="127.0.0.1", port=self.t.mysql_port, user="app",
                            password=WRONG_PASSWORD, connect_timeout=10, read_timeout=10)
        deadline = time.time() + DEADLINE_S
        while b'"event":"login_failed"' not in self.raw_log() and time.time() < deadline:
            time.sleep(0.02)
        json_part = self.raw_log()[len(text_part):]
        json_part = json_part[:json_part.rfind(b"\n") + 1]  # whole lines only
        objs = [json.loads(line) for line in json_part.decode().splitlines()]
        self.assertTrue(objs)
        created = [o for o in objs if o.get("event") == "sequence_created"]
        self.assertEqual([o["sequence"] for o in created], ["AfterReload"], objs)
        failed = [o for o in objs if o.get("event") == "login_failed"]
        self.assertEqual([(o["user"], o["client"]) for o in failed], [("app", "127.0.0.1")], objs)

        self.write(config(log_format="text"))
        self.assertEqual(self.admin_reload(), ["log_format"])
        mark = len(self.raw_log())
        self.http("PUT", "/v1/sequences/BackToText", {"kind": "ticket"})
        deadline = time.time() + DEADLINE_S
        while b"BackToText" not in self.raw_log()[mark:] and time.time() < deadline:
            time.sleep(0.02)
        tail = self.raw_log()[mark:].decode()
        self.assertRegex(tail, r"(?m)^\S+Z audit sequence_created: sequence 'BackToText' "
                               r"created \(.*\) sequence=BackToText$")
        self.assertNotIn('{"time"', tail)
        self.assert_no_secret()


if __name__ == "__main__":
    unittest.main()
