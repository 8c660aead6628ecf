#!/usr/bin/python3
"""HTTP and MySQL clients on one sequence at once.

32 HTTP clients (http.client, one kept-alive connection each) mix hi-lo block leases and single
tickets from Tickets64 while 16 MySQL connections take tickets from the same sequence with the
Flickr recipe, until every HTTP client is done. Then:
- every value ever handed out (singles from both front ends and every value of every block) is
  distinct: the blocks and singles, as intervals, never overlap;
- each client's values increase in the order it received them;
- the lease listing holds exactly the acknowledged leases, with their holders and values.
Debian's /usr/bin/python3 has pymysql.
"""
import http.client
import json
import os
import random
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ticketd_process import Ticketd  # noqa: E402

import pymysql  # noqa: E402

HTTP_CLIENTS = 32
MYSQL_CLIENTS = 16
OPS_PER_HTTP_CLIENT = 30  # 32 x 30 = 960 requests; about half are leases (the listing shows 1000)
MIN_TICKETS_PER_MYSQL_CLIENT = 50
SEQUENCE = "Tickets64"


class JsonClient:
    """One kept-alive HTTP connection; request() returns (status, parsed JSON body)."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method, path, body=None):
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        text = resp.read().decode()
        if resp.will_close:
            raise AssertionError(f"server closed a kept-alive connection: {resp.status} {text}")
        return resp.status, json.loads(text)

    def close(self):
        self.conn.close()


def values_of(first, last, step):
    return range(first, last + 1, step)


def overlaps(intervals):
    """Pairs of (lo, hi, what) intervals that share a value, after sorting by lo. With step 1
    (Tickets64) an interval holds every value in it, so sharing a point means a repeat."""
    bad = []
    ordered = sorted(intervals)
    reach = None
    for iv in ordered:
        if reach is not None and iv[0] <= reach[1]:
            bad.append((reach, iv))
        if reach is None or iv[1] > reach[1]:
            reach = iv
    return bad


class HttpAndMysqlConcurrently(unittest.TestCase):
    def setUp(self):
        self.d = Ticketd().start()

    def tearDown(self):
        self.d.cleanup()

    def test_every_value_is_distinct_and_blocks_are_disjoint(self):
        d = self.d
        start = threading.Barrier(HTTP_CLIENTS + MYSQL_CLIENTS)
        http_done = threading.Event()
        errors = []
        # Per HTTP client, in receipt order: ("block", lease JSON) or ("ids", [int, ...]).
        http_got = [[] for _ in range(HTTP_CLIENTS)]
        mysql_got = [[] for _ in range(MYSQL_CLIENTS)]

        def http_client(i):
            rng = random.Random(i)
            c = JsonClient(d.http_port)
            try:
                start.wait()
                for _ in range(OPS_PER_HTTP_CLIENT):
                    if rng.random() < 0.5:
                        size = rng.choice([1, 2, rng.randint(3, 999), 1000,
                                           rng.randint(1001, 5000)])
                        holder = f"conc-{i}"
                        status, body = c.request("POST", f"/v1/sequences/{SEQUENCE}/blocks",
                                                 {"size": size, "holder": holder})
                        if status != 201:
                            raise AssertionError(f"lease of {size}: {status} {body}")
                        if (body["count"], body["holder"], body["sequence"]) != (size, holder,
                                                                                  SEQUENCE):
                            raise AssertionError(f"lease of {size} for {holder}: {body}")
                        http_got[i].append(("block", body))
                    else:
                        count = rng.randint(1, 50)
                        status, body = c.request("POST", f"/v1/sequences/{SEQUENCE}/next",
                                                 {"count": count})
                        if status != 200 or len(body["ids"]) != count:
                            raise AssertionError(f"next of {count}: {status} {body}")
                        if not all(isinstance(v, str) for v in body["ids"]):
                            raise AssertionError(f"ids must be JSON strings: {body}")
                        http_got[i].append(("ids", [int(v) for v in body["ids"]]))
            except Exception as e:  # reported by the main thread
                errors.append(f"http client {i}: {e!r}")
                start.abort()
            finally:
                c.close()

        def mysql_client(i):
            conn = None
            try:
                conn = pymysql.connect(host="127.0.0.1", port=d.mysql_port, user="app",
                                       password="s3cret-app", database="tickets",
                                       autocommit=True, connect_timeout=10, read_timeout=30)
                cur = conn.cursor()
                start.wait()
                # Runs for the whole HTTP phase, so both front ends really compete.
                while not http_done.is_set() or len(mysql_got[i]) < MIN_TICKETS_PER_MYSQL_CLIENT:
                    cur.execute(f"REPLACE INTO {SEQUENCE} (stub) VALUES ('a')")
                    mysql_got[i].append(cur.lastrowid)
            except Exception as e:
                errors.append(f"mysql client {i}: {e!r}")
                start.abort()
            finally:
                if conn is not None:
                    conn.close()

        http_threads = [threading.Thread(target=http_client, args=(i,))
                        for i in range(HTTP_CLIENTS)]
        mysql_threads = [threading.Thread(target=mysql_client, args=(i,))
                         for i in range(MYSQL_CLIENTS)]
        for t in http_threads + mysql_threads:
            t.start()
        for t in http_threads:
            t.join()
        http_done.set()
        for t in mysql_threads:
            t.join()
        self.assertEqual(errors, [])

        intervals = []  # (lo, hi, who) for every block and every single value
        leases = {}
        for i, events in enumerate(http_got):
            self.assertEqual(len(events), OPS_PER_HTTP_CLIENT)
            previous_last = 0
            for kind, payload in events:
                if kind == "block":
                    first, last = int(payload["first"]), int(payload["last"])
                    step, count = payload["step"], payload["count"]
                    self.assertEqual(step, 1, payload)  # Tickets64: increment 1
                    self.assertEqual(last, first + (count - 1) * step, payload)
                    self.assertGreater(first, previous_last, f"http client {i} went backwards")
                    previous_last = last
                    intervals.append((first, last, f"block {payload['lease_id']} (client {i})"))
                    self.assertNotIn(payload["lease_id"], leases, "lease id reused")
                    leases[payload["lease_id"]] = payload
                else:
                    self.assertGreater(payload[0], previous_last, f"http client {i} went backwards")
                    self.assertEqual(payload, sorted(set(payload)),
                                     "ids of one call not increasing")
                    previous_last = payload[-1]
                    intervals += [(v, v, f"single (http client {i})") for v in payload]
        for i, got in enumerate(mysql_got):
            self.assertGreaterEqual(len(got), MIN_TICKETS_PER_MYSQL_CLIENT)
            self.assertEqual(got, sorted(set(got)), f"mysql connection {i} did not increase")
            self.assertGreater(got[0], 0)
            intervals += [(v, v, f"single (mysql connection {i})") for v in got]

        clash = overlaps(intervals)
        self.assertEqual(clash[:5], [], f"{len(clash)} overlapping pairs")

        http_singles = [v for events in http_got for k, p in events if k == "ids" for v in p]
        mysql_singles = [v for got in mysql_got for v in got]
        self.assertGreater(len(leases), 100)
        self.assertGreater(len(http_singles), 100)
        # The two front ends really interleaved: each issued values on both sides of the other.
        self.assertLess(min(mysql_singles), max(http_singles))
        self.assertLess(min(http_singles), max(mysql_singles))

        everything_max = max(hi for _, hi, _ in intervals)
        c = JsonClient(d.http_port)
        try:
            status, info = c.request("GET", f"/v1/sequences/{SEQUENCE}")
            self.assertEqual(status, 200, info)
            self.assertGreater(int(info["next_value"]), everything_max)
            self.assertGreaterEqual(int(info["durable_ceiling"]), everything_max)

            # Exactly the acknowledged leases are listed (no lease recorded for a failed call),
            # newest first, each with its holder and values.
            limit = len(leases) + 10
            self.assertLessEqual(limit, 1000, "too many leases for one listing page")
            status, listing = c.request("GET", f"/v1/sequences/{SEQUENCE}/blocks?limit={limit}")
            self.assertEqual(status, 200, listing)
            listed = listing["leases"]
            self.assertEqual(len(listed), len(leases))
            ids = [lease["lease_id"] for lease in listed]
            self.assertEqual(ids, sorted(ids, reverse=True), "listing is not newest first")
            for lease in listed:
                self.assertEqual(lease, leases[lease["lease_id"]])
            self.assertEqual({lease["holder"] for lease in listed},
                             {p["holder"] for p in leases.values()})
            status, small = c.request("GET", f"/v1/sequences/{SEQUENCE}/blocks?limit=3")
            self.assertEqual((status, small["leases"]), (200, listed[:3]))
        finally:
            c.close()
        print(f"\n{len(leases)} blocks ({sum(p['count'] for p in leases.values())} values), "
              f"{len(http_singles)} HTTP and {len(mysql_singles)} MySQL singles, all distinct",
              flush=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
