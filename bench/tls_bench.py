#!/usr/bin/python3
"""Drives bench/tls.sh: two ticketd processes on 127.0.0.1 with private data dirs under WORK, one
without TLS and one with mysql.tls and http.tls (a throw-away CA from tests/support/test_pki).
Each workload runs once as a warm-up, then ROUNDS times interleaved; prints medians and the
ratio TLS / plain per front end.

Usage: tls_bench.py SECONDS ROUNDS WORK"""
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
import mysql_bench as mb  # noqa: E402
from test_pki import TestPki  # noqa: E402

SECONDS = int(sys.argv[1])
ROUNDS = int(sys.argv[2])
WORK = sys.argv[3]
CONNECTIONS = 64
WRK_LUA = os.path.join(mb.ROOT, "bench", "wrk", "post_json.lua")
NEXT_PATH = "/v1/sequences/Tickets64/next"


def start_ticketd(name, pki=None):
    port, http_port = mb.free_port(), mb.free_port()
    mysql_tls = http_tls = ""
    if pki:
        tls = f"{{ cert_file: {pki.server_cert}, key_file: {pki.server_key} }}"
        mysql_tls = f"  tls: {tls}\n"
        http_tls = f"  tls: {tls}\n"
    cfg = os.path.join(WORK, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write(f"""data_dir: {WORK}/{name}
log_level: warn
mysql:
  listen: 127.0.0.1:{port}
{mysql_tls}  users:
    - {{ name: bench, password: bench }}
http:
  listen: 127.0.0.1:{http_port}
{http_tls}sequences:
  - {{ name: Tickets64, kind: ticket }}
""")
    proc = subprocess.Popen([os.path.join(mb.ROOT, "build", "ticketd"), "--config", cfg],
                            stdout=open(os.path.join(WORK, f"{name}.log"), "w"),
                            stderr=subprocess.STDOUT)
    mb.wait_port(port, proc)
    mb.wait_port(http_port, proc)
    return proc, port, http_port


def wrk(url, seconds):
    r = subprocess.run(["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s",
                        WRK_LUA, url, "--", NEXT_PATH, "{}"], capture_output=True, text=True)
    m = re.search(r"^RESULT (.*)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        return None, None
    v = {k: float(x) for k, x in (f.split("=") for f in m.group(1).split())}
    if v["non2xx"] + v["socket_errors"]:
        return None, None
    return v["rps"], v["p99_us"] / 1000


def sysbench(port, seconds, ssl, cwd):
    r = subprocess.run(
        mb.sysbench_argv(mb.LUA, port, f"--threads={CONNECTIONS}", f"--time={seconds}",
                         "--percentile=99", "--mode=nextval", "--table=Tickets64",
                         f"--mysql-ssl={'on' if ssl else 'off'}"),
        capture_output=True, text=True, cwd=cwd)
    out = r.stdout + r.stderr
    tps = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out)
    p99 = re.search(r"99th percentile:\s+([\d.]+)", out)
    if r.returncode != 0 or not tps:
        print("sysbench failed: " + out.strip()[-300:], file=sys.stderr)
        return None, None
    return float(tps.group(1)), float(p99.group(1))


def main():
    pki = TestPki()
    # sysbench 1.0 reads its CA and client files from the working directory with --mysql-ssl=on.
    sb_dir = os.path.join(WORK, "sysbench")
    os.makedirs(sb_dir)
    shutil.copy(pki.ca, os.path.join(sb_dir, "cacert.pem"))
    shutil.copy(pki.client_cert, os.path.join(sb_dir, "client-cert.pem"))
    shutil.copy(pki.client_key, os.path.join(sb_dir, "client-key.pem"))
    plain, p_mysql, p_http = start_ticketd("plain")
    tls, t_mysql, t_http = start_ticketd("tls", pki)
    workloads = [
        ("http", "plain", lambda s: wrk(f"http://127.0.0.1:{p_http}", s)),
        ("http", "tls", lambda s: wrk(f"https://127.0.0.1:{t_http}", s)),
        ("mysql", "plain", lambda s: sysbench(p_mysql, s, False, sb_dir)),
        ("mysql", "tls", lambda s: sysbench(t_mysql, s, True, sb_dir)),
    ]
    results = {(f, m): [] for f, m, _ in workloads}
    try:
        for _, _, run in workloads:
            run(2)  # warm-up
        for _ in range(ROUNDS):
            for front, mode, run in workloads:
                results[(front, mode)].append(run(SECONDS))
    finally:
        for p in (plain, tls):
            p.terminate()
            p.wait()
        shutil.rmtree(pki.dir, ignore_errors=True)

    def med(front, mode, i):
        vals = [r[i] for r in results[(front, mode)] if r[i] is not None]
        return statistics.median(vals) if vals else None

    print(f"\nTLS cost, {CONNECTIONS} connections, {ROUNDS} rounds x {SECONDS} s (medians)")
    print(f"{'front end':<36} {'plain IDs/s':>12} {'TLS IDs/s':>12} {'TLS/plain':>10} "
          f"{'p99 plain':>10} {'p99 TLS':>9}")
    for front, label in (("http", "HTTP POST /next (wrk, keep-alive)"),
                         ("mysql", "MySQL SELECT NEXTVAL (sysbench)")):
        a, b = med(front, "plain", 0), med(front, "tls", 0)
        pa, pb = med(front, "plain", 1), med(front, "tls", 1)
        ratio = f"{b / a:.2f}x" if a and b else "n/a"
        fmt = lambda v: f"{v:,.0f}" if v else "failed"  # noqa: E731
        fms = lambda v: f"{v:.2f} ms" if v else "-"  # noqa: E731
        print(f"{label:<36} {fmt(a):>12} {fmt(b):>12} {ratio:>10} {fms(pa):>10} {fms(pb):>9}")


if __name__ == "__main__":
    main()
