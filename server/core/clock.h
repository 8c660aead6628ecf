// The engine's only source of time.
#pragma once

#include <chrono>
#include <cstdint>

// format_utc_ms() lives in base; whoever prints a Clock reading finds it here too.
#include "server/base/utc_time.h"

namespace ticketd {

/// Told when a clock that moves only when told (a test's FakeClock) has been stepped: timer
/// services (TimerQueue) implement it to fire what the step made due. Not owned by the
/// clock; it unregisters itself before it is destroyed.
class ClockStepObserver {
 public:
  /// Called on the thread that stepped the clock, after the new reading is visible.
  virtual void on_clock_step() = 0;

 protected:
  ~ClockStepObserver() = default;
};

/// Wall-clock milliseconds since the Unix epoch. Injected everywhere time matters so tests can
/// step it; nothing outside SystemClock reads the system clock. Timers that wait for a reading
/// (TimerQueue) take their time from a Clock too: a clock that runs by itself (SystemClock)
/// keeps the defaults below and its timers wait out real time on the monotonic clock; a clock
/// that moves only when told registers observers and calls them after each step, so a test
/// steps the timers with the clock. Thread safety: implementations must allow concurrent
/// calls.
class Clock {
 public:
  virtual ~Clock() = default;
  [[nodiscard]] virtual std::int64_t now_unix_ms() const = 0;
  /// Milliseconds on a clock that only moves forward at the rate of real time, from an arbitrary
  /// origin: what a deadline inside this process is judged by, so that a wall clock stepped
  /// forward (NTP, an operator) cannot end a lease early. Not comparable across processes.
  [[nodiscard]] virtual std::int64_t monotonic_ms() const = 0;

  /// Registers `observer` to be called after every step and returns true, when the clock moves
  /// only when told; returns false (and keeps nothing) when it runs by itself.
  virtual bool observe_steps(ClockStepObserver& observer) const {
    (void)observer;  // a clock that runs by itself has no steps to report
    return false;
  }
  /// Undoes observe_steps(): once it returns, `observer` is not being called (except by the
  /// caller's own step, when a step's callback unregisters) and is never called again.
  virtual void unobserve_steps(ClockStepObserver& observer) const { (void)observer; }
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_unix_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  [[nodiscard]] std::int64_t monotonic_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

/// One SystemClock for whoever is not given another (the default of constructors).
[[nodiscard]] inline const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace ticketd
