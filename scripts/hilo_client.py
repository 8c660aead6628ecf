#!/usr/bin/env python3
"""A hi-lo ID client for ticketd, with Meituan Leaf's double buffer.

The client leases a block of values (`POST /v1/sequences/{name}/blocks`) and hands them out
locally, so most IDs cost no network round trip. It keeps two buffers: the block in use and the
next one. When the block in use is 80 % used, the next block is leased on a background thread,
so by the time the current block runs out the next one is usually there and next_id() does not
wait. Values left in a block when the process exits are simply never used: a gap, never a
repeat, because ticketd made each block durable before granting it.

    client = HiLoClient("http://127.0.0.1:8080", "Tickets64", block_size=1000, holder="billing-7")
    order_id = client.next_id()
    client.close()

Command line: `scripts/hilo_client.py --url http://127.0.0.1:8080 -n 10` prints 10 IDs.
Only the standard library is used.
"""
import argparse
import http.client
import json
import math
import os
import socket
import sys
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor


class HiLoError(Exception):
    """ticketd refused a lease (the message is the server's) or could not be reached."""


class Block:
    """A leased block: `count` values first, first + step, ... (step is the increment)."""

    def __init__(self, first, step, count, lease_id):
        self.first = first
        self.step = step
        self.count = count
        self.lease_id = lease_id

    def value(self, index):
        return self.first + index * self.step


class HiLoClient:
    """Hands out IDs of one sequence from blocks leased over ticketd's HTTP API.

    Thread safety: next_id() may be called from any number of threads; each call gets a value
    larger than every value returned before it. Leases run on one background thread that owns
    the HTTP connection.
    """

    def __init__(self, url, sequence, block_size=1000, holder=None, token=None,
                 prefetch_at=0.8, timeout_s=10.0):
        if not 0 < prefetch_at <= 1:
            raise ValueError("prefetch_at must be in (0, 1]")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path.rstrip("/") + "/v1/sequences/" +
                      urllib.parse.quote(sequence, safe="") + "/blocks")
        self._body = json.dumps({"size": block_size,
                                 "holder": holder or default_holder()}).encode()
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = "Bearer " + token
        self._timeout_s = timeout_s
        self._prefetch_at = prefetch_at
        self._conn = None  # used only on the lease thread

        self._lock = threading.Lock()
        self._lease_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hilo-lease")
        self._current = None  # the Block values come from
        self._used = 0        # values of _current already handed out
        self._next = None     # the second buffer: a Future of the next Block, or None
        self.blocks_requested = 0  # leases asked for (a lease may still be in flight)
        self.stalls = 0            # next_id() calls that had to wait for a lease
        # The first lease starts now, so the first next_id() may not have to wait either.
        self._next = self._request_block()

    def next_id(self):
        """The next ID; waits only when the next block has not arrived yet."""
        with self._lock:
            if self._current is None or self._used == self._current.count:
                self._switch_to_next_block()
            value = self._current.value(self._used)
            self._used += 1
            if self._next is None and self._used >= math.ceil(self._current.count *
                                                              self._prefetch_at):
                self._next = self._request_block()
            return value

    def await_prefetch(self, timeout_s=None):
        """Waits until the lease in flight, if any, has arrived (or failed). Useful for warming
        up before traffic, and for tests."""
        with self._lock:
            pending = self._next
        if pending is not None:
            pending.exception(timeout_s)  # waits; a failure is raised by next_id()

    def close(self):
        """Waits for a lease in flight and closes the connection. Unused values are a gap."""
        self._lease_thread.shutdown(wait=True)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _request_block(self):
        self.blocks_requested += 1
        return self._lease_thread.submit(self._lease)

    def _switch_to_next_block(self):
        if self._next is None:  # the last lease failed, or prefetching was outrun: ask now
            self._next = self._request_block()
        pending, self._next = self._next, None
        if not pending.done():
            self.stalls += 1
        self._current, self._used = None, 0
        self._current = pending.result()  # raises the lease's error; the next call retries

    def _lease(self):
        """Runs on the lease thread. One retry on a fresh connection covers a kept-alive
        connection the server closed while idle; retrying can waste a block, never repeat one."""
        for attempt in (1, 2):
            try:
                return self._post_lease()
            except (http.client.HTTPException, OSError) as e:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                if attempt == 2:
                    raise HiLoError(f"cannot lease a block from {self._host}: {e!r}") from e
        raise AssertionError("unreachable")

    def _post_lease(self):
        if self._conn is None:
            cls = (http.client.HTTPSConnection if self._scheme == "https"
                   else http.client.HTTPConnection)
            self._conn = cls(self._host, self._port, timeout=self._timeout_s)
        self._conn.request("POST", self._path, body=self._body, headers=self._headers)
        resp = self._conn.getresponse()
        text = resp.read().decode(errors="replace")
        if resp.status != 201:
            try:
                message = json.loads(text)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = text
            raise HiLoError(f"lease refused ({resp.status}): {message}")
        lease = json.loads(text)
        return Block(int(lease["first"]), int(lease["step"]), int(lease["count"]),
                     lease["lease_id"])


def default_holder():
    return f"hilo-{socket.gethostname()}-{os.getpid()}"[:128]


def main(argv=None):
    p = argparse.ArgumentParser(description="Print IDs taken from ticketd through a hi-lo "
                                            "double buffer, one per line.")
    p.add_argument("--url", default="http://127.0.0.1:8080", help="ticketd's HTTP address")
    p.add_argument("--sequence", default="Tickets64")
    p.add_argument("--block-size", type=int, default=1000, help="values per lease")
    p.add_argument("--holder", help="name shown in the lease listing (default: host and pid)")
    p.add_argument("--token", default=os.environ.get("TICKETD_TOKEN"),
                   help="bearer token (default: $TICKETD_TOKEN)")
    p.add_argument("-n", "--count", type=int, default=10, help="how many IDs to print")
    p.add_argument("--stats", action="store_true",
                   help="report leases and waits on stderr at the end")
    args = p.parse_args(argv)
    try:
        with HiLoClient(args.url, args.sequence, args.block_size, args.holder,
                        args.token) as client:
            out = sys.stdout
            for _ in range(args.count):
                out.write(f"{client.next_id()}\n")
            out.flush()
    except HiLoError as e:
        print(f"hilo_client: {e}", file=sys.stderr)
        return 1
    if args.stats:
        print(f"hilo_client: {args.count} ids, {client.blocks_requested} leases, "
              f"{client.stalls} waits", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
