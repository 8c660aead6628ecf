#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/<sha1>.

The seeds come from the unit tests (their hex byte tables, SQL, YAML, JSON and HTTP requests,
read out of the C++ string literals) shaped into each target's input format (see the comment
at the top of each tests/fuzz/*_fuzz.cpp), plus large structured seeds that reach the depth and
count limits: 100,000 nested parentheses, 10,000 statements in one COM_QUERY, 70,000
placeholders, deeply nested JSON and YAML, an alias bomb. The seeds are committed; run this
again after changing a target's input format or the unit tests it reads:

    tests/fuzz/make_corpus.py          # rewrites every corpus directory
"""

import hashlib
import re
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
OUT = ROOT / "tests" / "fuzz" / "corpus"

# ---- C++ string literals ---------------------------------------------------------------------

SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, '"': 34, "'": 39, "a": 7, "b": 8,
                  "f": 12, "v": 11, "?": 63}


def decode_literal(body):
    """The bytes of the inside of a C++ "..." literal (UTF-8 source, C++ escapes)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e == "x":
            j = i + 2
            while j < len(body) and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16) & 0xFF)
            i = j
        elif e in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        else:
            out.append(SIMPLE_ESCAPES.get(e, ord(e)))
            i += 2
    return bytes(out)


TOKEN = re.compile(
    r'//[^\n]*|/\*.*?\*/'                      # comments
    r'|(?:u8)?R"(?P<delim>[^(\s]*)\((?P<raw>.*?)\)(?P=delim)"'  # raw strings
    r'|(?:u8)?"(?P<str>(?:[^"\\\n]|\\.)*)"'     # ordinary strings
    r"|'(?:[^'\\\n]|\\.)*'"                    # char literals
    r'|(?P<ident>[A-Za-z_][A-Za-z_0-9]*)'
    r'|(?P<plus>\+)'
    r'|(?P<space>\s+)'
    r'|.', re.S)


def tokens(text):
    """("lit", bytes) / ("ident", name) / ("plus", None) / ("other", None), with offsets."""
    out = []
    for m in TOKEN.finditer(text):
        if m.group("space") is not None or m.group(0).startswith(("//", "/*")):
            continue
        if m.group("raw") is not None:
            out.append(("lit", m.group("raw").encode("utf-8"), m.start()))
        elif m.group("str") is not None:
            out.append(("lit", decode_literal(m.group("str")), m.start()))
        elif m.group("ident") is not None:
            out.append(("ident", m.group("ident"), m.start()))
        elif m.group("plus") is not None:
            out.append(("plus", None, m.start()))
        else:
            out.append(("other", None, m.start()))
    return out


def literal_groups_from_text(text, constants=None, unknown=b""):
    """Concatenations of literals ("a" "b", "a" + kConst + "b") in C++ text, as
    (bytes, text before the group). `constants` maps identifiers to bytes; other identifiers
    inside a `+` concatenation become `unknown`."""
    constants = constants or {}
    toks = tokens(text)
    groups = []
    i = 0
    while i < len(toks):
        kind, value, offset = toks[i]
        if kind != "lit":
            i += 1
            continue
        current = value
        i += 1
        while i < len(toks):
            kind, value, _ = toks[i]
            if kind == "lit":
                current += value
                i += 1
            elif kind == "plus" and i + 1 < len(toks) and toks[i + 1][0] == "lit":
                current += toks[i + 1][1]
                i += 2
            elif (kind == "plus" and i + 1 < len(toks) and toks[i + 1][0] == "ident" and
                  (i + 2 >= len(toks) or toks[i + 2][0] in ("plus", "other"))):
                current += constants.get(toks[i + 1][1], unknown)
                i += 2
            else:
                break
        groups.append((current, text[max(0, offset - 80):offset]))
    return groups


def literal_groups(path, constants=None, unknown=b""):
    return literal_groups_from_text(path.read_text(encoding="utf-8"), constants, unknown)


HEX = re.compile(rb"^[0-9a-fA-F]{2}(\s*[0-9a-fA-F]{2})*$")


def hex_blobs(paths):
    """Byte tables written as hex ("0a 35 2e ..."), decoded."""
    blobs = []
    zeros23 = b" 00" * 23
    for path in paths:
        for group, _ in literal_groups(path, {"kZeros23": zeros23}):
            g = group.strip()
            if len(g) >= 4 and HEX.match(g) and any(ch in g for ch in b" \n"):
                blobs.append(bytes.fromhex(g.decode()))
    return unique(blobs)


def unique(items):
    seen = set()
    out = []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


# ---- MySQL packets ---------------------------------------------------------------------------

CLIENT_LONG_PASSWORD = 1 << 0
CLIENT_LONG_FLAG = 1 << 2
CLIENT_CONNECT_WITH_DB = 1 << 3
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_SSL = 1 << 11
CLIENT_TRANSACTIONS = 1 << 13
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_MULTI_STATEMENTS = 1 << 16
CLIENT_MULTI_RESULTS = 1 << 17
CLIENT_PS_MULTI_RESULTS = 1 << 18
CLIENT_PLUGIN_AUTH = 1 << 19
CLIENT_CONNECT_ATTRS = 1 << 20
CLIENT_PLUGIN_AUTH_LENENC = 1 << 21
CLIENT_SESSION_TRACK = 1 << 23
CLIENT_DEPRECATE_EOF = 1 << 24
MODERN = (CLIENT_LONG_PASSWORD | CLIENT_LONG_FLAG | CLIENT_CONNECT_WITH_DB | CLIENT_PROTOCOL_41 |
          CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION | CLIENT_MULTI_STATEMENTS |
          CLIENT_MULTI_RESULTS | CLIENT_PS_MULTI_RESULTS | CLIENT_PLUGIN_AUTH |
          CLIENT_PLUGIN_AUTH_LENENC | CLIENT_DEPRECATE_EOF)


def lenenc_int(n):
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)


def lenenc_str(s):
    return lenenc_int(len(s)) + s


def frame(payload, seq):
    out = b""
    while True:
        n = min(len(payload), 0xFFFFFF)
        out += struct.pack("<I", n)[:3] + bytes([seq & 0xFF]) + payload[:n]
        payload = payload[n:]
        seq += 1
        if n < 0xFFFFFF:
            return out


def handshake_response(caps=MODERN, user=b"app", token=b"\x00" * 20, db=b"tickets",
                       plugin=b"mysql_native_password", attrs=None):
    out = struct.pack("<IIB", caps, 1 << 24, 45) + b"\x00" * 23 + user + b"\x00"
    if caps & CLIENT_PLUGIN_AUTH_LENENC:
        out += lenenc_str(token)
    elif caps & CLIENT_SECURE_CONNECTION:
        out += bytes([len(token)]) + token
    else:
        out += token + b"\x00"
    if caps & CLIENT_CONNECT_WITH_DB and db is not None:
        out += db + b"\x00"
    if caps & CLIENT_PLUGIN_AUTH and plugin is not None:
        out += plugin + b"\x00"
    if caps & CLIENT_CONNECT_ATTRS:
        block = b"".join(lenenc_str(k) + lenenc_str(v) for k, v in (attrs or []))
        out += lenenc_str(block)
    return out


def u24(n):
    return struct.pack("<I", n)[:3]


def record(op, data):
    """A record of the mysql_connection script."""
    return bytes([op]) + u24(len(data)) + data


def login(caps=MODERN, user=b"app", db=b"tickets", plugin=b"mysql_native_password"):
    return record(2, handshake_response(caps, user, db=db, plugin=plugin))


def query(sql):
    return record(0, b"\x03" + sql)


def stmt_execute(stmt_id, params):
    """COM_STMT_EXECUTE with (type, value bytes or None for NULL) parameters, types bound."""
    out = b"\x17" + struct.pack("<IBI", stmt_id, 0, 1)
    if params:
        bitmap = bytearray((len(params) + 7) // 8)
        for i, (_, v) in enumerate(params):
            if v is None:
                bitmap[i // 8] |= 1 << (i % 8)
        out += bytes(bitmap) + b"\x01"
        out += b"".join(struct.pack("<H", t) for t, _ in params)
        out += b"".join(v for _, v in params if v is not None)
    return out


# ---- writing ---------------------------------------------------------------------------------

def write(target, seeds):
    d = OUT / target
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    seeds = unique(s for s in seeds if s)
    for s in seeds:
        (d / hashlib.sha1(s).hexdigest()).write_bytes(s)
    total = sum(len(s) for s in seeds)
    print(f"{target}: {len(seeds)} seeds, {total} bytes, largest {max(map(len, seeds))}")


def files(*globs):
    out = []
    for g in globs:
        out += sorted(UNIT.glob(g))
    return out


def strings(paths, min_len=1):
    return unique(g for path in paths for g, _ in literal_groups(path, unknown=b"Tickets64")
                  if len(g) >= min_len)


# ---- the targets -----------------------------------------------------------------------------

def is_framed(b):
    return len(b) >= 4 and int.from_bytes(b[:3], "little") == len(b) - 4


def mysql_payloads():
    blobs = hex_blobs(files("mysql/protocol/*_test.cpp", "mysql/*_test.cpp"))
    payloads = []
    for b in blobs:
        payloads.append(b)
        if is_framed(b):
            payloads.append(b[4:])
    payloads += [handshake_response(), handshake_response(MODERN | CLIENT_CONNECT_ATTRS,
                                                          attrs=[(b"_client_name", b"libmysql")]),
                 handshake_response(CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION, token=b""),
                 handshake_response(CLIENT_PROTOCOL_41, token=b"abc"),
                 struct.pack("<IIB", MODERN | CLIENT_SSL, 1 << 24, 45) + b"\x00" * 23]
    return unique(payloads)


def mysql_framing(payloads):
    seeds = []
    for p in payloads:
        for limit in (2, 3, 6):
            seeds.append(bytes([limit, 7]) + (p if is_framed(p) else frame(p, 0)))
    stream = b"".join(frame(p, 0) for p in payloads[:20])
    seeds += [bytes([3, 1]) + stream, bytes([6, 200]) + stream]
    # Synthesized: a payload of exactly 0xFFFFFF bytes (a full packet, then an empty one), two
    # full packets and a tail, a continuation out of sequence, and a header over the limit.
    full = b"\xff\x00\x01\x00a"
    seeds += [b"\x86\x03" + full + b"\x00\x01\x00\x00",
              b"\x87\x03" + full + b"\xff\x01\x01\x00b" + b"\x00\x02\x03\x00xyz",
              b"\x86\x03" + full + b"\x00\x05\x03\x00xyz",
              b"\x83\x03" + full,
              bytes([0, 0]) + frame(b"", 0),
              bytes([1, 0]) + frame(b"ab", 0)]
    write("mysql_framing", seeds)


def mysql_decoders(payloads):
    seeds = []
    caps_choices = [struct.pack("<I", c) for c in (MODERN, CLIENT_PROTOCOL_41, 0,
                                                    MODERN | CLIENT_SESSION_TRACK)]
    types = (0x01, 0x02, 0x03, 0x08, 0x8008, 0x04, 0x05, 0x07, 0x0A, 0x0B, 0x0C, 0x0D, 0xFD, 0xF6)
    for p in payloads:
        for sel in (0, 1, 2, 4, 6, 7, 10, 12, 13):
            seeds.append(bytes([sel]) + p)
        for c in caps_choices[:2]:
            seeds += [bytes([3]) + c + p, bytes([5]) + c + p]
        seeds.append(bytes([11, 12]) + bytes(range(12)) + p)
    # COM_STMT_EXECUTE for 1 and 3 placeholders, types sent or remembered, with long data.
    execute1 = stmt_execute(1, [(0x08, struct.pack("<q", 42))])
    execute3 = stmt_execute(1, [(0xFD, lenenc_str(b"it's")), (0x06, None), (0x05, b"\x00" * 8)])
    seeds += [bytes([8]) + b"\x01\x00" + b"\x01" + b"\x08\x00" + b"\x00" + execute1,
              bytes([8]) + b"\x03\x00" + b"\x00" + b"\x00" + execute3,
              bytes([8]) + b"\x03\x00" + b"\x00" + b"\x00\x01\x01\x05long!\x00\x00" + execute3,
              bytes([8]) + b"\x00\x08" + b"\x00" + b"\x00" + stmt_execute(1, [(0x01, b"\x01")] * 2048)]
    # Binary values: one per type, in the forms the unit tests use.
    values = [b"\x7f", b"\xff\x7f", b"\x01\x00\x00\x80", struct.pack("<q", -1),
              struct.pack("<f", 1.5), struct.pack("<d", -0.0), b"\x0b\xe8\x07\x01\x1f\x0c\x00\x00"
              b"\x40\xe2\x01\x00", b"\x04\xe8\x07\x01\x1f", b"\x00",
              b"\x0c\x01\x23\x00\x00\x00\x0e\x3b\x3b\x01\x00\x00\x00", b"\x03abc"]
    for t in types:
        for v in values:
            seeds.append(bytes([9]) + struct.pack("<H", t) + v)
    # Result sets: caps, binary flag, status, columns, rows (see result_set() in the target).
    for binary in (0, 1):
        for caps in caps_choices:
            cols = bytes([3]) + b"".join(bytes([4]) + b"name" + b"\x01t" + bytes([k]) +
                                         b"\x20\x00" + b"\x14\x00\x00\x00" for k in (3, 10, 7))
            rows = bytes([2]) + (b"\x01\x021" + b"\x01\x0a2024-01-31" + b"\x00") * 2
            seeds.append(bytes([10]) + caps + bytes([binary]) + b"\x02\x00" + cols + rows)
    seeds += [bytes([12]) + bytes(range(1, 21)) + b"\x06secret" + b"\x00" * 20,
              bytes([12]) + bytes(range(1, 21)) + b"\x00"]
    write("mysql_decoders", seeds)


def mysql_auth():
    seeds = []
    variants = [
        handshake_response(),
        handshake_response(user=b"root"),
        handshake_response(user=b"nobody"),
        handshake_response(db=b"information_schema"),
        handshake_response(db=b"other"),
        handshake_response(db=None),
        handshake_response(plugin=b"caching_sha2_password"),
        handshake_response(user=b"root", plugin=b"sha256_password"),
        handshake_response(plugin=None),
        handshake_response(MODERN & ~CLIENT_PLUGIN_AUTH_LENENC & ~CLIENT_PLUGIN_AUTH, plugin=None),
        handshake_response(CLIENT_PROTOCOL_41 | CLIENT_CONNECT_WITH_DB, token=b""),
        handshake_response(MODERN | CLIENT_CONNECT_ATTRS, attrs=[(b"_pid", b"42")] * 3),
        struct.pack("<IIB", MODERN | CLIENT_SSL, 1 << 24, 45) + b"\x00" * 23,
        struct.pack("<IIB", CLIENT_LONG_PASSWORD, 1 << 24, 45) + b"\x00" * 23 + b"app\x00",
        handshake_response(user=b"a" * 70000),
    ]
    for v in variants:
        for flags in (0, 1, 3):
            seeds.append(bytes([flags]) + u24(len(v)) + v + u24(0))
        seeds.append(bytes([2]) + u24(len(v)) + v + u24(20) + b"\x00" * 20)
        seeds.append(bytes([1 | 4 | 8]) + u24(len(v)) + v + u24(0) + b"\x05" + b"\x03\x00")
    write("mysql_auth", seeds)


def sql_texts():
    paths = files("sql/*_test.cpp", "mysql/*_test.cpp")
    texts = strings(paths)
    return [t for t in texts if re.search(rb"[A-Za-z@?]", t) and len(t) < 4000]


def big_sql():
    """Text at the depth and count limits (each seed costs up to 2 s under ASan: few of them)."""
    return [
        b"SELECT " + b"(" * 100000 + b"1" + b")" * 100000,
        b"SET @x = " + b"(" * 10000 + b"1" + b")" * 10000,
        b"SET @@session.sql_mode = " + b"CONCAT(" * 5000 + b"'a'" + b")" * 5000,
        b"DO " + b"IFNULL(" * 2000 + b"NULL" + b", 1)" * 2000,
        b"SELECT 1;" * 10000,
        b"SELECT NEXTVAL(Tickets64);" * 1000,
        b"INSERT INTO Tickets64 (stub) VALUES " + b",".join([b"('a')"] * 5000),
        b"SELECT ?" + b", ?" * 5000,
        b"/*!" * 10000 + b" SELECT 1",
        b"SELECT '" + b"\\'" * 20000 + b"'",
        b"SELECT `" + b"a" * 100000 + b"`",
    ]


def sql_target(texts):
    write("sql", texts + big_sql())


def mysql_connection(texts):
    seeds = []
    for t in texts:
        seeds.append(login() + query(t))
    # Multi-statement text, and the same without CLIENT_MULTI_STATEMENTS.
    seeds.append(login() + query(b"BEGIN; SELECT NEXTVAL(Invoices); COMMIT; SELECT 1"))
    seeds.append(login(MODERN & ~CLIENT_MULTI_STATEMENTS) + query(b"SELECT 1; SELECT 2"))
    seeds.append(login(MODERN & ~CLIENT_DEPRECATE_EOF) +
                 query(b"SELECT LAST_INSERT_ID(), @@version_comment; SELECT 1"))
    # Prepared statements: prepare, long data, execute with bound and remembered types, reset,
    # close; field list, init db, set option, statistics, reset connection, ping, quit.
    prep = (login() + record(0, b"\x16INSERT INTO Tickets64 (stub) VALUES (?)") +
            record(0, b"\x18" + struct.pack("<IH", 1, 0) + b"long ") +
            record(0, b"\x18" + struct.pack("<IH", 1, 0) + b"data") +
            record(0, stmt_execute(1, [(0xFD, lenenc_str(b"x"))])) +
            record(0, b"\x17" + struct.pack("<IBI", 1, 0, 1) + b"\x00\x00" + lenenc_str(b"y")) +
            record(0, b"\x1a" + struct.pack("<I", 1)) + record(0, b"\x19" + struct.pack("<I", 1)) +
            record(0, stmt_execute(1, [])))
    seeds.append(prep)
    seeds.append(login() + record(0, b"\x16SELECT NEXTVAL(Tickets64), ?, ?") +
                 record(0, stmt_execute(1, [(0x08, struct.pack("<q", 5)), (0x06, None)])))
    seeds.append(login(MODERN & ~CLIENT_DEPRECATE_EOF) + record(0, b"\x16SELECT ?, 'x'") +
                 record(0, stmt_execute(1, [(0x0C, b"\x07\xe8\x07\x01\x1f\x0c\x00\x00")])))
    seeds.append(login() + record(0, b"\x04Tickets64\x00") + record(0, b"\x02tickets") +
                 record(0, b"\x02nope") + record(0, b"\x1b\x01\x00") + record(0, b"\x1b\x00\x00") +
                 record(0, b"\x09") + record(0, b"\x1f") + record(0, b"\x0e") + record(0, b"\x20") +
                 record(0, b"") + record(0, b"\x01"))
    # Logins: switched from caching_sha2_password and answered (op 3), refused, root.
    seeds.append(login(plugin=b"caching_sha2_password") + record(3, b"") + query(b"SELECT 1"))
    seeds.append(login(user=b"root", db=None) + query(b"SELECT CURRENT_USER()"))
    seeds.append(record(0, handshake_response(user=b"app")) + query(b"SELECT 1"))
    # Raw bytes: pipelined packets, an out-of-order continuation, an oversized header.
    pipelined = frame(b"\x03SELECT 1", 0) + frame(b"\x0e", 0) + frame(b"\x03SELECT 2", 0)
    seeds.append(login() + record(1, pipelined))
    seeds.append(login() + record(1, b"\xff\xff\xff\x00" + b"x" * 16 + b"\x00\x00\x00\x05"))
    seeds.append(record(1, b"\x00\x00\x02\x01"))
    # At and past the limits: 10,000 statements in one query (refused whole), 1,000 (the cap),
    # 100,000 nested parentheses, 70,000 placeholders, a 1 MiB query.
    for big in big_sql():
        seeds.append(login() + query(big))
    seeds.append(login() + record(0, b"\x16SELECT ?" + b", ?" * 69999))
    seeds.append(login() + record(0, b"\x16DO ?" + b", ?" * 999) +
                 record(0, stmt_execute(1, [(0x03, b"\x01\x00\x00\x00")] * 1000)))
    seeds.append(login() + query(b"SELECT '" + b"x" * (1 << 20) + b"'"))
    write("mysql_connection", seeds)


def http_requests():
    """make_request(verb::X, target, body) calls of the route tests, grouped per TEST."""
    tests = []
    for path in files("http/routes*_test.cpp", "http/http_session_test.cpp"):
        text = path.read_text(encoding="utf-8")
        for block in re.split(r"\nTEST(?:_F)?\(", text)[1:]:
            requests = []
            for m in re.finditer(r"make_request\(\s*(?:beast::http::)?verb::(\w+),", block):
                method = m.group(1).upper()
                args = block[m.end():m.end() + 600]
                groups = []
                for lit, _ in literal_groups_from_text(args):
                    groups.append(lit)
                    if len(groups) == 2:
                        break
                if not groups:
                    continue
                target = groups[0]
                body = groups[1] if len(groups) > 1 and groups[1][:1] in (b"{", b"[") else b""
                if not target.startswith(b"/"):
                    continue
                requests.append(http_request(method.encode(), target, body))
            if requests:
                tests.append(requests)
    return tests


def http_request(method, target, body=b"", headers=()):
    head = method + b" " + target + b" HTTP/1.1\r\nHost: localhost\r\n"
    if body:
        head += b"Content-Type: application/json\r\n"
    for h in headers:
        head += h + b"\r\n"
    return head + b"\r\n" + body


SEP = b"\n~~~\n"


def http_target():
    seeds = []
    for requests in http_requests():
        seeds.append(b"\x00" + SEP.join(requests))
        seeds.append(b"\x01" + SEP.join(requests))
    auth = b"Authorization: Bearer fuzz-token-0123456789abcdef"
    seeds.append(b"\x01" + http_request(b"POST", b"/v1/sequences/Tickets64/next", headers=[auth]))
    seeds.append(b"\x02" + http_request(b"GET", b"/metrics"))
    flows = [
        [http_request(b"PUT", b"/v1/sequences/Orders", b'{"kind":"gapless"}'),
         http_request(b"POST", b"/v1/sequences/Orders/reservations", b'{"ttl_ms":1000}'),
         http_request(b"POST", b"/v1/sequences/Orders/reservations/1/commit"),
         http_request(b"GET", b"/v1/sequences/Orders")],
        [http_request(b"POST", b"/v1/sequences/Tickets64/blocks",
                      b'{"size": 1000, "holder": "svc"}'),
         http_request(b"GET", b"/v1/sequences/Tickets64/leases?limit=5"),
         http_request(b"POST", b"/v1/workers/orders/leases", b'{"holder":"a","ttl_s":5}'),
         http_request(b"DELETE", b"/v1/sequences/Tickets32")],
    ]
    seeds += [b"\x00" + SEP.join(f) for f in flows]
    # Deeply nested and large bodies: parsing must refuse them, not overflow or time out.
    deep = b"[" * 100000 + b"]" * 100000
    seeds += [
        b"\x00" + http_request(b"POST", b"/v1/sequences/Tickets64/blocks", deep),
        b"\x00" + http_request(b"POST", b"/v1/sequences/Tickets64/blocks",
                               b'{"size":' + b'{"a":' * 50000 + b"1" + b"}" * 50000 + b"}"),
        b"\x00" + http_request(b"PUT", b"/v1/sequences/Big",
                               b'{"kind":"ticket","x":"' + b"a" * (1 << 20) + b'"}'),
        b"\x00" + http_request(b"POST", b"/v1/sequences/Tickets64/blocks",
                               b'{"size":1,"holder":"' + b"h" * 1000 + b'"}'),
        b"\x00" + http_request(b"GET", b"/v1/sequences/" + b"%2F" * 4000),
    ]
    write("http", seeds)


def config_target():
    texts = [g for g, _ in literal_groups(UNIT / "config" / "config_loader_test.cpp")
             if b":" in g or b"\n" in g]
    texts.append((ROOT / "config" / "ticketd.yaml").read_bytes())
    depth = 1000
    block = b"".join(b" " * i + b"k%d:\n" % i for i in range(depth)) + b" " * depth + b"v\n"
    many = b"sequences:\n" + b"".join(b"  - { name: S%d, kind: ticket }\n" % i
                                      for i in range(10000))
    bomb = b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    prev = b"a"
    for level in range(1, 9):
        name = b"l%d" % level
        bomb += name + b": &" + name + b" [" + b", ".join([b"*" + prev] * 10) + b"]\n"
        prev = name
    bomb += b"sequences: *" + prev + b"\n"
    texts += [
        b"mysql: " + b"[" * 20000 + b"]" * 20000 + b"\n",
        b"http: " + b"{a: " * 20000 + b"1" + b"}" * 20000 + b"\n",
        block,
        many,
        bomb,
        b"mysql:\n  users:\n" + b"".join(b"    - { name: u%d, password: p }\n" % i
                                         for i in range(5000)),
    ]
    write("config", texts)


def etcd_target():
    texts = strings(files("storage/etcd/etcd_codec_test.cpp"))
    seeds = []
    for t in texts:
        seeds += [b"\x00" + t, b"\x01" + t]
    seeds += [b"\x02\x03/w/" + b"key", b"\x02\x02a\xff", b"\x02\x02\xff\xff", b"\x02\x00"]
    seeds += [b"\x03" + bytes(range(256)), b"\x04" + bytes(range(256)),
              b"\x04" + b"\xff" * 400, b"\x03" + b"\x07" * 300]
    seeds += [b"\x00" + b"[" * 100000 + b"]" * 100000,
              b"\x00" + b'{"header":' * 50000 + b"{}" + b"}" * 50000,
              b"\x00" + b'{"kvs":[' + b",".join([b'{"key":"YQ=="}'] * 20000) + b"]}",
              b"\x00" + b'{"header":{"revision":"99999999999999999999999"}}']
    write("etcd_codec", seeds)


def main():
    payloads = mysql_payloads()
    mysql_framing(payloads)
    mysql_decoders(payloads)
    mysql_auth()
    texts = sql_texts()
    sql_target(texts)
    mysql_connection(texts)
    http_target()
    config_target()
    etcd_target()


if __name__ == "__main__":
    main()
