"""Starts a real single-member etcd (Debian's etcd-server) on loopback for tests: free ports,
temporary data dir, killed and removed at the end. Also a tiny v3 JSON-gateway reader."""
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from ticketd_process import free_port

ETCD_BINARY = os.environ.get("ETCD_BINARY", "/usr/bin/etcd")


class Etcd:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ticketd-etcd-")
        self.client_port = free_port()
        self.peer_port = free_port()
        self.proc = None
        self.log = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.client_port}"

    def start(self, timeout=30):
        client = self.endpoint
        peer = f"http://127.0.0.1:{self.peer_port}"
        self.log = open(os.path.join(self.dir, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            [ETCD_BINARY, "--name=test", f"--data-dir={self.dir}/data",
             f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
             f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
             f"--initial-cluster=test={peer}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                self.range("/ready-probe")
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("etcd did not become ready")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        if self.log:
            self.log.close()
            self.log = None

    def cleanup(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _post(self, path, body):
        req = urllib.request.Request(self.endpoint + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=2) as r:
            return json.loads(r.read())

    def range(self, key, prefix=False):
        """{key: (value, lease)} of one key, or of every key under a prefix."""
        body = {"key": base64.b64encode(key.encode()).decode()}
        if prefix:
            end = key[:-1] + chr(ord(key[-1]) + 1)
            body["range_end"] = base64.b64encode(end.encode()).decode()
        out = {}
        for kv in self._post("/v3/kv/range", body).get("kvs", []):
            out[base64.b64decode(kv["key"]).decode()] = (
                base64.b64decode(kv.get("value", "")).decode(), int(kv.get("lease", "0")))
        return out
