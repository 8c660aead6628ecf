#!/usr/bin/env python3
"""The ticketd binary: command line, config errors, exposure refusal, data-dir lock, SIGTERM."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ticketd_process import BINARY, Ticketd  # noqa: E402


def run(args, timeout=30):
    return subprocess.run([BINARY] + args, capture_output=True, text=True, timeout=timeout)


class CommandLine(unittest.TestCase):
    def test_help_and_version(self):
        r = run(["--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--config FILE", r.stdout)
        r = run(["--version"])
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^ticketd \d+\.\d+\.\d+")

    def test_missing_config_flag_and_unknown_flag(self):
        r = run([])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--config FILE is required", r.stderr)
        r = run(["--config", "x.yaml", "--bogus"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown argument '--bogus'", r.stderr)

    def test_config_errors_name_key_and_line(self):
        t = Ticketd(config="data_dir: {data_dir}\nsequences:\n  - {{ name: A, increment: 2, offset: 3 }}\n"
                           "  - {{ name: A }}\nhttpp: 1\n")
        try:
            r = run(["--config", t.config_path])
            self.assertEqual(r.returncode, 2)
            self.assertIn(":3: sequences[0].offset: offset 3 is greater than increment 2", r.stderr)
            self.assertIn(":4: sequences[1].name: duplicate sequence name 'A'", r.stderr)
            self.assertIn(":5: httpp: unknown key", r.stderr)
        finally:
            t.cleanup()

    def _run_in_scratch_dir(self, args):
        """Runs the binary in an empty working directory, so a regression (serving on defaults)
        would neither touch ./data of the checkout nor hang the test: it must exit at once."""
        cwd = tempfile.mkdtemp(prefix="ticketd-cwd-")
        try:
            try:
                r = subprocess.run([os.path.abspath(BINARY)] + args, capture_output=True, text=True,
                                   timeout=10,
                                   cwd=cwd)
            except subprocess.TimeoutExpired:
                self.fail(f"ticketd {args} started a server instead of exiting")
            self.assertEqual(os.listdir(cwd), [], "no data dir may be created")
            return r
        finally:
            shutil.rmtree(cwd, ignore_errors=True)

    def test_empty_null_or_directory_config_is_refused(self):
        d = tempfile.mkdtemp(prefix="ticketd-cfg-")
        try:
            for name, text in [("empty", ""), ("tilde", "~\n"), ("comments", "# truncated\n"),
                               ("doc", "---\n")]:
                path = os.path.join(d, name + ".yaml")
                with open(path, "w") as f:
                    f.write(text)
                r = self._run_in_scratch_dir(["--config", path])
                self.assertEqual(r.returncode, 2, (name, r.stderr))
                self.assertIn("the config is empty", r.stderr, name)
                self.assertIn("refusing to start on defaults", r.stderr, name)
            r = self._run_in_scratch_dir(["--config", d])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(d + ": cannot read the config file: it is a directory", r.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_duplicate_keys_are_refused_naming_both_lines(self):
        t = Ticketd(config="data_dir: {data_dir}\nmysql:\n  listen: 127.0.0.1:{mysql_port}\n"
                           "  listen: 0.0.0.0:{mysql_port}\nhttp:\n  listen: 127.0.0.1:{http_port}\n"
                           "sequences:\n  - {{ name: A, start: 5, start: 7 }}\n"
                           "data_dir: /somewhere/else\n")
        try:
            r = self._run_in_scratch_dir(["--config", t.config_path])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(":4: mysql.listen: duplicate key 'listen' (first given on line 3, "
                          "again on line 4)", r.stderr)
            self.assertIn(":8: sequences[0].start: duplicate key 'start'", r.stderr)
            self.assertIn(":9: data_dir: duplicate key 'data_dir' (first given on line 1, "
                          "again on line 9)", r.stderr)
        finally:
            t.cleanup()

    def test_config_sequence_names_follow_the_name_rule(self):
        for bad in ["'two words'", "'..'", "'.'", "'a/b'", "\"tab\\there\""]:
            t = Ticketd(config="data_dir: {data_dir}\nmysql:\n  listen: 127.0.0.1:{mysql_port}\n"
                               "http:\n  listen: 127.0.0.1:{http_port}\n"
                               "sequences:\n  - {{ name: " + bad + " }}\n")
            try:
                r = self._run_in_scratch_dir(["--config", t.config_path])
                self.assertEqual(r.returncode, 2, (bad, r.stderr))
                self.assertIn(":7: sequences[0].name: not a valid name", r.stderr, bad)
            finally:
                t.cleanup()

    def test_refuses_default_password_off_loopback(self):
        t = Ticketd()
        try:
            r = run(["--config", t.config_path, "--mysql-listen", "0.0.0.0:3306"])
            self.assertEqual(r.returncode, 2)
            self.assertIn("refusing to start", r.stderr)
            self.assertIn("default or an empty password", r.stderr)
            self.assertNotIn("s3cret-app", r.stderr)  # never print secrets
            r = run(["--config", t.config_path, "--http-listen", "0.0.0.0:8080"])
            self.assertEqual(r.returncode, 2)
            self.assertIn("http.tokens is empty", r.stderr)
        finally:
            t.cleanup()


class Lifecycle(unittest.TestCase):
    def test_second_process_on_same_data_dir_is_refused(self):
        a = Ticketd().start()
        b = Ticketd(data_dir=a.data_dir)
        try:
            b.start(wait=False)
            code = b.proc.wait(30)
            self.assertNotEqual(code, 0)
            self.assertIn("is in use by another ticketd (pid %d)" % a.proc.pid, b.log_text())
            self.assertIsNone(a.proc.poll(), "the first ticketd must keep running")
        finally:
            b.cleanup()
            a.cleanup()

    def test_sigterm_exits_zero_and_restart_works(self):
        a = Ticketd().start()
        try:
            self.assertEqual(a.stop(), 0)
            self.assertIn("ticketd stopped", a.log_text())
            b = Ticketd(data_dir=a.data_dir).start()  # the lock was released
            self.assertEqual(b.stop(), 0)
            b.cleanup()
        finally:
            a.cleanup()

    def test_kill9_leaves_no_stale_lock(self):
        a = Ticketd().start()
        try:
            a.kill9()
            b = Ticketd(data_dir=a.data_dir).start()
            self.assertEqual(b.stop(), 0)
            b.cleanup()
        finally:
            a.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
