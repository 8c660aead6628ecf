// Tracks live sessions so shutdown can stop them and limits can be enforced.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace ticketd::net {

/// Counts the open sessions of one front end and holds, for each, a function that cancels its
/// pending reads (it posts to the session's strand). On shutdown the daemon stops the listeners,
/// calls cancel_all(), and waits for count() to reach zero. Thread safety: all members may be
/// called concurrently.
class SessionRegistry {
 public:
  using Cancel = std::function<void()>;

  /// Registers a session; returns its id, or 0 when shutting down (the session must end).
  [[nodiscard]] std::uint64_t add(Cancel cancel);
  void remove(std::uint64_t id);
  void cancel_all();
  [[nodiscard]] std::size_t count() const;
  [[nodiscard]] bool stopping() const { return stopping_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, Cancel> sessions_;
  std::uint64_t next_id_ = 1;
  std::atomic<bool> stopping_{false};
};

/// Removes a session from its registry when the session's coroutine frame ends.
class SessionRegistration {
 public:
  SessionRegistration(SessionRegistry& registry, SessionRegistry::Cancel cancel)
      : registry_(registry), id_(registry.add(std::move(cancel))) {}
  ~SessionRegistration() {
    if (id_ != 0) registry_.remove(id_);
  }
  SessionRegistration(const SessionRegistration&) = delete;
  SessionRegistration& operator=(const SessionRegistration&) = delete;
  [[nodiscard]] bool admitted() const { return id_ != 0; }

 private:
  SessionRegistry& registry_;
  std::uint64_t id_;
};

}  // namespace ticketd::net
