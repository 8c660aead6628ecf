#!/usr/bin/python3
"""Crash and failover over the wire.

- kill -9 under load: 16 connections take tickets while ticketd is kill -9ed and restarted 20
  times on the same data dir; every ticket a client received must be unique, and each
  connection's tickets must increase.
- odd/even pair: two ticketd instances configured 2/1 and 2/2; one client alternates between
  them and fails over when one is killed; all values are distinct, odd from one, even from the
  other.
"""
import os
import random
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

import pymysql  # noqa: E402


def connect(port):
    return pymysql.connect(host="127.0.0.1", port=port, user="app", password="s3cret-app",
                           database="tickets", autocommit=True, connect_timeout=2,
                           read_timeout=5, write_timeout=5)


class KillUnderLoad(unittest.TestCase):
    def test_kill9_restart_20_times_never_repeats_a_ticket(self):
        t = Ticketd()
        t.start()
        port = t.mysql_port
        stop = threading.Event()
        received = [[] for _ in range(16)]

        def client(i):
            conn = None
            while not stop.is_set():
                try:
                    if conn is None:
                        conn = connect(port)
                    cur = conn.cursor()
                    cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
                    received[i].append(cur.lastrowid)  # only what the server acknowledged
                except pymysql.err.MySQLError:
                    conn = None
                    time.sleep(0.01)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for th in threads:
            th.start()
        try:
            for _ in range(20):
                time.sleep(random.uniform(0.1, 0.4))
                t.kill9()
                t.start()  # same data dir, same ports
        finally:
            time.sleep(0.3)
            stop.set()
            for th in threads:
                th.join()
            t.cleanup()
        everything = []
        for got in received:
            self.assertEqual(got, sorted(got), "a connection's tickets went backwards")
            everything += got
        self.assertGreater(len(everything), 1000, "too few tickets to prove anything")
        self.assertEqual(len(set(everything)), len(everything), "a ticket was issued twice")
        print(f"\n{len(everything)} tickets over 20 kill -9 restarts, all unique", flush=True)


PAIR_CONFIG = """
data_dir: {{data_dir}}
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  users:
    - {{{{ name: app, password: s3cret-app }}}}
http:
  listen: 127.0.0.1:{{http_port}}
defaults:
  auto_increment_increment: 2
  auto_increment_offset: {offset}
sequences:
  - {{{{ name: Tickets64, kind: ticket }}}}
"""


class OddEvenPair(unittest.TestCase):
    def test_client_alternates_and_fails_over(self):
        odd = Ticketd(config=PAIR_CONFIG.format(offset=1)).start()
        even = Ticketd(config=PAIR_CONFIG.format(offset=2)).start()
        servers = {"odd": odd, "even": even}
        got = {"odd": [], "even": []}
        conns = {}
        try:
            for i in range(400):
                if i == 150:
                    even.kill9()  # the client must carry on with the other server
                if i == 300:
                    even.start()
                order = ["odd", "even"] if i % 2 == 0 else ["even", "odd"]
                for name in order:
                    try:
                        if name not in conns:
                            conns[name] = connect(servers[name].mysql_port)
                        cur = conns[name].cursor()
                        cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
                        got[name].append(cur.lastrowid)
                        break
                    except pymysql.err.MySQLError:
                        conns.pop(name, None)
                else:
                    self.fail("both servers unavailable")
        finally:
            odd.cleanup()
            even.cleanup()
        self.assertTrue(all(v % 2 == 1 for v in got["odd"]))
        self.assertTrue(all(v % 2 == 0 for v in got["even"]))
        both = got["odd"] + got["even"]
        self.assertEqual(len(both), 400)
        self.assertEqual(len(set(both)), 400)
        self.assertGreater(len(got["even"]), 100)
        self.assertEqual(got["even"], sorted(got["even"]))  # resumed above its ceiling


if __name__ == "__main__":
    unittest.main(verbosity=2)
