"""A real three-member etcd cluster (Debian's etcd-server) on loopback for tests: free ports,
temporary data dirs, each member killable and restartable, all killed and removed at the end."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from ticketd_process import free_port

ETCD_BINARY = os.environ.get("ETCD_BINARY", "/usr/bin/etcd")


def member_argv(name, data_dir, client_url, peer_url, initial_cluster, state="new"):
    """The command line of one member of a test cluster (here and in tests/nemesis)."""
    return [ETCD_BINARY, f"--name={name}", f"--data-dir={data_dir}",
            f"--listen-client-urls={client_url}", f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster={initial_cluster}", f"--initial-cluster-state={state}",
            "--initial-cluster-token=ticketd-test", "--max-txn-ops=1024"]


class EtcdCluster:
    def __init__(self, members=3):
        self.dir = tempfile.mkdtemp(prefix="ticketd-etcd-cluster-")
        self.names = [f"m{i}" for i in range(members)]
        self.client_ports = [free_port() for _ in self.names]
        self.peer_ports = [free_port() for _ in self.names]
        self.procs = [None] * members
        self.logs = [None] * members

    @property
    def endpoints(self):
        return [f"http://127.0.0.1:{p}" for p in self.client_ports]

    def _initial_cluster(self):
        return ",".join(f"{n}=http://127.0.0.1:{p}" for n, p in zip(self.names, self.peer_ports))

    def start_member(self, i):
        client = self.endpoints[i]
        peer = f"http://127.0.0.1:{self.peer_ports[i]}"
        self.logs[i] = open(os.path.join(self.dir, f"{self.names[i]}.log"), "ab")
        self.procs[i] = subprocess.Popen(
            member_argv(self.names[i], f"{self.dir}/{self.names[i]}", client, peer,
                        self._initial_cluster()),
            stdout=self.logs[i], stderr=subprocess.STDOUT)

    def start(self, timeout=60):
        for i in range(len(self.names)):
            self.start_member(i)
        self.wait_healthy(timeout)
        return self

    def healthy(self, i):
        try:
            with urllib.request.urlopen(self.endpoints[i] + "/health", timeout=1) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def wait_healthy(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(self.healthy(i) for i in range(len(self.names)) if self.alive(i)):
                return
            time.sleep(0.1)
        raise RuntimeError("etcd cluster did not become healthy")

    def alive(self, i):
        return self.procs[i] is not None and self.procs[i].poll() is None

    def kill_member(self, i):
        if self.alive(i):
            self.procs[i].send_signal(signal.SIGKILL)
            self.procs[i].wait()
        if self.logs[i]:
            self.logs[i].close()
            self.logs[i] = None

    def cleanup(self):
        for i in range(len(self.names)):
            self.kill_member(i)
        shutil.rmtree(self.dir, ignore_errors=True)
