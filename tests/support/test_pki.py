"""A throw-away PKI for TLS tests, made with the openssl CLI: a CA, a server certificate for
127.0.0.1/localhost, a client certificate, and an unrelated CA that must not be trusted.
Certificates carry no CommonName where etcd's gateway would object; SANs name the server."""
import os
import subprocess
import tempfile


def _run(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class TestPki:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ticketd-pki-")
        d = self.dir
        for ca in ("ca", "other-ca"):
            _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                 "-keyout", f"{ca}-key.pem", "-out", f"{ca}.pem", "-subj", f"/O=ticketd test {ca}",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
        self._leaf("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                             "extendedKeyUsage=serverAuth\n")
        self._leaf("client", "extendedKeyUsage=clientAuth\n")
        self.ca = os.path.join(d, "ca.pem")
        self.other_ca = os.path.join(d, "other-ca.pem")
        self.server_cert = os.path.join(d, "server.pem")
        self.server_key = os.path.join(d, "server-key.pem")
        self.client_cert = os.path.join(d, "client.pem")
        self.client_key = os.path.join(d, "client-key.pem")

    def _leaf(self, name, extensions):
        d = self.dir
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(extensions)
        _run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}-key.pem",
             "-out", f"{name}.csr", "-subj", f"/O=ticketd test {name}", cwd=d)
        _run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
             "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext",
             cwd=d)
