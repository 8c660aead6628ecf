#include "server/core/auth_throttle.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace ticketd {

AuthThrottle::AuthThrottle(const Clock& clock, AuthThrottleOptions options)
    : clock_(clock), options_(options), log_limiter_(options.log_interval_ms) {}

std::int64_t AuthThrottle::delay_for(std::uint64_t failures) const {
  if (failures <= options_.free_failures) return 0;
  std::int64_t delay = options_.min_delay_ms;
  for (std::uint64_t i = options_.free_failures + 1; i < failures && delay < options_.max_delay_ms;
       ++i) {
    delay *= 2;
  }
  return std::min(delay, options_.max_delay_ms);
}

namespace {

constexpr std::size_t kMaxUserInKey = 64;  // longer names are told apart by their first 64 bytes
constexpr std::string_view kOtherUsers = "\x01other users";

std::string_view address_of(std::string_view key) { return key.substr(0, key.find('\0')); }

}  // namespace

std::string AuthThrottle::key_for(std::string_view address, std::string_view user) const {
  std::string key(address);
  key.push_back('\0');
  key.append(user.substr(0, kMaxUserInKey));
  if (entries_.contains(key)) return key;
  const auto users = users_per_address_.find(std::string(address));
  if (users != users_per_address_.end() && users->second >= options_.max_users_per_address) {
    key.resize(address.size() + 1);
    key.append(kOtherUsers);  // not a name a client can send (it starts with \x01)
  }
  return key;
}

AuthThrottle::Slot& AuthThrottle::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    key_ = std::move(other.key_);
    admitted_ = other.admitted_;
  }
  return *this;
}

void AuthThrottle::Slot::release() {
  if (owner_ != nullptr) std::exchange(owner_, nullptr)->release(key_);
}

void AuthThrottle::release(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end() && it->second.in_flight > 0) {
    it->second.in_flight -= 1;
  }
}

AuthThrottle::Slot AuthThrottle::admit(std::string_view address, std::string_view user) {
  const std::int64_t now = clock_.now_unix_ms();
  std::lock_guard lock(mutex_);
  Slot slot;
  slot.key_ = key_for(address, user);
  slot.admitted_ = true;
  auto it = entries_.find(slot.key_);
  if (it == entries_.end()) return slot;  // no recent failure: counted only if it fails
  Entry& e = it->second;
  if (now - e.last_failure_ms >= options_.forget_after_ms) e.failures = 0;
  if (e.failures >= options_.free_failures && e.in_flight >= options_.max_in_flight) {
    slot.admitted_ = false;
    return slot;
  }
  e.in_flight += 1;
  slot.owner_ = this;
  return slot;
}

void AuthThrottle::forget_expired(std::int64_t now_ms) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.in_flight == 0 &&
        now_ms - it->second.last_failure_ms >= options_.forget_after_ms) {
      const std::string address(address_of(it->first));
      if (auto users = users_per_address_.find(address);
          users != users_per_address_.end() && --users->second == 0) {
        users_per_address_.erase(users);
      }
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

AuthThrottle::Failure AuthThrottle::record_failure(Slot& slot) {
  const std::int64_t now = clock_.now_unix_ms();
  Failure f;
  f.log = log_limiter_.admit(now);
  std::lock_guard lock(mutex_);
  auto it = entries_.find(slot.key_);
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
    it = entries_.emplace(slot.key_, Entry{}).first;
    users_per_address_[std::string(address_of(slot.key_))] += 1;
  } else if (now - it->second.last_failure_ms >= options_.forget_after_ms) {
    it->second.failures = 0;
  }
  Entry& e = it->second;
  e.failures += 1;
  e.last_failure_ms = now;
  if (slot.owner_ == nullptr) {
    // Admitted before the pair had failures: it holds a place from now on, while it waits.
    e.in_flight += 1;
    slot.owner_ = this;
  }
  f.failures = e.failures;
  f.delay_ms = delay_for(f.failures);
  return f;
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
  if (failure.delay_ms > 0) {
    line += ", answered after " + std::to_string(failure.delay_ms) + " ms";
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
