#!/usr/bin/env python3
"""kill -9 the engine at random moments, restart it on the same data dir, and check that no value
it ever reported is reported again and that each sequence strictly increases across all runs.

usage: crash_test.py CRASH_CHILD [ROUNDS]
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time


def main():
    child = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    rng = random.Random()
    # Strictly increasing per sequence across every run implies no value is reported twice;
    # checking the order is enough and keeps memory flat over millions of values.
    counts = {}  # sequence -> values reported
    last = {}  # sequence -> last value reported
    total = 0
    with tempfile.TemporaryDirectory(prefix="ticketd-crash-") as data:
        for r in range(rounds):
            with tempfile.TemporaryFile() as out:
                p = subprocess.Popen([child, data], stdout=out, stderr=subprocess.PIPE)
                time.sleep(rng.uniform(0.05, 0.5))
                p.send_signal(signal.SIGKILL)
                _, err = p.communicate()
                if p.returncode != -signal.SIGKILL:
                    sys.exit(f"round {r}: child exited by itself ({p.returncode}): {err.decode()}")
                out.seek(0)
                text = out.read().decode()
            lines = text.split("\n")
            lines.pop()  # the last piece is empty or a line cut by the kill: not reported
            got = 0
            for line in lines:
                name, first, step, count = line.split()
                first, step, count = int(first), int(step), int(count)
                if count < 1 or step < 1:
                    sys.exit(f"round {r}: malformed block {line!r}")
                if first <= last.get(name, 0):
                    sys.exit(f"round {r}: {name} reported {first} after {last[name]}: "
                             "a repeat or a step backwards")
                last[name] = first + (count - 1) * step
                counts[name] = counts.get(name, 0) + count
                got += count
            total += got
            if r % 10 == 0:
                print(f"round {r}: {got} values, {len(lines)} calls", flush=True)
    for name, n in sorted(counts.items()):
        print(f"{name}: {n} distinct values, last {last[name]}")
    if total == 0 or len(counts) < 3:
        sys.exit("the child reported too little to prove anything")
    print(f"OK: {rounds} kill -9 rounds, {total} values, no repeats, strictly increasing")


if __name__ == "__main__":
    main()
