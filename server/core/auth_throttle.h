// Slows down password and token guessing, per client address, for both front ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/base/log_rate_limiter.h"
#include "server/core/clock.h"

namespace ticketd {

struct AuthThrottleOptions {
  std::uint64_t free_failures = 5;   // failures from one address before attempts wait
  std::int64_t min_delay_ms = 500;   // the first wait; it doubles with each further failure
  std::int64_t max_delay_ms = 5000;  // and stops growing here
  /// An address's failures are forgotten this long after its last one.
  std::int64_t forget_after_ms = 15 * 60 * 1000;
  /// Addresses tracked at most; beyond it new addresses are not tracked until old ones are
  /// forgotten (memory stays bounded whatever the number of attackers).
  std::size_t max_addresses = 65536;
  std::int64_t log_interval_ms = 1000;  // failed-login log lines: about one per interval
};

/// Counts failed logins (MySQL) and rejected bearer tokens (HTTP) per client address, as
/// MySQL's connection_control plugin does: after `free_failures` failures, every further attempt
/// from that address is answered only after a delay that doubles with each failure, capped at
/// `max_delay_ms`. A success from the address resets it. The front ends await the delay on a
/// timer (never sleeping on an I/O thread). It also rate-limits the failure log lines.
/// Time comes from the injected Clock. Thread safety: all members may be called concurrently.
class AuthThrottle {
 public:
  explicit AuthThrottle(const Clock& clock, AuthThrottleOptions options = {});

  /// How long an attempt from `address` starting now waits before it is answered; 0 when the
  /// address has fewer than free_failures recent failures.
  [[nodiscard]] std::int64_t delay_ms(std::string_view address);

  struct Failure {
    std::uint64_t failures = 0;      // recent failures from the address, this one included
    std::int64_t next_delay_ms = 0;  // what the address's next attempt waits
    /// Set when this failure may be logged: how many failure lines were left out before it.
    std::optional<std::uint64_t> log;
  };
  Failure record_failure(std::string_view address);
  void record_success(std::string_view address);

  /// Addresses currently tracked (for tests).
  [[nodiscard]] std::size_t tracked() const;

 private:
  struct Entry {
    std::uint64_t failures = 0;
    std::int64_t last_failure_ms = 0;
  };
  [[nodiscard]] std::int64_t delay_for(std::uint64_t failures) const;
  void forget_expired(std::int64_t now_ms);

  const Clock& clock_;
  const AuthThrottleOptions options_;
  log::RateLimiter log_limiter_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::int64_t last_sweep_ms_ = 0;
};

/// The log line for a failure ("mysql login failed for user 'app' from 10.0.0.7: 6 failures
/// from this address, its next attempt waits 1000 ms; 12 more failures since the last such
/// line"). `who` is already printable; never pass a password, token or scramble.
[[nodiscard]] std::string failure_line(std::string_view what, std::string_view who,
                                       std::string_view address,
                                       const AuthThrottle::Failure& failure);

/// `text` fit for a log line: at most `max_length` bytes, control characters, quotes and
/// backslashes escaped as \xNN. For user names a client sent.
[[nodiscard]] std::string printable(std::string_view text, std::size_t max_length = 64);

}  // namespace ticketd
