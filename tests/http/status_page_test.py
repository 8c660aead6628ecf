"""GET /ui, the status page, in headless Chromium against a real ticketd under load: every
configured sequence with numbers that agree with the API, recent block leases, pending gapless
reservations, worker pools and the HA role; the bearer token asked once and kept in the tab;
nothing fetched from anywhere but ticketd; client-supplied text shown as text. Saves a
screenshot (status-page.png in the working directory, or $TICKETD_SCREENSHOT)."""
import http.client
import json
import os
import re
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from chromium import Chromium  # noqa: E402
from etcd_process import Etcd  # noqa: E402
from json_client import JsonClient  # noqa: E402
from ticketd_process import Ticketd  # noqa: E402

TOKEN = "status-page-token-0123456789"

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: ticket, password: ticket }}
http:
  listen: 127.0.0.1:{http_port}
  tokens: [ "%s" ]
snowflake: {{ worker_id: {{ source: static, id: 5 }} }}
sequences:
  - {{ name: Tickets64, kind: ticket }}
  - {{ name: Tickets32, kind: ticket, increment: 2, offset: 1, max_value: 4294967295 }}
  - {{ name: Small, kind: ticket, max_value: 10000, cache: 100 }}
  - {{ name: Invoices, kind: gapless }}
  - {{ name: Flakes, kind: snowflake }}
  - {{ name: EventIds, kind: uuidv7 }}
worker_pools:
  - {{ name: render, size: 32 }}
""" % TOKEN

# Two instances on one etcd: the page on the standby says so and names the leader.
HA_CONFIG = """
storage:
  engine: etcd
  endpoints: [%s]
  prefix: /ticketd/ui-test/
  leader_ttl_s: 2
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: ticket, password: ticket }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Tickets64, kind: ticket }}
"""

HOSTILE_HOLDER = '<img src=x onerror="window.__pwned=1">'

ROWS_JS = """JSON.stringify([...document.querySelectorAll('#sequences tbody tr[data-sequence]')]
  .map(r => Object.assign({}, r.dataset, {text: r.innerText})))"""


class Load(threading.Thread):
    """Takes tickets from Tickets64 over one kept-alive connection until stopped."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.taken = 0
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            api = JsonClient(self.port, TOKEN)
            while not self.stop.is_set():
                api.ok("POST", "/v1/sequences/Tickets64/next")
                self.taken += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e


class StatusPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Ticketd(CONFIG).start()
        try:
            cls.prepare()
        except BaseException:
            cls.d.cleanup()
            raise

    @classmethod
    def prepare(cls):
        cls.base = f"http://127.0.0.1:{cls.d.http_port}"
        api = JsonClient(cls.d.http_port, TOKEN)
        api.ok("POST", "/v1/sequences/Small/next", {"count": 2500})
        cls.lease_ids = [api.ok("POST", "/v1/sequences/Tickets64/blocks",
                                {"size": 1000, "holder": f"billing-{i}"})["lease_id"]
                         for i in range(3)]
        cls.lease_ids.append(api.ok("POST", "/v1/sequences/Tickets32/blocks",
                                    {"size": 500, "holder": HOSTILE_HOLDER})["lease_id"])
        cls.reservation = api.ok("POST", "/v1/sequences/Invoices/reservations",
                                 {"holder": "invoice-run-42", "ttl_ms": 600000})
        cls.worker = api.ok("POST", "/v1/workers/render/leases", {"holder": "render-a", "ttl_s": 300})
        for _ in range(10):  # one Snowflake ID per call
            api.ok("POST", "/v1/sequences/Flakes/next")
        api.ok("POST", "/v1/sequences/EventIds/next", {"count": 10})
        cls.load = Load(cls.d.http_port)
        cls.load.start()

    @classmethod
    def tearDownClass(cls):
        cls.load.stop.set()
        cls.load.join(10)
        cls.d.cleanup()

    def setUp(self):
        self.browser = Chromium()

    def tearDown(self):
        self.browser.close()

    def rows(self):
        return {r["sequence"]: r for r in json.loads(self.browser.evaluate(ROWS_JS))}

    def test_page_under_load_with_a_token_asked_once(self):
        b = self.browser
        b.navigate(self.base + "/ui")
        # Tokens are configured: the page asks for one and shows nothing else.
        self.assertEqual(b.wait_for("document.body.dataset.state === 'need-token' && 'yes'"), "yes")
        self.assertTrue(b.evaluate("document.getElementById('status').hidden"))
        b.evaluate(f"""document.getElementById('token').value = {json.dumps(TOKEN)};
                       document.getElementById('token-form').requestSubmit(); 1""")
        b.wait_for("document.body.dataset.state === 'ready'")
        # Three more polls (2 s apart) under load: enough samples for a rate.
        start_taken = self.load.taken
        t0 = time.time()
        b.pump(6.5)
        load_rate = (self.load.taken - start_taken) / (time.time() - t0)
        self.assertIsNone(self.load.error)
        rows = self.rows()
        listing = JsonClient(self.d.http_port, TOKEN).ok("GET", "/v1/sequences")["sequences"]
        by_name = {s["name"]: s for s in listing}

        # Every configured sequence, of its kind.
        self.assertEqual(set(rows), set(by_name))
        self.assertEqual(set(rows), {"Tickets64", "Tickets32", "Small", "Invoices", "Flakes",
                                     "EventIds"})
        for name, row in rows.items():
            self.assertEqual(row["kind"], by_name[name]["kind"], name)
            self.assertGreaterEqual(float(row["headroom"]), 0.0, name)
            self.assertLessEqual(float(row["headroom"]), 100.0, name)
            self.assertGreaterEqual(float(row["rate"]), 0.0, name)

        # Headroom as the API states it: Small is 1..10000 and 2500 were taken (its cache of
        # 100 is not counted: remaining is what clients can still get).
        small = by_name["Small"]
        expected = 100.0 * int(small["remaining"]) / 10000
        self.assertAlmostEqual(float(rows["Small"]["headroom"]), expected, delta=0.01)
        self.assertAlmostEqual(float(rows["Small"]["headroom"]), 75.0, delta=0.01)
        self.assertIn("7500 values left", rows["Small"]["text"])
        # A 63-bit sequence a few thousand values in still has all but a sliver.
        self.assertGreater(float(rows["Tickets64"]["headroom"]), 99.99)
        # Snowflake: 41 bits of milliseconds from 2026-01-01 last ~69.7 years.
        elapsed = time.time() - 1767225600
        span = 2 ** 41 / 1000
        self.assertAlmostEqual(float(rows["Flakes"]["headroom"]), 100 * (1 - elapsed / span),
                               delta=0.01)
        self.assertEqual(float(rows["EventIds"]["headroom"]), 100.0)

        # The rate of the sequence under load is of the order the load generator measured
        # (a wide band: polls are 2 s apart and the machine is shared); idle ones are 0.
        page_rate = float(rows["Tickets64"]["rate"])
        self.assertGreater(load_rate, 50)
        self.assertGreater(page_rate, load_rate / 4, (page_rate, load_rate))
        self.assertLess(page_rate, load_rate * 4, (page_rate, load_rate))
        self.assertEqual(float(rows["Small"]["rate"]), 0.0)
        self.assertLessEqual(int(rows["Tickets64"]["count"]), int(by_name["Tickets64"]["issued"]))

        # Recent block leases, pending reservations, the worker pool, the role.
        lease_rows = b.evaluate("[...document.querySelectorAll('#blocks tr[data-lease]')]"
                                ".map(r => r.dataset.lease)")
        for lease_id in self.lease_ids:
            self.assertIn(lease_id, lease_rows)
        blocks_text = b.evaluate("document.getElementById('blocks').innerText")
        self.assertIn("billing-2", blocks_text)
        reservations = b.evaluate("document.getElementById('reservations').innerText")
        self.assertIn("invoice-run-42", reservations)
        self.assertIn(self.reservation["id"], reservations)
        self.assertEqual(
            b.evaluate("document.querySelector('#pools tr[data-pool=\"render\"]').dataset.leased"),
            "1")
        self.assertIn("render-a", b.evaluate("document.getElementById('pools').innerText"))
        self.assertEqual(b.evaluate("document.getElementById('ha').textContent"), "leader")

        # A holder is the client's text: shown as text, never run.
        self.assertIn(HOSTILE_HOLDER, blocks_text)
        self.assertIsNone(b.evaluate("window.__pwned === undefined ? null : 1"))

        shot = os.environ.get("TICKETD_SCREENSHOT", os.path.abspath("status-page.png"))
        b.screenshot(shot)
        self.assertGreater(os.path.getsize(shot), 10000)
        print(f"screenshot: {shot}")

        # Asked once: a reload of the tab goes straight to the status.
        b.navigate(self.base + "/ui")
        b.wait_for("document.body.dataset.state === 'ready'")
        self.assertTrue(b.evaluate("document.getElementById('token-form').hidden"))

        # Nothing but this ticketd was asked for anything, and no script error happened.
        others = [u for u in b.requests if not u.startswith(self.base + "/")]
        self.assertEqual(others, [])
        self.assertEqual(b.exceptions, [])
        # The one failed request: the first, before the token was given.
        failed = [(e.get("url"), e.get("text")) for e in b.console_errors]
        self.assertEqual(failed, [(self.base + "/v1/cluster", "Failed to load resource: the server "
                                   "responded with a status of 401 (Unauthorized)")])
        # Only reads.
        self.assertTrue(all(re.match(r".*/(ui|ui/[a-z.]+|v1/[^ ]+)$", u) for u in b.requests),
                        b.requests)

    def test_a_wrong_token_is_refused_and_asked_again(self):
        b = self.browser
        b.navigate(self.base + "/ui#token=not-the-token-0123456789")
        b.wait_for("document.body.dataset.state === 'need-token'")
        self.assertIn("refused", b.evaluate("document.getElementById('token-error').innerText"))
        # The fragment is gone from the address, and the bad token from the tab.
        self.assertEqual(b.evaluate("location.hash"), "")
        self.assertIsNone(b.evaluate("sessionStorage.getItem('ticketd.token')"))
        self.assertEqual(b.evaluate("document.querySelectorAll('#sequences tr[data-sequence]')"
                                    ".length"), 0)

    def test_files_are_served_with_their_types_and_no_outside_reference(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.d.http_port, timeout=10)
        types = {}
        for path in ("/ui", "/ui/status.js", "/ui/status.css", "/ui/favicon.svg"):
            conn.request("GET", path)  # no token: the files hold no data
            resp = conn.getresponse()
            body = resp.read().decode()
            self.assertEqual(resp.status, 200, path)
            types[path] = resp.getheader("Content-Type")
            csp = resp.getheader("Content-Security-Policy")
            self.assertIn("default-src 'none'", csp)
            self.assertIn("connect-src 'self'", csp)
            self.assertEqual(resp.getheader("X-Content-Type-Options"), "nosniff")
            # Nothing from a CDN or anywhere else (the SVG namespace name is not a fetch).
            urls = set(re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s'\"]*", body))
            self.assertEqual(urls - {"http://www.w3.org/2000/svg"}, set(), path)
            etag = resp.getheader("ETag")
            conn.request("GET", path, headers={"If-None-Match": etag})
            again = conn.getresponse()
            self.assertEqual(again.status, 304, path)
            self.assertEqual(again.read(), b"")
        self.assertEqual(types["/ui"], "text/html; charset=utf-8")
        self.assertEqual(types["/ui/status.js"], "text/javascript; charset=utf-8")
        self.assertEqual(types["/ui/status.css"], "text/css; charset=utf-8")
        self.assertEqual(types["/ui/favicon.svg"], "image/svg+xml")
        for path in ("/ui/nope.js", "/ui/..%2Fticketd.yaml", "/ui/index.html.bak"):
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            self.assertEqual(resp.status, 404, path)
        # The data behind it still needs the token.
        conn.request("GET", "/v1/sequences")
        resp = conn.getresponse()
        resp.read()
        self.assertEqual(resp.status, 401)
        conn.close()


class StatusPageWithoutTokensTest(unittest.TestCase):
    def test_works_without_a_token_where_none_is_configured(self):
        d = Ticketd().start()  # the default config has no tokens
        b = Chromium()
        try:
            JsonClient(d.http_port).ok("POST", "/v1/sequences/Tickets64/next", {"count": 42})
            b.navigate(f"http://127.0.0.1:{d.http_port}/ui")
            b.wait_for("document.body.dataset.state === 'ready'")
            self.assertTrue(b.evaluate("document.getElementById('token-form').hidden"))
            rows = {r["sequence"]: r for r in json.loads(b.evaluate(ROWS_JS))}
            self.assertEqual(set(rows), {"Tickets64", "Tickets32"})
            self.assertEqual(rows["Tickets64"]["count"], "42")
            self.assertIn("43", rows["Tickets64"]["text"])  # the next value
            self.assertEqual(b.exceptions, [])
        finally:
            b.close()
            d.cleanup()


class StatusPageOnAStandbyTest(unittest.TestCase):
    def test_a_standby_says_so_and_names_the_leader(self):
        etcd = Etcd().start()
        instances = []
        b = None
        try:
            for _ in range(2):
                instances.append(Ticketd(HA_CONFIG % etcd.endpoint).start(wait=False))
            roles = {}
            deadline = time.time() + 30
            while time.time() < deadline and sorted(roles) != ["follower", "leader"]:
                roles = {}
                for t in instances:
                    try:
                        view = JsonClient(t.http_port, timeout=1).ok("GET", "/v1/cluster")
                    except OSError:
                        continue
                    if view["role"] == "leader" and view["serving"]:
                        roles["leader"] = (t, view)
                    elif view["role"] == "follower" and view.get("leader"):
                        roles["follower"] = (t, view)
                time.sleep(0.1)
            self.assertEqual(sorted(roles), ["follower", "leader"])
            follower, view = roles["follower"]
            b = Chromium()
            b.navigate(f"http://127.0.0.1:{follower.http_port}/ui")
            b.wait_for("document.body.dataset.state === 'standby'")
            notice = b.evaluate("document.getElementById('notice').innerText")
            self.assertIn("standby", notice)
            leader, _ = roles["leader"]
            self.assertEqual(view["leader"]["http"], f"127.0.0.1:{leader.http_port}")
            self.assertIn(f"the leader is HTTP 127.0.0.1:{leader.http_port}, MySQL "
                          f"127.0.0.1:{leader.mysql_port}", notice)
            badge = b.evaluate("document.getElementById('ha').textContent")
            self.assertTrue(badge.startswith("follower · "), badge)
            self.assertIn(f"leader HTTP 127.0.0.1:{leader.http_port}", badge)
            self.assertTrue(b.evaluate("document.getElementById('status').hidden"))
            self.assertEqual(b.exceptions, [])
        finally:
            if b:
                b.close()
            for t in instances:
                t.cleanup()
            etcd.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
