"""ticketd on a secured etcd: TLS with client certificates (--client-cert-auth) and etcd's auth
(a root user, and a ticketd user whose role is limited to the prefix). Certificates are made
here with openssl. ticketd works (MySQL and HTTP tickets, a leader elected, a follower taking
over after SIGTERM, tokens renewed after etcd restarts and forgets them); a wrong CA, a missing
client certificate, a wrong password and a user without rights each stop it at start with a
message naming the cause.
Usage: secure_etcd_test.py"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import pymysql  # noqa: E402

from ticketd_process import Ticketd, free_port  # noqa: E402

ETCD_BINARY = os.environ.get("ETCD_BINARY", "/usr/bin/etcd")
ETCDCTL = os.environ.get("ETCDCTL_BINARY", "/usr/bin/etcdctl")
PREFIX = "/ticketd/secure/"

CONFIG = """
storage:
  engine: etcd
  endpoints: [https://{host}:{port}]
  prefix: {prefix}
  leader_ttl_s: 3
{access}
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  users:
    - {{{{ name: ticket, password: ticket }}}}
http:
  listen: 127.0.0.1:{{http_port}}
sequences:
  - {{{{ name: Tickets64, kind: ticket, cache: 100 }}}}
"""


def run(*args, **kw):
    subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


class Pki:
    """A CA, etcd's server certificate (for IP 127.0.0.1), a client certificate without a
    CommonName (etcd 3.4's gateway refuses client certificates with one under
    --client-cert-auth), and an unrelated CA."""

    def __init__(self, d):
        self.d = d
        self.ca, self.ca_key = self.make_ca("ca")
        self.other_ca, _ = self.make_ca("other-ca")
        self.server, self.server_key = self.sign("server", "/O=ticketd test/OU=etcd",
                                                 "subjectAltName=IP:127.0.0.1\n"
                                                 "extendedKeyUsage=serverAuth,clientAuth")
        self.client, self.client_key = self.sign("client", "/O=ticketd test/OU=client",
                                                 "subjectAltName=DNS:ticketd-client\n"
                                                 "extendedKeyUsage=clientAuth")

    def path(self, name):
        return os.path.join(self.d, name)

    def make_ca(self, name):
        crt, key = self.path(name + ".pem"), self.path(name + ".key")
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj",
            f"/O=ticketd test/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        return crt, key

    def sign(self, name, subject, extensions):
        crt, key, csr = (self.path(name + ext) for ext in (".pem", ".key", ".csr"))
        ext = self.path(name + ".ext")
        with open(ext, "w") as f:
            f.write(extensions + "\n")
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", subject)
        run("openssl", "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
            "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext)
        return crt, key


class SecureEtcd:
    def __init__(self, pki, d):
        self.pki = pki
        self.d = d
        self.port = free_port()
        self.peer_port = free_port()
        self.proc = None

    @property
    def endpoint(self):
        return f"https://127.0.0.1:{self.port}"

    def start(self):
        peer = f"http://127.0.0.1:{self.peer_port}"
        self.log = open(os.path.join(self.d, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            [ETCD_BINARY, "--name=secure", f"--data-dir={self.d}/data",
             f"--listen-client-urls={self.endpoint}", f"--advertise-client-urls={self.endpoint}",
             f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
             f"--initial-cluster=secure={peer}", f"--cert-file={self.pki.server}",
             f"--key-file={self.pki.server_key}", "--client-cert-auth",
             f"--trusted-ca-file={self.pki.ca}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if subprocess.run(self.ctl("endpoint", "health"), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError("secured etcd did not become healthy")

    def ctl(self, *args, user=None):
        cmd = [ETCDCTL, f"--endpoints={self.endpoint}", f"--cacert={self.pki.ca}",
               f"--cert={self.pki.client}", f"--key={self.pki.client_key}"]
        if user:
            cmd.append(f"--user={user}")
        return cmd + list(args)

    def etcdctl(self, *args, user=None):
        r = subprocess.run(self.ctl(*args, user=user), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=dict(os.environ, ETCDCTL_API="3"))
        assert r.returncode == 0, (args, r.stdout.decode())
        return r.stdout.decode()

    def enable_auth(self):
        for args in (("user", "add", "root:rootpw"), ("role", "add", "root"),
                     ("user", "grant-role", "root", "root"),
                     ("user", "add", "ticketd:ticketd-pw"), ("role", "add", "ticketd"),
                     ("role", "grant-permission", "ticketd", "--prefix=true", "readwrite", PREFIX),
                     ("user", "grant-role", "ticketd", "ticketd"),
                     ("user", "add", "outsider:outsider-pw"), ("role", "add", "elsewhere"),
                     ("role", "grant-permission", "elsewhere", "--prefix=true", "readwrite",
                      "/elsewhere/"),
                     ("user", "grant-role", "outsider", "elsewhere"),
                     ("user", "add", "reader:reader-pw"), ("role", "add", "reader"),
                     ("role", "grant-permission", "reader", "--prefix=true", "read", PREFIX),
                     ("user", "grant-role", "reader", "reader"),
                     ("auth", "enable")):
            self.etcdctl(*args)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def access(pki, ca=None, cert=True, user="ticketd", password="ticketd-pw", indent="  "):
    lines = [f"ca_file: {ca or pki.ca}"]
    if cert:
        lines += [f"cert_file: {pki.client}", f"key_file: {pki.client_key}"]
    if user:
        lines += [f"username: {user}", f"password: {password}"]
    return "\n".join(indent + line for line in lines)


# RocksDB storage, Snowflake worker IDs leased from the secured etcd.
WORKER_CONFIG = """
data_dir: {{data_dir}}
snowflake:
  worker_id:
    source: etcd
    endpoints: [https://127.0.0.1:{port}]
    prefix: {prefix}workers/
{access}
mysql:
  listen: 127.0.0.1:{{mysql_port}}
  users:
    - {{{{ name: ticket, password: ticket }}}}
http:
  listen: 127.0.0.1:{{http_port}}
sequences:
  - {{{{ name: Flakes, kind: snowflake }}}}
"""


def worker_instance(etcd, acc):
    return Ticketd(config=WORKER_CONFIG.format(port=etcd.port, prefix=PREFIX, access=acc))


def instance(etcd, acc, host="127.0.0.1"):
    return Ticketd(config=CONFIG.format(host=host, port=etcd.port, prefix=PREFIX, access=acc))


def cluster_view(t):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{t.http_port}/v1/cluster", timeout=1) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def wait_role(t, role, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cluster_view(t)
        if v and v["role"] == role and (role != "leader" or v["serving"]) and (
                role != "follower" or v.get("leader")):
            return v
        time.sleep(0.05)
    raise AssertionError(f"never became {role}:\n{t.log_text()[-3000:]}")


def mysql_ticket(t):
    conn = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="ticket", password="ticket",
                           database="tickets", connect_timeout=2, read_timeout=2, autocommit=True)
    try:
        with conn.cursor() as c:
            c.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
            return c.lastrowid
    finally:
        conn.close()


def http_ticket(t):
    req = urllib.request.Request(f"http://127.0.0.1:{t.http_port}/v1/sequences/Tickets64/next",
                                 data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=2) as r:
        return int(json.loads(r.read())["ids"][0])


def expect_refused(etcd, acc, *fragments, make=instance):
    t = make(etcd, acc)
    try:
        t.start(wait=False)
        code = t.proc.wait(timeout=30)
        log = t.log_text()
        assert code == 1, f"ticketd exited {code}, not 1 (a runtime failure):\n{log}"
        for f in fragments:
            assert f in log, f"'{f}' not in:\n{log}"
        assert "ticketd-pw" not in log and "wrong-pw" not in log, "a password was logged"
        last = [line for line in log.splitlines() if line.strip()][-1]
        print(f"refused (exit {code}): {last[:300]}", flush=True)
    finally:
        t.cleanup()


def main():
    d = tempfile.mkdtemp(prefix="ticketd-secure-etcd-")
    etcd = None
    instances = []
    try:
        pki = Pki(d)
        etcd = SecureEtcd(pki, d).start()
        etcd.enable_auth()
        # The root user may write anywhere; ticketd's user only under its prefix.
        etcd.etcdctl("put", "/elsewhere/x", "1", user="root:rootpw")

        expect_refused(etcd, access(pki, ca=pki.other_ca), "storage:", "TLS",
                       "certificate verify failed", "ca_file")
        # etcd's certificate names 127.0.0.1 only: reached as localhost it is not etcd's.
        expect_refused(etcd, access(pki), "storage:", "TLS", "hostname mismatch",
                       make=lambda e, a: instance(e, a, host="localhost"))
        expect_refused(etcd, access(pki, cert=False), "storage:", "TLS", "client certificate")
        expect_refused(etcd, access(pki, password="wrong-pw"), "storage:",
                       "authentication failed", "etcd user 'ticketd'")
        expect_refused(etcd, access(pki, user="outsider", password="outsider-pw"), "storage:",
                       "permission denied", PREFIX)
        # Reading is not enough: the start-up probe's transaction needs write permission.
        expect_refused(etcd, access(pki, user="reader", password="reader-pw"), "storage:",
                       "permission denied", "/v3/kv/txn")
        # No credentials: etcd takes the user from the certificate's CommonName, which is empty.
        expect_refused(etcd, access(pki, user=None), "storage:", "permission denied", "username")

        a, b = instance(etcd, access(pki)), instance(etcd, access(pki))
        instances = [a, b]
        a.start()
        wait_role(a, "leader")
        b.start()
        wait_role(b, "follower")
        first = mysql_ticket(a)
        second = http_ticket(a)
        assert second > first, (first, second)
        keys = etcd.etcdctl("get", "--prefix", "--keys-only", PREFIX, user="root:rootpw")
        assert PREFIX + "leader" in keys, keys
        print(f"secured etcd: tickets {first}, {second} from the leader over MySQL and HTTP",
              flush=True)

        # The follower's watch runs over TLS with a token too: a clean stop hands over at once.
        stopped = time.time()
        a.proc.send_signal(signal.SIGTERM)
        wait_role(b, "leader", timeout=10)
        took = time.time() - stopped
        third = mysql_ticket(b)
        assert third > second, (second, third)
        assert took < 3, took  # the lease TTL: well below it when the watch saw the revoke
        print(f"hand-over after SIGTERM on secured etcd: {took:.2f} s", flush=True)
        a.proc.wait(timeout=30)

        # etcd forgets simple tokens when it restarts: the client authenticates again.
        etcd.kill()
        etcd.start()
        deadline = time.time() + 30
        fourth = None
        while time.time() < deadline and fourth is None:
            try:
                wait_role(b, "leader", timeout=5)
                fourth = mysql_ticket(b)
            except (AssertionError, pymysql.err.MySQLError):
                time.sleep(0.2)
        assert fourth is not None and fourth > third, b.log_text()[-3000:]
        print(f"after etcd restarted (tokens forgotten): ticket {fourth}", flush=True)
        for t in instances:
            assert "ticketd-pw" not in t.log_text(), "the password was logged"

        # snowflake.worker_id from the secured etcd takes the same keys.
        w = worker_instance(etcd, access(pki, indent="    "))
        instances.append(w)
        w.start()
        req = urllib.request.Request(f"http://127.0.0.1:{w.http_port}/v1/sequences/Flakes/next",
                                     data=b"{}", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=2) as r:
            flake = int(json.loads(r.read())["ids"][0])
        assert flake > 0, flake
        workers = etcd.etcdctl("get", "--prefix", "--keys-only", PREFIX + "workers/",
                               user="root:rootpw")
        assert PREFIX + "workers/0" in workers, workers
        print(f"snowflake worker ID leased from the secured etcd: ID {flake}", flush=True)
        expect_refused(etcd, access(pki, password="wrong-pw", indent="    "),
                       "snowflake.worker_id", "authentication failed", make=worker_instance)
    finally:
        for t in instances:
            t.cleanup()
        if etcd:
            etcd.kill()
        shutil.rmtree(d, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
