"""The faked wall clock of a ticketd under test: Debian's libfaketime, preloaded behind
libfaketime_timerfd.so (tests/support/faketime_timerfd.cpp), which keeps the process'
monotonic timers with the kernel. libfaketime alone breaks asio's timers whenever the faked
clock runs ahead or at a rate (the shim's comment says how), so every test that fakes the clock
builds its LD_PRELOAD here.

    env = {"LD_PRELOAD": faked_clock.preload(BINARY), "FAKETIME": "+31d", ...}

The shim is built with ticketd and lies next to it (tests/CMakeLists.txt). A missing library
fails the test: scripts/setup installs faketime, and the build makes the shim."""
import os

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
# The variant for processes whose threads read the clock at once (libfaketime's own locking).
LIBFAKETIME_MT = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
SHIM = "libfaketime_timerfd.so"


def shim_path(binary):
    """Where the build puts the shim: next to the ticketd binary it was built with."""
    return os.path.join(os.path.dirname(os.path.abspath(binary)), SHIM)


def preload(binary, library=LIBFAKETIME):
    """The LD_PRELOAD value for `binary` under libfaketime's `library`: the shim first."""
    shim = shim_path(binary)
    if not os.path.exists(library):
        raise AssertionError(f"{library} is missing: scripts/setup installs faketime")
    if not os.path.exists(shim):
        raise AssertionError(f"{shim} is missing: it is built with ticketd (tests/CMakeLists.txt)")
    return f"{shim} {library}"
