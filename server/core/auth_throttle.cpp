#include "server/core/auth_throttle.h"

#include <algorithm>
#include <cstdio>

namespace ticketd {

AuthThrottle::AuthThrottle(const Clock& clock, AuthThrottleOptions options)
    : clock_(clock), options_(options), log_limiter_(options.log_interval_ms) {}

std::int64_t AuthThrottle::delay_for(std::uint64_t failures) const {
  if (failures < options_.free_failures) return 0;
  std::int64_t delay = options_.min_delay_ms;
  for (std::uint64_t i = options_.free_failures; i < failures && delay < options_.max_delay_ms;
       ++i) {
    delay *= 2;
  }
  return std::min(delay, options_.max_delay_ms);
}

std::int64_t AuthThrottle::delay_ms(std::string_view address) {
  const std::int64_t now = clock_.now_unix_ms();
  std::lock_guard lock(mutex_);
  auto it = entries_.find(std::string(address));
  if (it == entries_.end()) return 0;
  if (now - it->second.last_failure_ms >= options_.forget_after_ms) {
    entries_.erase(it);
    return 0;
  }
  return delay_for(it->second.failures);
}

void AuthThrottle::forget_expired(std::int64_t now_ms) {
  std::erase_if(entries_, [&](const auto& kv) {
    return now_ms - kv.second.last_failure_ms >= options_.forget_after_ms;
  });
}

AuthThrottle::Failure AuthThrottle::record_failure(std::string_view address) {
  const std::int64_t now = clock_.now_unix_ms();
  Failure f;
  f.log = log_limiter_.admit(now);
  std::lock_guard lock(mutex_);
  auto it = entries_.find(std::string(address));
  if (it == entries_.end()) {
    if (entries_.size() >= options_.max_addresses && now - last_sweep_ms_ >= 1000) {
      // At most one sweep a second, so a flood of new addresses cannot make each failure
      // walk the whole table.
      last_sweep_ms_ = now;
      forget_expired(now);
    }
    if (entries_.size() >= options_.max_addresses) {
      f.failures = 1;
      return f;  // not tracked: the table is full of recent offenders
    }
    it = entries_.emplace(std::string(address), Entry{}).first;
  } else if (now - it->second.last_failure_ms >= options_.forget_after_ms) {
    it->second.failures = 0;
  }
  it->second.failures += 1;
  it->second.last_failure_ms = now;
  f.failures = it->second.failures;
  f.next_delay_ms = delay_for(f.failures);
  return f;
}

void AuthThrottle::record_success(std::string_view address) {
  std::lock_guard lock(mutex_);
  entries_.erase(std::string(address));
}

std::size_t AuthThrottle::tracked() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::string failure_line(std::string_view what, std::string_view who, std::string_view address,
                         const AuthThrottle::Failure& failure) {
  std::string line = std::string(what) + " failed for " + std::string(who) + " from " +
                     std::string(address) + ": " + std::to_string(failure.failures) +
                     (failure.failures == 1 ? " failure" : " failures") + " from this address";
  if (failure.next_delay_ms > 0) {
    line += ", its next attempt waits " + std::to_string(failure.next_delay_ms) + " ms";
  }
  if (failure.log && *failure.log > 0) {
    line += "; " + std::to_string(*failure.log) + " more failures since the last such line";
  }
  return line;
}

std::string printable(std::string_view text, std::size_t max_length) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_length; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '"' || c == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_length) out += "...";
  return out;
}

}  // namespace ticketd
