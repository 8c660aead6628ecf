// Preloaded ahead of libfaketime into a ticketd under test (tests/support/faked_clock.py):
// monotonic timers stay with the kernel, only the wall clock is faked.
//
// libfaketime (0.9.10, Debian's) rewrites the expiry given to timerfd_settime as if it were a
// faked wall-clock time, even for a CLOCK_MONOTONIC timer under FAKETIME_DONT_FAKE_MONOTONIC.
// An absolute expiry then fails with EINVAL while the faked clock is ahead of real time, and
// lands some 28 years away while a rate is set. Asio's reactor arms its CLOCK_MONOTONIC
// timerfd with the absolute time 1 ns to say "a timer is due now": under libfaketime that arm
// fails, the timerfd never fires again, and every asio timer of the process stops (seen as a
// gapless reservation that never expired in nemesis.rocksdb, after a clock step forward).
// ticketd reads the wall clock only through its Clock, which is what the tests mean to fake.
//
// Timerfds on any other clock still go to libfaketime (the next definition in the lookup
// order), so that a faked CLOCK_REALTIME timer keeps its faked meaning.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <ctime>

namespace {

// Which descriptors were created as CLOCK_MONOTONIC timerfds. A descriptor number is reused
// after a close, and every timerfd comes from timerfd_create, which sets its entry again.
constexpr int kMaxFd = 1 << 16;
std::array<std::atomic<bool>, kMaxFd> monotonic_fd{};

bool is_monotonic(int fd) {
  return fd >= 0 && fd < kMaxFd && monotonic_fd[static_cast<std::size_t>(fd)].load();
}

template <typename F>
F next_definition(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int timerfd_create(int clockid, int flags) {
  static const auto real = next_definition<int (*)(int, int)>("timerfd_create");
  const int fd = real(clockid, flags);
  if (fd >= 0 && fd < kMaxFd) {
    monotonic_fd[static_cast<std::size_t>(fd)].store(clockid == CLOCK_MONOTONIC);
  }
  return fd;
}

int timerfd_settime(int fd, int flags, const itimerspec* new_value, itimerspec* old_value) {
  if (is_monotonic(fd)) {
    return static_cast<int>(syscall(SYS_timerfd_settime, fd, flags, new_value, old_value));
  }
  static const auto faked =
      next_definition<int (*)(int, int, const itimerspec*, itimerspec*)>("timerfd_settime");
  return faked(fd, flags, new_value, old_value);
}

int timerfd_gettime(int fd, itimerspec* curr_value) {
  if (is_monotonic(fd)) return static_cast<int>(syscall(SYS_timerfd_gettime, fd, curr_value));
  static const auto faked = next_definition<int (*)(int, itimerspec*)>("timerfd_gettime");
  return faked(fd, curr_value);
}

}  // extern "C"
