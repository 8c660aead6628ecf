// A value the config can replace while readers run (a reload).
#pragma once

#include <atomic>
#include <memory>
#include <utility>

namespace ticketd {

/// Holds an immutable T that a reload replaces as a whole. A reader takes a snapshot (one
/// atomic load and a reference count) and keeps using it however long it needs, so a session
/// started before a reload finishes with the old value and the next one sees the new.
/// Thread safety: get() and set() may be called concurrently.
template <class T>
class Live {
 public:
  explicit Live(T value) : value_(std::make_shared<const T>(std::move(value))) {}
  Live(const Live&) = delete;
  Live& operator=(const Live&) = delete;

  [[nodiscard]] std::shared_ptr<const T> get() const {
    return value_.load(std::memory_order_acquire);
  }
  void set(T value) {
    value_.store(std::make_shared<const T>(std::move(value)), std::memory_order_release);
  }

 private:
  std::atomic<std::shared_ptr<const T>> value_;
};

}  // namespace ticketd
