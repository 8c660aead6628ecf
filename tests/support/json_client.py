"""A kept-alive HTTP/1.1 connection to ticketd's JSON API (http.client), with an optional
bearer token. Older tests of tests/http still carry their own copies."""
import http.client
import json


class JsonClient:
    def __init__(self, port, token=None, timeout=10):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.token = token

    def call(self, method, path, body=None, headers=None, raw=None):
        """Returns (response, parsed JSON or None, body text). `raw` is sent as the body as it
        is (no Content-Type unless `headers` gives one)."""
        h = dict(headers or {})
        if self.token:
            h.setdefault("Authorization", "Bearer " + self.token)
        data = raw
        if body is not None:
            data = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        self.conn.request(method, path, body=data, headers=h)
        resp = self.conn.getresponse()
        text = resp.read().decode(errors="replace")
        parsed = None
        if text and resp.getheader("Content-Type", "").startswith("application/json"):
            parsed = json.loads(text)
        return resp, parsed, text

    def ok(self, method, path, body=None):
        """The parsed body of a 200 or 201 answer; anything else fails the test."""
        resp, parsed, text = self.call(method, path, body)
        if resp.status not in (200, 201):
            raise AssertionError(f"{method} {path}: {resp.status} {text}")
        return parsed

    def close(self):
        self.conn.close()
