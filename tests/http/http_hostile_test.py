#!/usr/bin/env python3
"""Hostile input against the real ticketd binary (issue 11): names, JSON, framing, connection
floods and login floods, over raw sockets, http.client and PyMySQL."""
import http.client
import json
import os
import socket
import sys
import unittest
import urllib.parse

import pymysql

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ticketd_process import Ticketd  # noqa: E402


def http_request(port, method, path, body=None, headers=None, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        text = resp.read().decode()
        return resp.status, (json.loads(text) if text else None)
    finally:
        conn.close()


def mysql_connect(d, user="app", password="s3cret-app", **kw):
    return pymysql.connect(host="127.0.0.1", port=d.mysql_port, user=user, password=password,
                           database="tickets", autocommit=True, **kw)


BAD_NAMES = ["two words", " lead", "trail ", ".", "..", "a\tb", "a\nb", "a\x7fb", "a/b",
             "x" * 65]


class SequenceNames(unittest.TestCase):
    """README: 1-64 characters, no '/', backquote or spaces; '.' and '..' and control
    characters are refused too, by the same rule for config, HTTP and SQL."""

    @classmethod
    def setUpClass(cls):
        cls.d = Ticketd().start()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def listed_names(self):
        status, body = http_request(self.d.http_port, "GET", "/v1/sequences")
        self.assertEqual(status, 200)
        return {s["name"] for s in body["sequences"]}

    def test_http_put_refuses_bad_names(self):
        for name in BAD_NAMES:
            path = "/v1/sequences/" + urllib.parse.quote(name, safe="")
            status, body = http_request(self.d.http_port, "PUT", path, body="{}",
                                        headers={"Content-Type": "application/json"})
            self.assertIn(status, (400, 422), (name, body))
            self.assertNotIn(name, self.listed_names())
        # Unencoded dot segments reach the router as they are.
        for raw in ["/v1/sequences/..", "/v1/sequences/."]:
            status, body = http_request(self.d.http_port, "PUT", raw, body="{}",
                                        headers={"Content-Type": "application/json"})
            self.assertIn(status, (400, 404, 405, 422), (raw, body))
        self.assertEqual(self.listed_names() & {".", ".."}, set())
        status, _ = http_request(self.d.http_port, "PUT", "/v1/sequences/ok.name-1", body="{}",
                                 headers={"Content-Type": "application/json"})
        self.assertEqual(status, 201)

    def test_sql_create_refuses_bad_names(self):
        conn = mysql_connect(self.d)
        try:
            with conn.cursor() as cur:
                for name in BAD_NAMES:
                    quoted = "`" + name + "`"
                    for ddl in ["CREATE TABLE {} (id BIGINT AUTO_INCREMENT PRIMARY KEY)",
                                "CREATE SEQUENCE {}"]:
                        with self.assertRaises(pymysql.err.MySQLError, msg=(name, ddl)):
                            cur.execute(ddl.format(quoted))
                cur.execute("SHOW TABLES")
                tables = {r[0] for r in cur.fetchall()}
            for name in BAD_NAMES:
                self.assertNotIn(name, tables)
            self.assertEqual(self.listed_names() & set(BAD_NAMES), set())
        finally:
            conn.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
