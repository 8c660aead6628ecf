// A Clock that tests set and step by hand.
#pragma once

#include <atomic>
#include <cstdint>

#include "server/core/clock.h"

namespace ticketd::testing {

/// Reads whatever the test last set: time moves only through set(), advance() and
/// advance_to(), so time-dependent tests neither sleep nor depend on the machine's speed. It
/// may be stepped backwards. Thread safety: all members may be called concurrently.
class FakeClock final : public Clock {
 public:
  /// 2026-01-01T00:00:00Z unless told otherwise.
  static constexpr std::int64_t kDefaultStartUnixMs = 1767225600000;

  explicit FakeClock(std::int64_t start_unix_ms = kDefaultStartUnixMs) : now_(start_unix_ms) {}

  [[nodiscard]] std::int64_t now_unix_ms() const override {
    return now_.load(std::memory_order_acquire);
  }
  void set(std::int64_t unix_ms) { now_.store(unix_ms, std::memory_order_release); }
  /// Moves by `delta_ms`, which may be negative (a clock stepped back).
  void advance(std::int64_t delta_ms) { now_.fetch_add(delta_ms, std::memory_order_acq_rel); }
  /// Moves forward to `unix_ms` unless the clock already reads later (what a caller that
  /// awaited a timer until `unix_ms` observes).
  void advance_to(std::int64_t unix_ms) {
    std::int64_t cur = now_.load(std::memory_order_acquire);
    while (cur < unix_ms && !now_.compare_exchange_weak(cur, unix_ms, std::memory_order_acq_rel)) {
    }
  }

 private:
  std::atomic<std::int64_t> now_;
};

}  // namespace ticketd::testing
