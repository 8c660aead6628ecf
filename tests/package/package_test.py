#!/usr/bin/python3
"""The Debian package end to end, as root (it fails otherwise): scripts/package builds the .deb
from this build directory; its control data (shlibdeps Depends, the conffile, maintainer
scripts) and lintian's findings (each one listed in docs/packaging.md) are checked; dpkg -i
installs it; the files, their owners and modes, the ticketd system user and the man page are
checked, and systemd-analyze verifies the installed unit; the untouched /etc/ticketd/ticketd.yaml
is refused with its file, line and key; after a password is set with `ticketd hash-password` the
installed binary runs as the ticketd user on that config (ports overridden to free ones), issues a
ticket over HTTP and MySQL and stops on SIGTERM; installing again keeps the edited config;
dpkg -r and dpkg --purge remove what they should.
The package, and a user and data dir the test created, are removed again even on failure."""
import gzip
import json
import os
import pwd
import grp
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

SOURCE = os.environ.get("TICKETD_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("TICKETD_BUILD_DIR", os.path.join(SOURCE, "build"))
CONFIG = "/etc/ticketd/ticketd.yaml"
UNIT = "/lib/systemd/system/ticketd.service"
DATA = "/var/lib/ticketd"
with open(os.path.join(SOURCE, "CMakeLists.txt")) as _f:
    VERSION = re.search(r"project\(ticketd VERSION (\S+)", _f.read()).group(1)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ticketd_process import free_port  # noqa: E402

import pymysql  # noqa: E402  (python3-pymysql, from scripts/setup)

ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                      text=True).stdout.strip()


def run(*args, check=True, **kw):
    r = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def dpkg(*args, check=True):
    """dpkg, waiting for its lock while another apt or dpkg run holds it."""
    deadline = time.time() + 300
    while True:
        r = run("dpkg", *args, check=False, stdin=subprocess.DEVNULL)  # a conffile prompt fails
        if "lock" not in r.stderr or time.time() > deadline:
            break
        time.sleep(2)
    if check and r.returncode != 0:
        raise AssertionError(f"dpkg {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def installed():
    r = run("dpkg-query", "-W", "-f=${Status}", "ticketd", check=False)
    return r.returncode == 0 and "not-installed" not in r.stdout


def as_ticketd(*args):
    """argv that runs args as the ticketd user and group (setpriv execs: the pid is ticketd's)."""
    return ["setpriv", "--reuid=ticketd", "--regid=ticketd", "--init-groups", "--"] + list(args)


def unit_nofile_limit():
    # What the unit's LimitNOFILE= gives the service (the default caps need 11256 descriptors).
    # A container without CAP_SYS_RESOURCE keeps its own hard limit; ticketd raises the soft one.
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (65536, 65536))
    except ValueError:
        pass


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # It installs a package: it needs root, and fails (never passes skipped) without it.
        assert os.geteuid() == 0, "the package test installs a package: run it as root"
        assert not installed(), "a ticketd package is already installed; not touching it"
        cls.had_user = subprocess.run(["getent", "passwd", "ticketd"],
                                      capture_output=True).returncode == 0
        cls.had_data = os.path.exists(DATA)
        out = run(os.path.join(SOURCE, "scripts", "package"), BUILD, cwd=SOURCE).stdout
        cls.deb = os.path.abspath(os.path.join(SOURCE, out.strip().splitlines()[-1]))

    @classmethod
    def tearDownClass(cls):
        # Restore the machine whatever happened above.
        if installed():
            dpkg("--purge", "ticketd", check=False)
        if not cls.had_data:
            shutil.rmtree(DATA, ignore_errors=True)
        if not cls.had_user:
            subprocess.run(["deluser", "--quiet", "--system", "ticketd"], capture_output=True)
            subprocess.run(["delgroup", "--quiet", "--system", "ticketd"], capture_output=True)

    def test_1_control_data(self):
        self.assertTrue(self.deb.endswith(f"/ticketd_{VERSION}_{ARCH}.deb"), self.deb)
        fields = run("dpkg-deb", "-f", self.deb).stdout
        self.assertIn("Package: ticketd\n", fields)
        self.assertIn(f"Architecture: {ARCH}\n", fields)
        depends = re.search(r"^Depends: (.*)$", fields, re.M).group(1)
        # dpkg-shlibdeps on the binary: libc, libstdc++, RocksDB, libsystemd, ... and adduser.
        for lib in ("libc6", "libstdc++6", "librocksdb", "libsystemd0", "libyaml-cpp", "libssl3",
                    "adduser"):
            self.assertIn(lib, depends)
        conffiles = run("dpkg-deb", "-I", self.deb, "conffiles").stdout
        self.assertEqual(conffiles.split(), [CONFIG])
        contents = run("dpkg-deb", "-c", self.deb).stdout
        for path in ("./usr/bin/ticketd", "." + CONFIG, "." + UNIT,
                     "./usr/share/man/man1/ticketd.1.gz", "./usr/share/doc/ticketd/copyright",
                     "./usr/share/doc/ticketd/changelog.gz"):
            self.assertIn(path, contents)
        for line in contents.splitlines():
            self.assertIn(" root/root ", line)  # owners are set by postinst, not the archive

    def test_2_lintian_findings_are_listed_in_the_docs(self):
        # scripts/setup installs lintian; its absence is a failure, not a reason to skip.
        self.assertIsNotNone(shutil.which("lintian"), "lintian is missing (scripts/setup)")
        r = run("lintian", "--no-tag-display-limit", "--display-info", self.deb, check=False)
        with open(os.path.join(SOURCE, "docs", "packaging.md")) as f:
            docs = f.read()
        tags = sorted({m.group(1) for m in re.finditer(r"^[EWIPX]: ticketd[^:]*: (\S+)",
                                                       r.stdout, re.M)})
        unlisted = [t for t in tags if f"`{t}`" not in docs]
        # lintian reads words out of the whole binary, machine code included, so a spelling
        # finding may be a few instruction bytes that spell a word ("@ ment"). Every one must
        # lie outside the binary's strings (.rodata): a typo in a message still fails here.
        rodata = self.rodata()
        for m in re.finditer(r"^\w: ticketd[^:]*: spelling-error-in-binary (\S+) (.+?) \[",
                             r.stdout, re.M):
            word = m.group(1).encode()
            self.assertIsNone(re.search(rb"(?<![A-Za-z])" + re.escape(word) + rb"(?![A-Za-z])",
                                        rodata),
                              f"a misspelt word in ticketd's strings: {m.group(0)}")
        self.assertEqual(unlisted, [], "lintian findings not listed in docs/packaging.md:\n" +
                         r.stdout)

    def rodata(self):
        """The read-only data (string literals) of the packaged binary."""
        with tempfile.TemporaryDirectory() as tmp:
            run("dpkg-deb", "-x", self.deb, tmp)
            out = os.path.join(tmp, "rodata")
            run("objcopy", "-O", "binary", "--only-section=.rodata",
                os.path.join(tmp, "usr", "bin", "ticketd"), out)
            with open(out, "rb") as f:
                return f.read()

    def test_3_install_run_remove(self):
        dpkg("-i", self.deb)
        self.assertTrue(installed())
        self.check_installed_files()
        self.check_unit()
        self.check_man_page_matches_help()
        self.check_shipped_config_is_refused()
        self.set_password("pkg-test-pw")
        self.run_installed_binary("pkg-test-pw")

        # Installing it again (an upgrade's path through postinst) keeps the edited config and
        # its owner and mode, without a conffile prompt.
        with open(CONFIG) as f:
            edited = f.read()
        dpkg("-i", self.deb)
        with open(CONFIG) as f:
            self.assertEqual(f.read(), edited)
        st = os.stat(CONFIG)
        self.assertEqual((grp.getgrgid(st.st_gid).gr_name, stat.S_IMODE(st.st_mode)),
                         ("ticketd", 0o640))

        dpkg("-r", "ticketd")
        status = run("dpkg-query", "-W", "-f=${Status}", "ticketd").stdout
        self.assertEqual(status, "deinstall ok config-files")
        for path in ("/usr/bin/ticketd", UNIT, "/usr/share/man/man1/ticketd.1.gz"):
            self.assertFalse(os.path.exists(path), path)
        self.assertTrue(os.path.exists(CONFIG), "dpkg -r keeps the conffile")

        dpkg("--purge", "ticketd")
        self.assertFalse(installed())
        self.assertFalse(os.path.exists(CONFIG))
        self.assertFalse(os.path.exists("/etc/ticketd"))
        # Purge keeps the counters (an empty data dir would issue every ID again) and the user.
        self.assertTrue(os.path.isdir(DATA))
        pwd.getpwnam("ticketd")

    def check_installed_files(self):
        st = os.stat("/usr/bin/ticketd")
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o755))
        user = pwd.getpwnam("ticketd")
        self.assertLess(user.pw_uid, 1000, "a system user")
        self.assertEqual(user.pw_shell, "/usr/sbin/nologin")
        self.assertEqual(user.pw_dir, DATA)
        self.assertEqual(grp.getgrgid(user.pw_gid).gr_name, "ticketd")
        st = os.stat(CONFIG)
        self.assertEqual((st.st_uid, grp.getgrgid(st.st_gid).gr_name, stat.S_IMODE(st.st_mode)),
                         (0, "ticketd", 0o640))
        st = os.stat(DATA)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (user.pw_uid, 0o750))
        conffiles = run("dpkg-query", "-W", "-f=${Conffiles}", "ticketd").stdout
        self.assertIn(CONFIG, conffiles)
        with open(CONFIG) as f:
            text = f.read()
        self.assertIn("data_dir: /var/lib/ticketd", text)
        self.assertIn("listen: 127.0.0.1:3306", text)
        self.assertIn("listen: 127.0.0.1:8080", text)
        self.assertIn("password_hash: CHANGE-ME", text)
        self.assertNotRegex(text, r"[{,]\s*password:")  # no password in clear

    def check_unit(self):
        with open(UNIT) as f:
            unit = f.read()
        for line in ("Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure",
                     "StateDirectory=ticketd", "User=ticketd", "NoNewPrivileges=yes",
                     "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes"):
            self.assertIn("\n" + line + "\n", unit)
        self.assertRegex(unit, r"\nRestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n")
        nofile = int(re.search(r"\nLimitNOFILE=(\d+)\n", unit).group(1))
        self.assertGreaterEqual(nofile, 10000 + 1000 + 256)  # max_connections of both + 256
        # scripts/setup installs systemd; it is part of the check, not optional.
        self.assertIsNotNone(shutil.which("systemd-analyze"), "systemd-analyze is missing")
        r = run("systemd-analyze", "verify", UNIT, check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("ticketd.service", r.stdout + r.stderr)
        # systemd's own rating of the sandbox, offline (no running manager needed): 0 is best,
        # 10 worst; the unit rates 1.4 ("OK"), a plain User= service about 9.
        r = run("systemd-analyze", "security", "--offline=true", "--no-pager", UNIT)
        exposure = float(re.search(r"Overall exposure level for ticketd\.service: ([\d.]+)",
                                   r.stdout).group(1))
        self.assertLessEqual(exposure, 2.0, r.stdout)

    def check_man_page_matches_help(self):
        with gzip.open("/usr/share/man/man1/ticketd.1.gz", "rt") as f:
            man = f.read().replace("\\-", "-")
        help_text = run("/usr/bin/ticketd", "--help").stdout
        for flag in sorted(set(re.findall(r"--[a-z][a-z-]*", help_text))):
            self.assertIn(flag, man)
        for command in ("verify", "backup", "restore", "import", "restride", "hash-password",
                        "hash-token"):
            self.assertIn(f"ticketd {command}", man)
        with open(os.path.join(SOURCE, "README.md")) as f:
            readme = f.read()
        block = readme.split("## Command line", 1)[1].split("```", 2)[1]
        for flag in sorted(set(re.findall(r"--[a-z][a-z-]*", block))):
            self.assertIn(flag, man)
        self.assertIn(f"ticketd {VERSION}", man)
        r = run("man", "--warnings", "-l", "/usr/share/man/man1/ticketd.1.gz", check=False,
                env=dict(os.environ, MANWIDTH="80", MAN_KEEP_STDERR="1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.strip(), "")

    def check_shipped_config_is_refused(self):
        r = run(*as_ticketd("/usr/bin/ticketd", "--config", CONFIG, "--mysql-listen",
                            f"127.0.0.1:{free_port()}", "--http-listen",
                            f"127.0.0.1:{free_port()}"), check=False)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertRegex(r.stderr, re.escape(CONFIG) + r":\d+: mysql\.users\[0\]\.password_hash: "
                         r"is the shipped placeholder: set a password for user 'ticket' "
                         r"\(`ticketd hash-password` prints the password_hash to put here\)")
        self.assertFalse(os.listdir(DATA), "nothing was opened")

    def set_password(self, password):
        out = run("/usr/bin/ticketd", "hash-password", input=password + "\n").stdout
        native = re.search(r"^mysql_native_password: (\*[0-9A-Fa-f]{40})$", out, re.M).group(1)
        # Edited in place, as an operator's editor would: owner and mode stay.
        with open(CONFIG, "r+") as f:
            text = f.read().replace("password_hash: CHANGE-ME", f"password_hash: '{native}'")
            f.seek(0)
            f.write(text)
            f.truncate()

    def run_installed_binary(self, password):
        mysql_port, http_port = free_port(), free_port()
        log_path = os.path.join(BUILD, "package-test-ticketd.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                as_ticketd("/usr/bin/ticketd", "--config", CONFIG,
                           "--mysql-listen", f"127.0.0.1:{mysql_port}",
                           "--http-listen", f"127.0.0.1:{http_port}"),
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=unit_nofile_limit)
        try:
            deadline = time.time() + 60
            while True:
                with open(log_path) as f:
                    text = f.read()
                if "ticketd ready" in text:
                    break
                self.assertIsNone(proc.poll(), text)
                self.assertLess(time.time(), deadline, text)
                time.sleep(0.05)
            self.assertNotIn("readable by", text)  # root:ticketd 0640 passes the check
            self.assertEqual(pwd.getpwuid(os.stat(f"/proc/{proc.pid}").st_uid).pw_name, "ticketd")
            req = urllib.request.Request(
                f"http://127.0.0.1:{http_port}/v1/sequences/Tickets64/next", data=b"",
                method="POST")
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(json.loads(r.read())["ids"], ["1"])
            # The Flickr recipe over MySQL, as the installed config's user.
            conn = pymysql.connect(host="127.0.0.1", port=mysql_port, user="ticket",
                                   password=password, database="tickets", autocommit=True)
            with conn.cursor() as cur:
                cur.execute("REPLACE INTO Tickets64 (stub) VALUES ('a')")
                self.assertEqual(cur.lastrowid, 2)
            conn.close()
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=60), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for name in os.listdir(DATA):
            self.assertEqual(pwd.getpwuid(os.stat(os.path.join(DATA, name)).st_uid).pw_name,
                             "ticketd", name)
        r = run(*as_ticketd("/usr/bin/ticketd", "verify", "--data-dir", DATA), check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
