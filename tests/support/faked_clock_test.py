#!/usr/bin/env python3
"""The faked clock's preload (faked_clock.py) keeps monotonic timers working: a CLOCK_MONOTONIC
timerfd armed "due now" (an absolute expiry of 1 ns, as asio's reactor arms it) fires, while the
faked wall clock runs 30 s ahead or at 1.5x. Without the shim, libfaketime alone breaks that
arm: the control case shows why the shim exists."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import faked_clock  # noqa: E402

BINARY = os.environ.get("TICKETD_BINARY", "build/ticketd")

# Run in a child under the preload: arms a CLOCK_MONOTONIC timerfd at absolute 1 ns and polls it
# for up to a second (poll, not time.sleep: libfaketime also rewrites Python's sleep). Prints
# "<settime's result> <errno> <fired>".
PROBE = r"""
import ctypes, select, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.timerfd_create(1, 0)  # CLOCK_MONOTONIC
spec = (ctypes.c_long * 4)(0, 0, 0, 1)  # it_interval 0; it_value = 1 ns, absolute
r = libc.timerfd_settime(fd, 1, spec, None)  # TFD_TIMER_ABSTIME
p = select.poll(); p.register(fd, select.POLLIN)
print(r, ctypes.get_errno(), int(bool(p.poll(1000))))
"""


def probe(preload, faketime):
    env = dict(os.environ, LD_PRELOAD=preload, FAKETIME=faketime,
               FAKETIME_DONT_FAKE_MONOTONIC="1")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=30, check=True).stdout.split()
    return int(out[0]), int(out[1]), out[2] == "1"


class FakedClockPreload(unittest.TestCase):
    CLOCKS = ("+30s", "+0 x1.5")

    def test_a_due_now_monotonic_timer_fires_under_the_faked_clock(self):
        preload = faked_clock.preload(BINARY)
        for clock in self.CLOCKS:
            with self.subTest(clock=clock):
                self.assertEqual(probe(preload, clock), (0, 0, True))

    def test_libfaketime_alone_loses_the_due_now_timer(self):
        faked_clock.preload(BINARY)  # the same library, checked to exist
        for clock in self.CLOCKS:
            with self.subTest(clock=clock):
                result, _, fired = probe(faked_clock.LIBFAKETIME, clock)
                self.assertFalse(result == 0 and fired,
                                 "libfaketime armed the timer: the shim may no longer be needed")


if __name__ == "__main__":
    unittest.main()
