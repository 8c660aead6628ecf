"""`ha.follower_http: redirect` on two ticketd instances sharing a real etcd: the follower
answers every sequence and worker route with 307 to the same target on the leader, so plain
HTTP clients (curl -L) get their IDs through it; probes stay 503, GET /v1/cluster answers, and
the MySQL follower keeps ERR 1290 naming the leader. With `refuse` (the default) it is 503."""
import http.client
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import pymysql  # noqa: E402

from etcd_process import Etcd  # noqa: E402
from ticketd_process import Ticketd  # noqa: E402

CONFIG = """
storage:
  engine: etcd
  endpoints: [%s]
  prefix: /ticketd/redirect-test/
  leader_ttl_s: 2
ha:
  follower_http: %s
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: ticket, password: ticket }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Tickets64, kind: ticket }}
worker_pools:
  - {{ name: render, size: 4 }}
"""


def raw(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read()
        return resp.status, resp.getheader("Location"), json.loads(text) if text else None
    finally:
        conn.close()


def roles(instances, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = {}
        for t in instances:
            try:
                _, _, view = raw(t.http_port, "GET", "/v1/cluster")
            except OSError:
                continue
            if view["role"] == "leader" and view["serving"]:
                found["leader"] = t
            elif view["role"] == "follower" and view.get("leader"):
                found["follower"] = t
        if len(found) == 2:
            return found["leader"], found["follower"]
        time.sleep(0.1)
    raise AssertionError("no leader and follower")


class FollowerHttpTest(unittest.TestCase):
    def pair(self, mode):
        etcd = Etcd().start()
        self.addCleanup(etcd.cleanup)
        instances = []
        for _ in range(2):
            t = Ticketd(CONFIG % (etcd.endpoint, mode)).start(wait=False)
            self.addCleanup(t.cleanup)
            instances.append(t)
        return roles(instances)

    def test_redirect(self):
        leader, follower = self.pair("redirect")
        base = f"http://127.0.0.1:{leader.http_port}"
        status, location, body = raw(follower.http_port, "POST", "/v1/sequences/Tickets64/next",
                                     {"count": 3})
        self.assertEqual(status, 307)
        self.assertEqual(location, base + "/v1/sequences/Tickets64/next")
        self.assertEqual(body["error"]["code"], "not_leader")
        self.assertEqual(body["error"]["leader"], f"127.0.0.1:{leader.http_port}")
        status, location, _ = raw(follower.http_port, "GET",
                                  "/v1/sequences/Tickets64/blocks?limit=2")
        self.assertEqual((status, location), (307, base + "/v1/sequences/Tickets64/blocks?limit=2"))

        # curl -L re-sends the POST with its body to the leader: the IDs come from it.
        out = subprocess.run(
            ["curl", "-s", "-L", "-w", "\\n%{http_code} %{num_redirects}", "-H",
             "Content-Type: application/json", "-d", '{"count": 5}',
             f"http://127.0.0.1:{follower.http_port}/v1/sequences/Tickets64/next"],
            capture_output=True, text=True, check=True).stdout
        text, codes = out.rsplit("\n", 1)
        self.assertEqual(codes, "200 1")
        ids = [int(x) for x in json.loads(text)["ids"]]
        self.assertEqual(len(ids), 5)
        self.assertEqual(ids, sorted(ids))
        out = subprocess.run(
            ["curl", "-s", "-L", "-w", "\\n%{http_code}", "-H", "Content-Type: application/json",
             "-d", '{"holder": "via-follower"}',
             f"http://127.0.0.1:{follower.http_port}/v1/workers/render/leases"],
            capture_output=True, text=True, check=True).stdout
        text, code = out.rsplit("\n", 1)
        self.assertEqual(code, "201")
        self.assertEqual(json.loads(text)["holder"], "via-follower")
        _, _, pool = raw(leader.http_port, "GET", "/v1/workers/render")
        self.assertEqual(pool["leased"], 1)

        # Probes stay 503 (a load balancer must not send traffic to a standby); the cluster
        # view and the status page answer on the follower itself.
        self.assertEqual(raw(follower.http_port, "GET", "/readyz")[:2], (503, None))
        status, _, view = raw(follower.http_port, "GET", "/v1/cluster")
        self.assertEqual((status, view["role"]), (200, "follower"))
        # The follower reports the leader's term (it used to say 0).
        _, _, leader_view = raw(leader.http_port, "GET", "/v1/cluster")
        self.assertGreater(leader_view["term"], 0)
        self.assertEqual(view["term"], leader_view["term"])
        # MySQL: ERR 1290 naming the leader, as with refuse.
        conn = pymysql.connect(host="127.0.0.1", port=follower.mysql_port, user="ticket",
                               password="ticket", database="tickets", connect_timeout=5)
        try:
            with conn.cursor() as c:
                with self.assertRaises(pymysql.err.OperationalError) as e:
                    c.execute("SELECT NEXTVAL(Tickets64)")
            self.assertEqual(e.exception.args[0], 1290)
            self.assertIn(f"127.0.0.1:{leader.mysql_port}", e.exception.args[1])
        finally:
            conn.close()

    def test_refuse_is_the_default_answer(self):
        leader, follower = self.pair("refuse")
        status, location, body = raw(follower.http_port, "POST", "/v1/sequences/Tickets64/next")
        self.assertEqual((status, location), (503, None))
        self.assertEqual(body["error"]["leader"], f"127.0.0.1:{leader.http_port}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
