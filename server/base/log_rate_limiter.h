// Keeps a repeated log line from flooding the log.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

namespace ticketd::log {

/// Lets one event per interval through to the log and counts the others, so a flood (accept
/// failures, failed logins) writes about one line a second, each saying how many were left out.
/// Time is passed in (milliseconds on any monotonic scale), so tests need no clock.
/// Thread safety: admit() may be called concurrently.
class RateLimiter {
 public:
  explicit RateLimiter(std::int64_t interval_ms = 1000) : interval_ms_(interval_ms) {}

  /// For an event at `now_ms`: the number of events suppressed since the last admitted one when
  /// this one may be logged, nullopt when it must not be.
  [[nodiscard]] std::optional<std::uint64_t> admit(std::int64_t now_ms) {
    std::lock_guard lock(mutex_);
    if (admitted_any_ && now_ms - last_ms_ < interval_ms_) {
      ++suppressed_;
      return std::nullopt;
    }
    admitted_any_ = true;
    last_ms_ = now_ms;
    const std::uint64_t n = suppressed_;
    suppressed_ = 0;
    return n;
  }

 private:
  std::mutex mutex_;
  const std::int64_t interval_ms_;
  bool admitted_any_ = false;
  std::int64_t last_ms_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace ticketd::log
