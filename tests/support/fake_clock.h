// A Clock that tests set and step by hand.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "server/core/clock.h"

namespace ticketd::testing {

/// Reads whatever the test last set: time moves only through set(), advance() and
/// advance_to(), so time-dependent tests neither sleep nor depend on the machine's speed. It
/// may be stepped backwards. Each of those calls is a step: after the new reading is visible it
/// calls the step observers (a TimerQueue on this clock runs what became due, on the
/// stepping thread, before the call returns). Thread safety: all members may be called
/// concurrently; steps reach the observers one at a time.
class FakeClock final : public Clock {
 public:
  /// 2026-01-01T00:00:00Z unless told otherwise.
  static constexpr std::int64_t kDefaultStartUnixMs = 1767225600000;

  explicit FakeClock(std::int64_t start_unix_ms = kDefaultStartUnixMs) : now_(start_unix_ms) {}

  [[nodiscard]] std::int64_t now_unix_ms() const override {
    return now_.load(std::memory_order_acquire);
  }
  /// Moves forward with every forward move of the wall reading made by set(), advance() and
  /// advance_to() (time passing), never backwards, and not at all with jump().
  [[nodiscard]] std::int64_t monotonic_ms() const override {
    return monotonic_.load(std::memory_order_acquire);
  }
  void set(std::int64_t unix_ms) {
    pass(unix_ms - now_.exchange(unix_ms, std::memory_order_acq_rel));
    notify();
  }
  /// Moves by `delta_ms`, which may be negative (a clock stepped back).
  void advance(std::int64_t delta_ms) {
    now_.fetch_add(delta_ms, std::memory_order_acq_rel);
    pass(delta_ms);
    notify();
  }
  /// Moves forward to `unix_ms` unless the clock already reads later (what a caller that
  /// awaited a timer until `unix_ms` observes).
  void advance_to(std::int64_t unix_ms) {
    std::int64_t cur = now_.load(std::memory_order_acquire);
    while (cur < unix_ms && !now_.compare_exchange_weak(cur, unix_ms, std::memory_order_acq_rel)) {
    }
    pass(unix_ms - cur);
    notify();
  }
  /// Steps the wall reading by `delta_ms` while no time passes: a clock set forward or back by
  /// NTP or an operator. monotonic_ms() does not move.
  void jump(std::int64_t delta_ms) {
    now_.fetch_add(delta_ms, std::memory_order_acq_rel);
    notify();
  }

  bool observe_steps(ClockStepObserver& observer) const override {
    std::lock_guard lock(observers_mutex_);
    observers_.push_back(&observer);
    return true;
  }
  void unobserve_steps(ClockStepObserver& observer) const override {
    std::lock_guard lock(observers_mutex_);
    observers_.erase(std::remove(observers_.begin(), observers_.end(), &observer),
                     observers_.end());
  }

 private:
  void notify() const {
    // Recursive: what an observer runs may step the clock or (un)register observers. Each one is
    // checked again before its call, so one unregistered meanwhile is not called.
    std::lock_guard lock(observers_mutex_);
    const std::vector<ClockStepObserver*> snapshot = observers_;
    for (ClockStepObserver* o : snapshot) {
      if (std::find(observers_.begin(), observers_.end(), o) != observers_.end())
        o->on_clock_step();
    }
  }

  void pass(std::int64_t delta_ms) {
    if (delta_ms > 0) monotonic_.fetch_add(delta_ms, std::memory_order_acq_rel);
  }

  std::atomic<std::int64_t> now_;
  std::atomic<std::int64_t> monotonic_{0};
  mutable std::recursive_mutex observers_mutex_;
  mutable std::vector<ClockStepObserver*> observers_;
};

}  // namespace ticketd::testing
