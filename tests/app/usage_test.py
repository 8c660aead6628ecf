"""The man page (packaging/ticketd.1), `ticketd --help`, every subcommand's own --help and the
README's "Command line" block name the same commands and flags.

Runs in the quick path (label unit, no install): package.deb checks the installed page again, but
only as root in the full suite, which is where a command added without its man page entry used to
be caught first.
"""
import os
import re
import subprocess
import unittest

BINARY = os.environ["TICKETD_BINARY"]
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FLAG = r"--[a-z][a-z-]*"


def help_of(*args):
    r = subprocess.run([BINARY, *args, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"ticketd {' '.join(args)} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


class Usage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(SOURCE, "packaging", "ticketd.1")) as f:
            cls.man = f.read().replace("\\-", "-")
        with open(os.path.join(SOURCE, "README.md")) as f:
            readme = f.read()
        cls.readme_block = readme.split("## Command line", 1)[1].split("```", 2)[1]
        cls.help = help_of()
        # "ticketd NAME" in the usage lines, without the top-level flags.
        cls.commands = sorted({c for c in re.findall(r"ticketd ([a-z][a-z-]+)", cls.help)})
        # A subcommand whose own usage is only in `ticketd NAME --help` says so: "(NAME --help)".
        cls.own_help = sorted(set(re.findall(r"\(([a-z-]+) --help\)", cls.help)))

    def test_commands_are_known(self):
        for command in ("verify", "backup", "restore", "import", "restride", "plan",
                        "hash-password", "hash-token"):
            self.assertIn(command, self.help)
        self.assertEqual(self.own_help, ["import", "plan", "restride"])

    def test_every_command_is_in_the_man_page_and_readme(self):
        for command in self.commands:
            with self.subTest(command=command):
                self.assertRegex(self.man, rf"\.B ticketd {re.escape(command)}\b")
                self.assertRegex(self.man, rf"\n\.B {re.escape(command)}\n")
                self.assertIn(f"ticketd {command}", self.readme_block)

    def test_every_flag_of_every_help_is_in_the_man_page_and_readme(self):
        texts = {"ticketd --help": self.help}
        for command in self.own_help:
            texts[f"ticketd {command} --help"] = help_of(command)
        for where, text in texts.items():
            for flag in sorted(set(re.findall(FLAG, text))):
                with self.subTest(where=where, flag=flag):
                    self.assertIn(flag, self.man)
                    self.assertIn(flag, self.readme_block)

    def test_the_man_page_names_no_flag_ticketd_does_not_take(self):
        known = set(re.findall(FLAG, self.help))
        for command in self.own_help:
            known |= set(re.findall(FLAG, help_of(command)))
        for flag in sorted(set(re.findall(FLAG, self.man)) | set(re.findall(FLAG, self.readme_block))):
            with self.subTest(flag=flag):
                self.assertIn(flag, known)


if __name__ == "__main__":
    unittest.main(verbosity=2)
