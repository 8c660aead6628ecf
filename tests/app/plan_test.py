"""docs/capacity.md's worked examples are what `ticketd plan` prints.

Each example is a ```sh block holding one `ticketd plan ...` line, followed by a ```text block:
the command runs and its output must equal the block byte for byte, with exit status 1 when the
last line is `fits: no: ...` and 0 otherwise. A ```sh block that runs `ticketd plan` without
such an output block fails, so that an example cannot drop out of the check unnoticed. Then the
command's own refusals: exit 2, the reason on stderr, nothing on stdout.

Runs in the quick path (label unit): no daemon, no store, no network.
"""
import os
import re
import shlex
import subprocess
import unittest

BINARY = os.environ["TICKETD_BINARY"]
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(SOURCE, "docs", "capacity.md")
# At least this many examples: the doc has one per formula group and layout.
MIN_EXAMPLES = 12
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```\n", re.M | re.S)
EXAMPLE = re.compile(r"^```sh\n(ticketd plan [^\n]*)\n```\n(?:[ \t]*\n)?```text\n(.*?)^```$",
                     re.M | re.S)


def run(*words):
    return subprocess.run([BINARY, *words], capture_output=True, text=True, timeout=30)


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


class Examples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOC, encoding="utf-8") as f:
            cls.text = f.read()
        cls.examples = [(line_of(cls.text, m.start()), m.group(1), m.group(2))
                        for m in EXAMPLE.finditer(cls.text)]

    def test_there_are_examples(self):
        self.assertGreaterEqual(len(self.examples), MIN_EXAMPLES)

    def test_every_plan_block_is_followed_by_its_output(self):
        with_output = {line for line, _, _ in self.examples}
        for m in SH_BLOCK.finditer(self.text):
            if "ticketd plan" not in m.group(1):
                continue
            line = line_of(self.text, m.start())
            with self.subTest(line=line):
                self.assertIn(line, with_output,
                              f"docs/capacity.md:{line}: a `ticketd plan` block must hold one "
                              "command line and be followed by a ```text block of its output")

    def test_every_example_prints_exactly_its_output(self):
        for line, command, expected in self.examples:
            with self.subTest(line=line, command=command):
                words = shlex.split(command)
                self.assertEqual(words[:2], ["ticketd", "plan"])
                r = run(*words[1:])
                self.assertEqual(r.stderr, "")
                self.assertEqual(r.stdout, expected,
                                 f"docs/capacity.md:{line}: `{command}` now prints:\n{r.stdout}")
                last = expected.rstrip("\n").split("\n")[-1]
                self.assertEqual(r.returncode, 1 if last.startswith("fits: no") else 0)

    def test_the_figures_example_lists_every_figure(self):
        r = run("plan", "--figures")
        self.assertEqual(r.returncode, 0)
        self.assertIn(r.stdout, [expected for _, _, expected in self.examples])


class Refusals(unittest.TestCase):
    def refused(self, words, why):
        r = run("plan", *words)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr, f"ticketd plan: {why} (see ticketd plan --help)\n")

    def test_help_exits_zero(self):
        r = run("plan", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith("usage: ticketd plan --kind KIND"), r.stdout)

    def test_a_kind_is_required_and_named_from_the_kind_rows(self):
        self.refused([], "--kind is required (ticket, gapless, snowflake, uuidv7 or ulid)")
        self.refused(["--kind", "hilo"],
                     "--kind must be ticket, gapless, snowflake, uuidv7 or ulid, not 'hilo'")

    def test_zero_and_absurd_targets_are_refused(self):
        self.refused(["--kind", "ticket", "--ids-per-second", "0"],
                     "--ids-per-second must be 1..1000000000000")
        self.refused(["--kind", "ticket", "--ids-per-second", "1000000000001"],
                     "--ids-per-second must be 1..1000000000000")
        self.refused(["--kind", "ticket", "--ids-per-second", "18446744073709551616"],
                     "--ids-per-second takes a whole number (64 bits), not "
                     "'18446744073709551616'")
        self.refused(["--kind", "snowflake", "--years", "0"], "--years must be 1..1000000")

    def test_a_setting_the_kind_does_not_read_is_refused_by_name(self):
        self.refused(["--kind", "snowflake", "--cache", "1"], "--cache is not used by kind snowflake")
        self.refused(["--kind", "ticket", "--time-bits", "40"],
                     "--time-bits is not used by kind ticket")

    def test_an_invalid_layout_is_refused_as_the_server_refuses_it(self):
        self.refused(["--kind", "snowflake", "--worker-bits", "12"],
                     "snowflake layout: time_bits + worker_bits + sequence_bits is 65; it must be "
                     "63 (the sign bit stays 0)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
