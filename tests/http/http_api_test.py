"""End-to-end tests of the HTTP/JSON API against a real ticketd over loopback (http.client)."""
import os
import socket
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from json_client import JsonClient as Client  # noqa: E402
from ticketd_process import Ticketd  # noqa: E402

TOKEN_CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: ticket, password: ticket }}
http:
  listen: 127.0.0.1:{http_port}
  tokens: [ "t0ken-one-0123456789", "t0ken-two-0123456789" ]
sequences:
  - {{ name: Tickets64, kind: ticket }}
"""


def assert_error(test, resp, parsed, status, code):
    test.assertEqual(resp.status, status, parsed)
    test.assertEqual(set(parsed.keys()), {"error"})
    test.assertEqual(parsed["error"]["code"], code)
    test.assertIsInstance(parsed["error"]["message"], str)


class HttpApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Ticketd().start()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def setUp(self):
        self.c = Client(self.d.http_port)

    def tearDown(self):
        self.c.close()

    def test_health_and_readiness(self):
        resp, body, _ = self.c.call("GET", "/healthz")
        self.assertEqual((resp.status, body), (200, {"status": "ok"}))
        resp, body, _ = self.c.call("GET", "/readyz")
        self.assertEqual((resp.status, body), (200, {"status": "ready"}))

    def test_next_returns_ids_as_strings(self):
        resp, body, _ = self.c.call("POST", "/v1/sequences/Tickets64/next")
        self.assertEqual(resp.status, 200)
        self.assertEqual(body["sequence"], "Tickets64")
        self.assertEqual(len(body["ids"]), 1)
        self.assertIsInstance(body["ids"][0], str)
        resp, body, _ = self.c.call("POST", "/v1/sequences/Tickets64/next", {"count": 100})
        self.assertEqual(resp.status, 200)
        ids = [int(i) for i in body["ids"]]
        self.assertTrue(all(isinstance(i, str) for i in body["ids"]))
        self.assertEqual(ids, list(range(ids[0], ids[0] + 100)))

    def test_increment_and_offset_are_respected(self):
        _, body, _ = self.c.call("POST", "/v1/sequences/Tickets32/next", {"count": 5})
        ids = [int(i) for i in body["ids"]]
        self.assertTrue(all(i % 2 == 1 for i in ids))
        self.assertEqual([b - a for a, b in zip(ids, ids[1:])], [2] * 4)

    def test_bad_requests_issue_nothing(self):
        _, before, _ = self.c.call("GET", "/v1/sequences/Tickets64")
        cases = [
            ({"count": 0}, 422, "invalid_argument"),
            ({"count": 100001}, 422, "invalid_argument"),
            ({"count": "5"}, 422, "invalid_argument"),
            ({"count": 2.5}, 422, "invalid_argument"),
            ({"count": 10 ** 30}, 422, "invalid_argument"),
            ({"cnt": 1}, 422, "invalid_argument"),
            ([1], 422, "invalid_argument"),
        ]
        for body, status, code in cases:
            resp, parsed, _ = self.c.call("POST", "/v1/sequences/Tickets64/next", body)
            assert_error(self, resp, parsed, status, code)
        resp, parsed, _ = self.c.call("POST", "/v1/sequences/Tickets64/next", raw="{nope",
                                         headers={"Content-Type": "application/json"})
        assert_error(self, resp, parsed, 400, "bad_request")
        resp, parsed, _ = self.c.call("POST", "/v1/sequences/Tickets64/next", raw="count=1",
                                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert_error(self, resp, parsed, 415, "unsupported_media_type")
        _, after, _ = self.c.call("GET", "/v1/sequences/Tickets64")
        self.assertEqual(before["next_value"], after["next_value"])

    def test_unknown_sequence_is_404(self):
        resp, parsed, _ = self.c.call("POST", "/v1/sequences/X/next")
        self.assertEqual(resp.status, 404)
        self.assertEqual(parsed, {"error": {"code": "not_found",
                                            "message": "sequence 'X' does not exist"}})

    def test_wrong_method_is_405_with_allow(self):
        resp, parsed, _ = self.c.call("GET", "/v1/sequences/Tickets64/next")
        assert_error(self, resp, parsed, 405, "method_not_allowed")
        self.assertEqual(resp.getheader("Allow"), "POST")
        resp, parsed, _ = self.c.call("GET", "/nothing-here")
        assert_error(self, resp, parsed, 404, "not_found")

    def test_blocks_are_durable_disjoint_and_listed(self):
        resp, lease, _ = self.c.call("POST", "/v1/sequences/Tickets32/blocks",
                                        {"size": 1000, "holder": "billing-7"})
        self.assertEqual(resp.status, 201, lease)
        self.assertEqual(lease["sequence"], "Tickets32")
        self.assertEqual((lease["step"], lease["count"], lease["holder"]), (2, 1000, "billing-7"))
        first, last = int(lease["first"]), int(lease["last"])
        self.assertEqual(last, first + 999 * 2)
        self.assertTrue(lease["granted_at"].endswith("Z"))
        _, info, _ = self.c.call("GET", "/v1/sequences/Tickets32")
        self.assertGreaterEqual(int(info["durable_ceiling"]), last)
        _, nxt, _ = self.c.call("POST", "/v1/sequences/Tickets32/next")
        self.assertGreater(int(nxt["ids"][0]), last)
        resp, listing, _ = self.c.call("GET", "/v1/sequences/Tickets32/blocks?limit=5")
        self.assertEqual(resp.status, 200)
        self.assertEqual(listing["leases"][0]["lease_id"], lease["lease_id"])
        resp, parsed, _ = self.c.call("POST", "/v1/sequences/Tickets32/blocks", {"size": 100001})
        assert_error(self, resp, parsed, 422, "invalid_argument")

    def test_sequence_admin_lifecycle(self):
        resp, created, _ = self.c.call("PUT", "/v1/sequences/e2e_orders",
                                          {"start": "5000", "increment": 10, "offset": 3,
                                           "cache": 50})
        self.assertEqual(resp.status, 201, created)
        self.assertEqual(created["kind"], "ticket")
        resp, parsed, _ = self.c.call("PUT", "/v1/sequences/e2e_orders", {})
        assert_error(self, resp, parsed, 409, "already_exists")
        resp, created, _ = self.c.call("PUT", "/v1/sequences/e2e_gapless", {"kind": "gapless"})
        self.assertEqual(resp.status, 201, created)
        self.assertEqual((created["kind"], created["next_value"]), ("gapless", "1"))
        resp, created, _ = self.c.call("PUT", "/v1/sequences/e2e_uuids", {"kind": "uuidv7"})
        self.assertEqual((resp.status, created["kind"]), (201, "uuidv7"), created)
        _, got, _ = self.c.call("POST", "/v1/sequences/e2e_gapless/next")
        self.assertEqual(got["ids"], ["1"])
        _, described, _ = self.c.call("GET", "/v1/sequences/e2e_gapless")
        self.assertEqual(described["committed_through"], "1")
        resp, _, text = self.c.call("DELETE", "/v1/sequences/e2e_uuids")
        self.assertEqual((resp.status, text), (204, ""))
        _, listing, _ = self.c.call("GET", "/v1/sequences")
        self.assertIn("e2e_orders", [s["name"] for s in listing["sequences"]])
        _, got, _ = self.c.call("POST", "/v1/sequences/e2e_orders/next")
        self.assertEqual(got["ids"], ["5003"])
        resp, patched, _ = self.c.call("PATCH", "/v1/sequences/e2e_orders", {"next": "90000"})
        self.assertEqual(resp.status, 200, patched)
        self.assertEqual(patched["next_value"], "90003")
        resp, parsed, _ = self.c.call("PATCH", "/v1/sequences/e2e_orders", {"next": 1})
        assert_error(self, resp, parsed, 422, "invalid_argument")
        resp, _, text = self.c.call("DELETE", "/v1/sequences/e2e_orders")
        self.assertEqual((resp.status, text), (204, ""))
        resp, parsed, _ = self.c.call("GET", "/v1/sequences/e2e_orders")
        assert_error(self, resp, parsed, 404, "not_found")
        # Drop is not a reset: re-creating resumes at or above where it was moved to.
        self.c.call("PUT", "/v1/sequences/e2e_orders", {"increment": 10, "offset": 3})
        _, again, _ = self.c.call("POST", "/v1/sequences/e2e_orders/next")
        self.assertGreaterEqual(int(again["ids"][0]), 90003)

    def test_keep_alive_reuses_one_connection(self):
        for _ in range(20):
            resp, _, _ = self.c.call("POST", "/v1/sequences/Tickets64/next")
            self.assertEqual(resp.status, 200)
            self.assertFalse(resp.will_close)

    def test_oversized_body_is_413(self):
        with socket.create_connection(("127.0.0.1", self.d.http_port), timeout=10) as s:
            s.sendall(b"POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.assertTrue(data.startswith(b"HTTP/1.1 413"), data)

    def test_metrics_are_served(self):
        self.c.call("POST", "/v1/sequences/Tickets64/next")
        resp, _, text = self.c.call("GET", "/metrics")
        self.assertEqual(resp.status, 200)
        self.assertTrue(resp.getheader("Content-Type").startswith("text/plain"))
        for name in ("ticketd_ids_issued_total", "ticketd_durable_writes_total",
                     "ticketd_sequence_remaining_values", "ticketd_request_duration_seconds",
                     "ticketd_open_connections"):
            self.assertIn(name, text)


class HttpRestartTest(unittest.TestCase):
    def test_leases_and_values_survive_a_restart(self):
        d = Ticketd().start()
        try:
            c = Client(d.http_port)
            _, lease, _ = c.call("POST", "/v1/sequences/Tickets64/blocks",
                                    {"size": 5000, "holder": "restart"})
            c.close()
            d.stop()
            d.start()
            c = Client(d.http_port)
            _, nxt, _ = c.call("POST", "/v1/sequences/Tickets64/next")
            self.assertGreater(int(nxt["ids"][0]), int(lease["last"]))
            _, listing, _ = c.call("GET", "/v1/sequences/Tickets64/blocks")
            self.assertEqual(listing["leases"][0]["lease_id"], lease["lease_id"])
            c.close()
        finally:
            d.cleanup()


class HttpAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Ticketd(config=TOKEN_CONFIG).start()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_v1_needs_a_bearer_token(self):
        c = Client(self.d.http_port)
        resp, parsed, _ = c.call("POST", "/v1/sequences/Tickets64/next")
        assert_error(self, resp, parsed, 401, "unauthorized")
        self.assertTrue(resp.getheader("WWW-Authenticate", "").startswith("Bearer"))
        resp, parsed, _ = c.call("GET", "/v1/sequences",
                                    headers={"Authorization": "Bearer wrong"})
        assert_error(self, resp, parsed, 401, "unauthorized")
        for token in ("t0ken-one-0123456789", "t0ken-two-0123456789"):
            resp, _, _ = c.call("POST", "/v1/sequences/Tickets64/next",
                                   headers={"Authorization": "Bearer " + token})
            self.assertEqual(resp.status, 200)
        c.close()

    def test_healthz_is_open_metrics_is_not(self):
        c = Client(self.d.http_port)
        resp, _, _ = c.call("GET", "/healthz")
        self.assertEqual(resp.status, 200)
        resp, parsed, _ = c.call("GET", "/metrics")
        assert_error(self, resp, parsed, 401, "unauthorized")
        resp, _, _ = c.call("GET", "/metrics", headers={"Authorization": "Bearer t0ken-one-0123456789"})
        self.assertEqual(resp.status, 200)
        c.close()


if __name__ == "__main__":
    unittest.main()
