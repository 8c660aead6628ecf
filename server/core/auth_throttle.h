// Slows down password and token guessing, per client address and user, for both front ends.
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
  std::uint64_t free_failures = 5;   // failures of one (address, user) answered without a wait
  std::int64_t min_delay_ms = 500;   // the first wait; it doubles with each further failure
  std::int64_t max_delay_ms = 5000;  // and stops growing here
  /// Credential checks of one throttled (address, user) at a time: a failure's answer holds its
  /// place while it waits, and a check beyond it is refused without being made.
  std::uint32_t max_in_flight = 2;
  /// A pair's failures are forgotten this long after its last one.
  std::int64_t forget_after_ms = 15 * 60 * 1000;
  /// Pairs tracked at most; beyond it new pairs are not tracked until old ones are forgotten
  /// (memory stays bounded whatever the number of attackers).
  std::size_t max_addresses = 65536;
  /// User names tracked apart per address; failures for further names from that address are
  /// counted together, so one address cannot fill the table with made-up names.
  std::size_t max_users_per_address = 16;
  std::int64_t log_interval_ms = 1000;  // failed-login log lines: about one per interval
};

/// Slows down password and token guessing per (client address, user name), for both front ends
/// (HTTP bearer tokens have no user: its name is empty). Like MySQL's connection_control, after
/// `free_failures` failures each further failure is answered only after a delay that doubles up
/// to `max_delay_ms`; unlike it:
/// - a correct credential is never delayed (the wait is on the failure's answer, not before
///   the check), so a client that knows its password is not slowed down by a guesser behind
///   the same address, and other users of that address are not affected at all;
/// - parallel guesses do not each get a check: while a pair is throttled, at most
///   `max_in_flight` checks of it run or wait, and any further attempt is refused at once,
///   unchecked (MySQL ERR 3955, HTTP 429). Guesses per second are bounded by
///   max_in_flight / delay, however many connections the guesser opens;
/// - a success does not reset the pair (another user's success even less): failures are
///   forgotten only `forget_after_ms` after the last one.
/// The front ends await the delay on a timer (never sleeping on an I/O thread). Time comes
/// from the injected Clock. Thread safety: all members may be called concurrently.
class AuthThrottle {
 public:
  explicit AuthThrottle(const Clock& clock, AuthThrottleOptions options = {});

  /// A credential check's place: held from admit() until the answer (after a failure's wait)
  /// is sent; released by the destructor.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { release(); }
    /// False: refused, the check must not be made.
    [[nodiscard]] bool admitted() const { return admitted_; }
    void release();

   private:
    friend class AuthThrottle;
    AuthThrottle* owner_ = nullptr;  // set while the slot counts against its pair
    std::string key_;
    bool admitted_ = false;
  };

  /// Whether a check of `user`'s credential from `address` may be made now.
  [[nodiscard]] Slot admit(std::string_view address, std::string_view user);

  struct Failure {
    std::uint64_t failures = 0;  // recent failures of the pair, this one included
    std::int64_t delay_ms = 0;   // how long this failure's answer waits (holding its slot)
    /// Set when this failure may be logged: how many failure lines were left out before it.
    std::optional<std::uint64_t> log;
  };
  /// The check `slot` admitted failed.
  Failure record_failure(Slot& slot);

  /// Pairs currently tracked (for tests).
  [[nodiscard]] std::size_t tracked() const;

 private:
  struct Entry {
    std::uint64_t failures = 0;
    std::int64_t last_failure_ms = 0;
    std::uint32_t in_flight = 0;
  };
  [[nodiscard]] std::int64_t delay_for(std::uint64_t failures) const;
  [[nodiscard]] std::string key_for(std::string_view address, std::string_view user) const;
  void forget_expired(std::int64_t now_ms);
  void release(const std::string& key);

  const Clock& clock_;
  const AuthThrottleOptions options_;
  log::RateLimiter log_limiter_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;  // "address\0user"
  std::unordered_map<std::string, std::size_t> users_per_address_;
  std::int64_t last_sweep_ms_ = 0;
};

/// The log line for a failure ("mysql login failed for user 'app' from 10.0.0.7: 6 failures
/// for this user from this address, answered after 1000 ms; 12 more failures since the last
/// such line"). `who` is already printable; never pass a password, token or scramble.
[[nodiscard]] std::string failure_line(std::string_view what, std::string_view who,
                                       std::string_view address,
                                       const AuthThrottle::Failure& failure);

/// `text` fit for a log line: at most `max_length` bytes, control characters, quotes and
/// backslashes escaped as \xNN. For user names a client sent.
[[nodiscard]] std::string printable(std::string_view text, std::size_t max_length = 64);

}  // namespace ticketd
