"""The documentation stays true: README.md stays short, every relative link of README.md and
docs/**/*.md reaches a file (and every `#anchor` a heading of it), and every `ticketd` command
line in their fenced shell blocks names a subcommand and flags that `--help` prints.

Runs in the quick path (label unit, no install), beside app.usage, which checks the README's
"Command line" block against the man page and --help in both directions.
"""
import glob
import os
import re
import subprocess
import unittest

BINARY = os.environ["TICKETD_BINARY"]
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
README_MAX_LINES = 250
FLAG = r"(?<![\w-])--[a-z][a-z-]*"
# Fenced blocks whose lines may be commands: no info string, or a shell. `text`, `yaml`, `sql`,
# `json` ... blocks are output or data, never command lines.
SHELL_INFO = {"", "sh", "bash", "shell", "console", "shell-session", "sh-session"}
# A subcommand that has its own `ticketd NAME --help`; every other one is in `ticketd --help`.
OWN_HELP = ("import", "restride", "plan")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target), the text possibly over several lines; "title" allowed.
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^()<>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)


def help_of(*args):
    r = subprocess.run([BINARY, *args, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"ticketd {' '.join(args)} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


def markdown_files():
    """README.md and every docs/**/*.md, as paths relative to SOURCE."""
    files = ["README.md"]
    files += sorted(os.path.relpath(p, SOURCE)
                    for p in glob.glob(os.path.join(SOURCE, "docs", "**", "*.md"), recursive=True))
    return files


def read(relpath):
    with open(os.path.join(SOURCE, relpath), encoding="utf-8") as f:
        return f.read()


def split_fences(text):
    """(prose, blocks): prose is the text with every fenced block's lines blanked (line numbers
    kept); blocks are (info string, first line number, [lines]) of each fenced block."""
    prose, blocks, block = [], [], None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if block is None and m:
            block = (m.group(1), m.group(2).lower(), number + 1, [])
            prose.append("")
        elif block is not None:
            if m and m.group(1)[0] == block[0][0] and len(m.group(1)) >= len(block[0]) \
                    and not m.group(2):
                blocks.append(block[1:])
                block = None
            else:
                block[3].append(line)
            prose.append("")
        else:
            prose.append(line)
    if block is not None:  # an unclosed fence runs to the end of the file
        blocks.append(block[1:])
    return "\n".join(prose), blocks


def blank_code_spans(prose):
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose)


def anchor(heading):
    """GitHub's anchor of a heading: its text without markup, lowercased, every character but
    letters, digits, spaces, '-' and '_' dropped, spaces turned into '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)                        # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(relpath):
    """Every anchor the headings of a Markdown file give, duplicates numbered as GitHub does."""
    prose, _ = split_fences(read(relpath))
    seen, result = {}, set()
    for line in prose.split("\n"):
        m = HEADING.match(line)
        if not m:
            continue
        base = anchor(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def links_of(relpath):
    """(line number, target) of every link and image of a Markdown file, outside code."""
    prose, _ = split_fences(read(relpath))
    prose = blank_code_spans(prose)
    found = []
    for pattern, group in ((LINK, 2), (REFERENCE, 1)):
        for m in pattern.finditer(prose):
            found.append((prose.count("\n", 0, m.start()) + 1, m.group(group)))
    return sorted(found)


def is_relative(target):
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith("//")


def command_lines(relpath):
    """(line number, command) of every line of a fenced shell block that runs ticketd: it starts
    with `ticketd ` after an optional `$ ` or `sudo `; `\\` continuation lines are joined and a
    trailing `# comment` is dropped."""
    _, blocks = split_fences(read(relpath))
    result = []
    for info, first, lines in blocks:
        if info not in SHELL_INFO:
            continue
        i = 0
        while i < len(lines):
            number, line = first + i, lines[i].strip()
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            line = re.sub(r"^(\$ |sudo )", "", line)
            if line.startswith("ticketd "):
                result.append((number, re.sub(r"(^|\s)#.*$", "", line).strip()))
    return result


class Docs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = markdown_files()
        cls.help = help_of()
        usage = cls.help.split("\n\n", 1)[0]
        # The subcommands of the usage lines: "ticketd NAME" and the alternatives "| NAME".
        cls.subcommands = set(re.findall(r"ticketd ([a-z][a-z-]*)", usage))
        cls.subcommands |= set(re.findall(r"\| ([a-z][a-z-]*)", usage))
        cls.flags = {None: set(re.findall(FLAG, cls.help))}
        for command in OWN_HELP:
            cls.flags[command] = set(re.findall(FLAG, help_of(command)))

    def test_the_help_lists_the_subcommands_this_test_knows(self):
        for command in ("verify", "backup", "restore", "hash-password", "hash-token", *OWN_HELP):
            self.assertIn(command, self.subcommands)
        self.assertIn("--config", self.flags[None])

    def test_the_readme_is_short(self):
        with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        self.assertLessEqual(lines, README_MAX_LINES,
                             f"README.md has {lines} lines; move detail into docs/")

    def test_every_relative_link_reaches_a_file_and_its_heading(self):
        for relpath in self.files:
            for number, target in links_of(relpath):
                if not is_relative(target):
                    continue
                with self.subTest(file=relpath, line=number, link=target):
                    path, _, fragment = target.partition("#")
                    if path:
                        resolved = os.path.normpath(
                            os.path.join(SOURCE, os.path.dirname(relpath), path))
                        self.assertTrue(os.path.isfile(resolved),
                                        f"{relpath}:{number}: {target} is not a file")
                        target_file = os.path.relpath(resolved, SOURCE)
                    else:
                        target_file = relpath
                    if fragment:
                        self.assertTrue(target_file.endswith(".md"),
                                        f"{relpath}:{number}: #{fragment} of a non-Markdown file")
                        self.assertIn(fragment, anchors_of(target_file),
                                      f"{relpath}:{number}: {target_file} has no heading "
                                      f"#{fragment}")

    def test_every_command_line_uses_a_known_subcommand_and_its_flags(self):
        checked = 0
        for relpath in self.files:
            for number, line in command_lines(relpath):
                checked += 1
                words = line.split()
                command = words[1] if len(words) > 1 and not words[1].startswith("-") else None
                with self.subTest(file=relpath, line=number, command=line):
                    if command is not None:
                        self.assertIn(command, self.subcommands,
                                      f"{relpath}:{number}: `ticketd {command}` is not a "
                                      f"subcommand of `ticketd --help`")
                    known = self.flags[command if command in OWN_HELP else None]
                    where = f"ticketd {command} --help" if command in OWN_HELP else "ticketd --help"
                    for flag in re.findall(FLAG, line):
                        self.assertIn(flag, known,
                                      f"{relpath}:{number}: {flag} is not in `{where}`")
        # The README's Command line block alone has nine.
        self.assertGreaterEqual(checked, 9)


if __name__ == "__main__":
    unittest.main(verbosity=2)
