#!/usr/bin/env python3
"""A userspace TCP proxy that adds delay, jitter and emulated loss, controlled at run time.

netlab.py starts one of these inside a node's network namespace (Lab.proxy) because the kernel
on the test machines has no sch_netem: this process is how a nemesis test puts latency and loss
on one link. It is a plain program, usable on its own:

    delay_proxy.py --listen 10.213.7.1:23790 --listen 127.0.0.1:23790 --target 10.213.7.2:2379

Every accepted connection is forwarded to the target. Bytes travel in chunks (what one recv()
returned); each chunk is held before it is passed on:

    hold = max(0, delay_ms + uniform(-jitter_ms, +jitter_ms))       (jitter as in netem)
    with probability `loss`: hold += uniform(200, 1000) ms           (an emulated lost packet)

A TCP stream cannot lose bytes, so "loss" is emulated by what a loss costs a TCP connection: the
data arrives late, as if after a retransmission timeout (200 ms is Linux's minimum RTO). Within a
connection and direction a chunk is never passed on before an earlier one (its release time is
at least the previous chunk's), so a held chunk also holds back what follows, like TCP's
head-of-line blocking. Both directions are shaped. A FIN travels like data (after the bytes sent
before it); a reset or error on either side resets both. New settings apply to chunks read
after they were acknowledged; chunks already held keep their release time.

Control protocol, one JSON object per line:
  stdout, once:  {"ready": true, "port": P, "listen": [...], "pid": N}   (or "ready": false,
                 "error": ...; then exit status 1)
  stdin:         {"id": 1, "cmd": "set", "delay_ms": 200, "jitter_ms": 100, "loss": 0.1}
                 {"id": 2, "cmd": "stats"}
  stdout:        {"id": 1, "ok": true, "settings": {...}}  or {"id": 1, "ok": false, "error": ...}
End of file on stdin (the controlling process closed the pipe or died) ends the proxy, so a
proxy never outlives the lab that started it. SIGTERM ends it too.

One thread, one selector (epoll) and a heap of release times: hundreds of connections cost a few
file descriptors each and no threads. Each direction buffers at most HIGH_WATER bytes before the
proxy stops reading from its source (TCP flow control then slows the sender down).
"""
import argparse
import errno
import heapq
import itertools
import json
import os
import random
import resource
import selectors
import signal
import socket
import sys
import time
from collections import deque

CHUNK = 64 * 1024  # largest recv() per readiness event
HIGH_WATER = 4 * 1024 * 1024  # bytes held per direction before the source stops being read
LOSS_STALL_MS = (200.0, 1000.0)  # an emulated loss: one retransmission timeout, 200 ms to 1 s


class Shaper:
    """The current delay/jitter/loss settings and the random draws they need."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.delay_ms = 0.0
        self.jitter_ms = 0.0
        self.loss = 0.0
        self.stalls = 0  # emulated losses so far (reported by "stats")

    def configure(self, delay_ms=0.0, jitter_ms=0.0, loss=0.0):
        delay_ms, jitter_ms, loss = float(delay_ms), float(jitter_ms), float(loss)
        if delay_ms < 0 or jitter_ms < 0:
            raise ValueError("delay_ms and jitter_ms must be >= 0")
        if not 0.0 <= loss <= 1.0:
            raise ValueError("loss must be within [0, 1]")
        self.delay_ms, self.jitter_ms, self.loss = delay_ms, jitter_ms, loss

    def settings(self):
        return {"delay_ms": self.delay_ms, "jitter_ms": self.jitter_ms, "loss": self.loss}

    def transparent(self):
        return self.delay_ms == 0 and self.jitter_ms == 0 and self.loss == 0

    def hold(self):
        """Seconds to hold the next chunk."""
        if self.transparent():
            return 0.0
        ms = self.delay_ms
        if self.jitter_ms:
            ms += self.rng.uniform(-self.jitter_ms, self.jitter_ms)
        ms = max(0.0, ms)
        if self.loss and self.rng.random() < self.loss:
            ms += self.rng.uniform(*LOSS_STALL_MS)
            self.stalls += 1
        return ms / 1000.0


class Direction:
    """One direction of a proxied connection: bytes read from `src`, held, written to `dst`."""

    def __init__(self, conn, src, dst):
        self.conn = conn
        self.src = src
        self.dst = dst
        self.held = deque()  # (release time, bytes, or None for the FIN), in release order
        self.held_bytes = 0
        self.out = bytearray()  # released, not yet accepted by dst's send buffer
        self.last_release = 0.0
        self.eof_read = False  # src sent its FIN
        self.eof_released = False  # ... and it is due to be passed on once `out` is written
        self.fin_sent = False  # dst was shut down for writing
        self.bytes = 0  # bytes passed on (stats)

    def pending(self):
        return self.held_bytes + len(self.out)

    def wants_read(self):
        return not self.eof_read and self.pending() < HIGH_WATER

    def wants_write(self):
        return bool(self.out)

    def on_readable(self, proxy, now):
        try:
            data = self.src.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.conn.abort(proxy)
            return
        if not data:
            self.eof_read = True
        self.enqueue(proxy, data or None, now)

    def enqueue(self, proxy, item, now):
        """Holds `item` (bytes, or None for the FIN) for the shaper's current delay, never
        letting it overtake an earlier chunk of this direction."""
        release = max(now + proxy.shaper.hold(), self.last_release)
        self.last_release = release
        if release <= now and not self.held:
            self.release_one(item)  # transparent fast path: no timer round trip
            self.flush(proxy)
            return
        self.held.append((release, item))
        if item:
            self.held_bytes += len(item)
        proxy.schedule(release, self)

    def release_one(self, item):
        if item is None:
            self.eof_released = True
        else:
            self.out += item

    def release_due(self, proxy, now):
        while self.held and self.held[0][0] <= now:
            _, item = self.held.popleft()
            if item:
                self.held_bytes -= len(item)
            self.release_one(item)
        self.flush(proxy)

    def flush(self, proxy):
        """Writes what is released, as far as dst's send buffer allows; passes the FIN on."""
        if self.conn.closed or (self.dst is self.conn.server and self.conn.connecting):
            return
        while self.out:
            try:
                n = self.dst.send(self.out)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.conn.abort(proxy)
                return
            del self.out[:n]
            self.bytes += n
        if not self.out and self.eof_released and not self.fin_sent:
            self.fin_sent = True
            try:
                self.dst.shutdown(socket.SHUT_WR)
            except OSError:
                self.conn.abort(proxy)
                return
        self.conn.update(proxy)


class Connection:
    """An accepted client socket and the socket to the target, with a Direction each way."""

    def __init__(self, proxy, client):
        self.client = client
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        for s in (client, self.server):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connecting = True
        self.closed = False
        self.up = Direction(self, client, self.server)  # client -> target
        self.down = Direction(self, self.server, client)  # target -> client
        self.masks = {client: 0, self.server: 0}  # what each socket is registered for
        err = self.server.connect_ex(proxy.target)
        if err not in (0, errno.EINPROGRESS):
            self.abort(proxy)
            return
        self.update(proxy)

    def on_event(self, proxy, sock, mask, now):
        if self.closed:
            return
        if sock is self.server and self.connecting:
            if mask & selectors.EVENT_WRITE:
                if self.server.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    self.abort(proxy)  # the target refused or is unreachable: so is the proxy
                    return
                self.connecting = False
                self.up.flush(proxy)
        else:
            if mask & selectors.EVENT_READ:
                (self.up if sock is self.client else self.down).on_readable(proxy, now)
            if not self.closed and mask & selectors.EVENT_WRITE:
                (self.down if sock is self.client else self.up).flush(proxy)
        self.update(proxy)  # e.g. stop reading a source that sent its FIN or filled its buffer

    def update(self, proxy):
        """Re-registers both sockets for what they are waiting for; closes the connection once
        both directions have passed their FIN on."""
        if self.closed:
            return
        if self.up.fin_sent and self.down.fin_sent:
            self.close(proxy)
            return
        wanted = {
            self.client: (selectors.EVENT_READ if self.up.wants_read() else 0)
            | (selectors.EVENT_WRITE if self.down.wants_write() else 0),
            self.server: selectors.EVENT_WRITE if self.connecting else
            (selectors.EVENT_READ if self.down.wants_read() else 0)
            | (selectors.EVENT_WRITE if self.up.wants_write() else 0),
        }
        for sock, mask in wanted.items():
            old = self.masks[sock]
            if mask == old:
                continue
            if old == 0:
                proxy.selector.register(sock, mask, self)
            elif mask == 0:
                proxy.selector.unregister(sock)
            else:
                proxy.selector.modify(sock, mask, self)
            self.masks[sock] = mask

    def close(self, proxy, reset=False):
        if self.closed:
            return
        self.closed = True
        for sock in (self.client, self.server):
            if self.masks[sock]:
                proxy.selector.unregister(sock)
                self.masks[sock] = 0
            if reset:
                try:  # linger 0: close() sends a RST, passing a reset on to the other side
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                except OSError:
                    pass
            sock.close()
        proxy.connections.discard(self)

    def abort(self, proxy):
        self.close(proxy, reset=True)


class Proxy:
    """The listeners, the connections, the timer heap and the control channel."""

    def __init__(self, listen, target, seed):
        self.selector = selectors.DefaultSelector()
        self.shaper = Shaper(seed)
        self.target = target
        self.connections = set()
        self.timers = []  # heap of (release time, tie-breaker, Direction)
        self.tiebreak = itertools.count()
        self.accepted = 0
        self.control_buf = b""
        self.listeners = []
        port = listen[0][1]
        for host, wanted_port in listen:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Port 0 on the first address picks a free port; the others then share it.
            s.bind((host, port if wanted_port == 0 else wanted_port))
            port = s.getsockname()[1]
            s.listen(1024)
            s.setblocking(False)
            self.selector.register(s, selectors.EVENT_READ, "listener")
            self.listeners.append(s)
        self.port = port
        os.set_blocking(0, False)
        self.selector.register(0, selectors.EVENT_READ, "control")

    def schedule(self, when, direction):
        heapq.heappush(self.timers, (when, next(self.tiebreak), direction))

    def run(self):
        while True:
            timeout = None
            if self.timers:
                timeout = max(0.0, self.timers[0][0] - time.monotonic())
            for key, mask in self.selector.select(timeout):
                now = time.monotonic()
                if key.data == "listener":
                    self.accept(key.fileobj)
                elif key.data == "control":
                    if not self.control():
                        return
                else:
                    key.data.on_event(self, key.fileobj, mask, now)
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                _, _, direction = heapq.heappop(self.timers)
                if not direction.conn.closed:
                    direction.release_due(self, now)

    def accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. EMFILE: leave the rest in the backlog for now
                print(f"delay_proxy: accept: {e}", file=sys.stderr, flush=True)
                return
            self.accepted += 1
            conn = Connection(self, client)
            if not conn.closed:
                self.connections.add(conn)

    def control(self):
        """Reads control lines; False when stdin reached its end (the proxy should exit)."""
        try:
            data = os.read(0, 65536)
        except (BlockingIOError, InterruptedError):
            return True
        if not data:
            return False
        self.control_buf += data
        while b"\n" in self.control_buf:
            line, self.control_buf = self.control_buf.split(b"\n", 1)
            if line.strip():
                reply(self.command(line))
        return True

    def command(self, line):
        try:
            request = json.loads(line)
        except ValueError as e:
            return {"ok": False, "error": f"not JSON: {e}"}
        rid = request.get("id")
        cmd = request.get("cmd")
        try:
            if cmd == "set":
                self.shaper.configure(request.get("delay_ms", 0), request.get("jitter_ms", 0),
                                      request.get("loss", 0))
                return {"id": rid, "ok": True, "settings": self.shaper.settings()}
            if cmd == "stats":
                return {"id": rid, "ok": True, "settings": self.shaper.settings(),
                        "stats": self.stats()}
            return {"id": rid, "ok": False, "error": f"unknown command {cmd!r}"}
        except (TypeError, ValueError) as e:
            return {"id": rid, "ok": False, "error": str(e)}

    def stats(self):
        up = sum(c.up.bytes for c in self.connections)
        down = sum(c.down.bytes for c in self.connections)
        return {"accepted": self.accepted, "open": len(self.connections),
                "stalls": self.shaper.stalls, "bytes_up_open": up, "bytes_down_open": down}


def reply(obj):
    """Writes one control line to stdout (small: a blocking write is fine)."""
    data = (json.dumps(obj) + "\n").encode()
    while data:
        n = os.write(1, data)
        data = data[n:]


def address(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=address, action="append", required=True,
                        help="HOST:PORT to accept on (repeatable; port 0 = pick one)")
    parser.add_argument("--target", type=address, required=True, help="HOST:PORT to forward to")
    parser.add_argument("--seed", type=int, default=None, help="seed of the delay/loss draws")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Two descriptors per connection: make sure hundreds of connections fit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            pass  # keep the soft limit: fewer connections fit, nothing else changes
    try:
        proxy = Proxy(args.listen, args.target, args.seed)
    except OSError as e:
        reply({"ready": False, "error": f"{e} (listen {args.listen})"})
        sys.exit(1)
    reply({"ready": True, "port": proxy.port, "pid": os.getpid(),
           "listen": [f"{h}:{proxy.port if p == 0 else p}" for h, p in args.listen]})
    try:
        proxy.run()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
