"""Clients of the nemesis suite: threads that take IDs from a ticketd pair through every front end
and kind, and record each operation as it happened (a history the checker reads).

Runs as its own process inside the clients' network namespace:
    clients.py SPEC.json HISTORY.jsonl
SPEC (written by nemesis.py) names the servers, the credentials, the mode (`etcd`: one
active/standby pair whose sequences continue across fail-over; `rocksdb`: two independent
odd/even servers) and how long to run. Every operation is logged as an `invoke` event before it is
sent and one completion after: `ok` (the server acknowledged it), `fail` (it certainly did not
happen: refused before sending, an answer saying not the leader, a 409) or `info` (unknown: a
timeout or a connection lost after sending). See checker.py for the event format.
"""
import http.client
import json
import random
import struct
import sys
import threading
import time

import pymysql
from pymysql.constants import CLIENT

# One ID space for the tickets of both servers: the odd/even pair's grids never overlap, so a
# value served by both is a duplicate just as on one server.
TICKETS = "Tickets64"
COM_STMT_PREPARE = 0x16
COM_STMT_EXECUTE = 0x17
TIMEOUT_S = 2.0


class History:
    """Events of every client thread, appended under one lock and written out at the end (and
    every second, so that a killed run still leaves what it saw)."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.pending = []
        self.file = open(path, "w")

    def add(self, event):
        with self.lock:
            self.pending.append(event)

    def flush(self):
        with self.lock:
            events, self.pending = self.pending, []
        for e in events:
            self.file.write(json.dumps(e) + "\n")
        self.file.flush()

    def close(self):
        self.flush()
        self.file.close()


# The Ticketd-Term of the last HTTP answer this thread read (None: none, or a standalone
# server): Process.op records it with an ok, and the checker holds terms to fencing.
_answer = threading.local()


class Unknown(Exception):
    """The request may have reached the server: its outcome is unknown."""


class Refused(Exception):
    """The request certainly did not take effect."""


class Process:
    """One sequential client: every invoke gets exactly one completion before the next."""

    def __init__(self, history, name, space=None, mono=None):
        self.history = history
        self.name = name
        self.space = space
        self.mono = mono

    def op(self, f, server, fn, value=None, mono=None, space=None):
        """Runs fn() as operation f against `server`; records invoke and completion; returns the
        value on ok, None otherwise."""
        base = {"process": self.name, "f": f, "server": server}
        if space or self.space:
            base["space"] = space or self.space
        mono = mono if mono is not None else self.mono
        if mono:
            base["mono"] = mono
        self.history.add(dict(base, type="invoke", time=time.time(), value=value))
        _answer.term = None
        try:
            result = fn()
        except Refused as e:
            self.history.add(dict(base, type="fail", time=time.time(), value=value,
                                  error=str(e)[:200]))
            return None
        except (Unknown, OSError, pymysql.err.Error, http.client.HTTPException, ValueError,
                KeyError, struct.error) as e:
            self.history.add(dict(base, type="info", time=time.time(), value=value,
                                  error=f"{type(e).__name__}: {str(e)[:200]}"))
            return None
        ok = dict(base, type="ok", time=time.time(), value=result)
        if _answer.term is not None:
            ok["term"] = int(_answer.term)
        self.history.add(ok)
        return result


class Servers:
    def __init__(self, spec):
        self.list = spec["servers"]
        self.token = spec["token"]
        self.user = spec["user"]
        self.password = spec["password"]

    def http(self, server, method, path, body=None):
        """One HTTP request on a new connection: (status, parsed body). A connection that could
        not be made is Refused; anything lost after sending is Unknown."""
        s = self.list[server]
        conn = http.client.HTTPConnection(s["ip"], s["http"], timeout=TIMEOUT_S)
        try:
            try:
                conn.connect()
            except OSError as e:
                raise Refused(f"connect: {e}") from e
            try:
                conn.request(method, path, body=json.dumps(body or {}),
                             headers={"Content-Type": "application/json",
                                      "Authorization": f"Bearer {self.token}"})
                resp = conn.getresponse()
                text = resp.read()
                _answer.term = resp.getheader("Ticketd-Term")
            except (OSError, http.client.HTTPException) as e:
                raise Unknown(f"{method} {path}: {e}") from e
            return resp.status, (json.loads(text) if text else None)
        finally:
            conn.close()

    def mysql(self, server):
        s = self.list[server]
        try:
            return pymysql.connect(host=s["ip"], port=s["mysql"], user=self.user,
                                   password=self.password, database="tickets",
                                   connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S,
                                   write_timeout=TIMEOUT_S, autocommit=True)
        except pymysql.err.Error as e:
            raise Refused(f"connect: {e}") from e


def http_outcome(status, body, ok_statuses):
    """Maps an HTTP answer to a result or an exception: 4xx and the 503s of a request that
    changed nothing (not the leader, a full pool, shutting down, storage_failed) are certain
    refusals; a 503 outcome_unknown is not (a write whose reply was lost may have applied:
    StorageErrc::kOutcomeUnknown), nor is any other error."""
    if status in ok_statuses:
        return body
    code = body.get("error", {}).get("code") if isinstance(body, dict) else None
    if 400 <= status < 500 or (status == 503 and code != "outcome_unknown"):
        raise Refused(f"{status} {body}")
    raise Unknown(f"{status} {body}")


def mysql_error(e):
    """An ERR packet is a certain refusal, except 1180 for a write whose outcome is unknown; a
    lost connection is unknown."""
    if isinstance(e, pymysql.err.OperationalError) and e.args and e.args[0] in (2013, 2006, 2014):
        return Unknown(str(e))
    if e.args and e.args[0] == 1180 and "outcome is unknown" in str(e):
        return Unknown(str(e))
    if isinstance(e, (pymysql.err.InternalError, pymysql.err.OperationalError,
                      pymysql.err.ProgrammingError, pymysql.err.NotSupportedError)):
        return Refused(str(e))
    return Unknown(str(e))


class Worker(threading.Thread):
    """Base of every client thread: a stop event, a server it prefers, moving to the other one
    after a failure."""

    def __init__(self, ctx, name, server):
        super().__init__(daemon=True, name=name)
        self.ctx = ctx
        self.server = server

    def process(self, **kw):
        # A new process name after an unknown outcome would be Jepsen's habit; ours stay
        # sequential, so one name per thread is enough.
        return Process(self.ctx.history, self.name, **kw)

    def mono(self):
        return "cluster" if self.ctx.mode == "etcd" else self.ctx.server_name(self.server)

    def other(self):
        self.server = (self.server + 1) % len(self.ctx.servers.list)
        time.sleep(0.02)

    def run(self):
        while not self.ctx.stop.is_set():
            try:
                if not self.step():
                    self.other()
            except Exception as e:  # noqa: BLE001 - a client bug must not end the run silently
                self.ctx.errors.append(f"{self.name}: {type(e).__name__}: {e}")
                self.other()


class MysqlText(Worker):
    """The Flickr statement pair over one connection: REPLACE INTO then SELECT LAST_INSERT_ID()."""

    def __init__(self, ctx, name, server):
        super().__init__(ctx, name, server)
        self.conn = None

    def take(self):
        try:
            if self.conn is None:
                self.conn = self.ctx.servers.mysql(self.server)
            with self.conn.cursor() as c:
                c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
                c.execute("SELECT LAST_INSERT_ID()")
                return int(c.fetchone()[0])
        except (Refused, Unknown):
            self.drop()
            raise
        except pymysql.err.Error as e:
            self.drop()
            raise mysql_error(e) from e

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
        self.conn = None

    def step(self):
        p = self.process(space=TICKETS, mono=self.mono())
        return p.op("ticket", self.ctx.server_name(self.server), self.take) is not None


class MysqlPrepared(MysqlText):
    """SELECT NEXTVAL(Tickets64) as a prepared statement: COM_STMT_EXECUTE, binary result row."""

    def __init__(self, ctx, name, server):
        super().__init__(ctx, name, server)
        self.stmt = None

    def prepare(self):
        self.conn._execute_command(COM_STMT_PREPARE, "SELECT NEXTVAL(Tickets64)")
        ok = self.conn._read_packet().get_all_data()
        if ok[0] != 0:
            raise Refused(f"prepare: {ok[:80]!r}")
        stmt_id, columns, params = struct.unpack("<IHH", ok[1:9])
        eof = not (self.conn.client_flag & CLIENT.DEPRECATE_EOF)
        for n in (params, columns):
            for _ in range(n):
                self.conn._read_packet()
            if n and eof:
                self.conn._read_packet()
        return stmt_id

    def execute(self):
        self.conn._execute_command(COM_STMT_EXECUTE, struct.pack("<IBI", self.stmt, 0, 1))
        first = self.conn._read_packet()  # raises the ERR as a pymysql error
        columns = first.get_all_data()[0]
        if columns != 1:
            raise Unknown(f"{columns} columns")
        self.conn._read_packet()  # the column definition
        eof = not (self.conn.client_flag & CLIENT.DEPRECATE_EOF)
        if eof:
            self.conn._read_packet()
        row = self.conn._read_packet().get_all_data()
        # Binary row: 0x00, a NULL bitmap of (1 + 7 + 2) // 8 = 1 byte, then the LONGLONG.
        value = struct.unpack("<Q", row[2:10])[0]
        self.conn._read_packet()  # EOF or OK that ends the rows
        return value

    def take(self):
        try:
            if self.conn is None:
                self.conn = self.ctx.servers.mysql(self.server)
                self.stmt = self.prepare()
            return self.execute()
        except (Refused, Unknown):
            self.drop()
            raise
        except pymysql.err.Error as e:
            self.drop()
            raise mysql_error(e) from e


class HttpNext(Worker):
    def step(self):
        def take():
            status, body = self.ctx.servers.http(self.server, "POST",
                                                 "/v1/sequences/Tickets64/next")
            return int(http_outcome(status, body, (200,))["ids"][0])
        p = self.process(space=TICKETS, mono=self.mono())
        return p.op("ticket", self.ctx.server_name(self.server), take) is not None


class HttpBlock(Worker):
    """Hi-lo block leases of 1,000 values."""

    def step(self):
        def lease():
            status, body = self.ctx.servers.http(self.server, "POST",
                                                 "/v1/sequences/Tickets64/blocks",
                                                 {"size": 1000, "holder": self.name})
            b = http_outcome(status, body, (201,))
            return {"first": int(b["first"]), "last": int(b["last"]), "step": int(b["step"])}
        p = self.process(space=TICKETS, mono=self.mono())
        ok = p.op("block", self.ctx.server_name(self.server), lease) is not None
        time.sleep(0.05)
        return ok


class Snowflake(Worker):
    def step(self):
        def take():
            status, body = self.ctx.servers.http(self.server, "POST", "/v1/sequences/Flakes/next")
            return int(http_outcome(status, body, (200,))["ids"][0])
        p = self.process(space="Flakes", mono=self.mono())
        return p.op("snowflake", self.ctx.server_name(self.server), take) is not None


class Gapless(Worker):
    """Reserve an invoice number, then commit it (or, one time in five, release it)."""

    TTL_MS = 8000

    def step(self):
        server = self.ctx.server_name(self.server)
        space = self.ctx.gapless_space(self.server)
        p = self.process(space=space)

        def reserve():
            status, body = self.ctx.servers.http(
                self.server, "POST", "/v1/sequences/Invoices/reservations",
                {"holder": self.name, "ttl_ms": self.TTL_MS})
            b = http_outcome(status, body, (201,))
            return {"id": int(b["id"]), "reservation": b["reservation_id"]}
        r = p.op("gapless_reserve", server, reserve)
        if r is None:
            return False
        release = random.random() < 0.2
        # Commit on whichever server answers: a reservation outlives its leader (etcd mode).
        for attempt in range(3):
            target = self.server if attempt == 0 or self.ctx.mode != "etcd" else (
                (self.server + attempt) % len(self.ctx.servers.list))
            name = self.ctx.server_name(target)
            rid = r["reservation"]
            if release:
                def end():
                    status, body = self.ctx.servers.http(
                        target, "DELETE", f"/v1/sequences/Invoices/reservations/{rid}")
                    return http_outcome(status, body, (204,)) or {}
                done = p.op("gapless_release", name, lambda: (end(), r)[1], value=r)
            else:
                def end():
                    status, body = self.ctx.servers.http(
                        target, "POST", f"/v1/sequences/Invoices/reservations/{rid}/commit")
                    return http_outcome(status, body, (200,))
                done = p.op("gapless_commit", name, lambda: (end(), r)[1], value=r)
            if done is not None:
                return True
            time.sleep(0.2)
        return False


class WorkerHolder(Worker):
    """Holds a worker ID of the pool `render`: acquire, keep alive every second, release one time
    in four after a few keepalives."""

    TTL_S = 3

    def run(self):
        lease = None
        p = self.process()
        while not self.ctx.stop.is_set():
            server = self.ctx.server_name(self.server)
            if lease is None:
                def acquire():
                    status, body = self.ctx.servers.http(
                        self.server, "POST", "/v1/workers/render/leases",
                        {"holder": self.name, "ttl_s": self.TTL_S})
                    b = http_outcome(status, body, (201,))
                    return {"pool": self.ctx.pool_space(self.server), "worker_id": b["worker_id"],
                            "lease_id": str(b["lease_id"]), "ttl_s": self.TTL_S}
                lease = p.op("worker_acquire", server, acquire)
                if lease is None:
                    self.other()
                    time.sleep(0.2)
                    continue
            self.ctx.stop.wait(1.0)
            if random.random() < 0.05 or self.ctx.stop.is_set():
                def release():
                    status, body = self.ctx.servers.http(
                        self.server, "DELETE", f"/v1/workers/render/leases/{lease['lease_id']}")
                    http_outcome(status, body, (204,))
                    return lease
                p.op("worker_release", server, release, value=lease)
                lease = None
                continue

            def keepalive():
                status, body = self.ctx.servers.http(
                    self.server, "POST",
                    f"/v1/workers/render/leases/{lease['lease_id']}/keepalive", {})
                http_outcome(status, body, (200,))
                return lease
            if p.op("worker_keepalive", server, keepalive, value=lease) is None:
                # Not kept alive: in the etcd mode try the other server once; a lease refused
                # (404/409) is gone, a timeout leaves the holder unsure: it stops using it.
                self.other()
                if self.ctx.mode != "etcd" or p.op(
                        "worker_keepalive", self.ctx.server_name(self.server), keepalive,
                        value=lease) is None:
                    lease = None


class Context:
    def __init__(self, spec, history):
        self.spec = spec
        self.mode = spec["mode"]
        self.servers = Servers(spec)
        self.history = history
        self.stop = threading.Event()
        self.errors = []

    def server_name(self, i):
        return self.servers.list[i]["name"]

    def gapless_space(self, i):
        return "Invoices" if self.mode == "etcd" else f"Invoices@{self.server_name(i)}"

    def pool_space(self, i):
        return "render" if self.mode == "etcd" else f"render@{self.server_name(i)}"


def main():
    spec_path, history_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    history = History(history_path)
    ctx = Context(spec, history)
    mix = spec["clients"]
    kinds = {"mysql_text": MysqlText, "mysql_prepared": MysqlPrepared, "http_next": HttpNext,
             "http_block": HttpBlock, "snowflake": Snowflake, "gapless": Gapless,
             "worker": WorkerHolder}
    threads = []
    for kind, n in mix.items():
        for i in range(n):
            threads.append(kinds[kind](ctx, f"{kind}-{i}", i % len(spec["servers"])))
    for t in threads:
        t.start()
    deadline = time.time() + spec["seconds"]
    while time.time() < deadline:
        time.sleep(1.0)
        history.flush()
    ctx.stop.set()
    for t in threads:
        t.join(timeout=10)
    history.close()
    for e in ctx.errors[:20]:
        print("client error:", e, file=sys.stderr)
    sys.exit(1 if ctx.errors else 0)


if __name__ == "__main__":
    main()
