// How a session coroutine awaits one call into the engine.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <utility>

#include "server/net/asio_support.h"

namespace ticketd::net {

/// The answer to one call into the engine (a MySQL packet's output, an HTTP response). The
/// engine answers inline (a cached ticket: before the call returns) or later on another thread
/// (its committer). An inline answer is used at once, with no trip through the scheduler; a
/// late one stores the value and wakes the session with a cancel posted to the session's own
/// executor, so the session always resumes there and never on the engine's thread. One object
/// serves every call of one session, in turn: start() before each call, then wait().
/// Thread safety: the completer may run on any thread, once per call; start() and wait() run
/// on the session's strand.
template <class T>
class PendingResult : public std::enable_shared_from_this<PendingResult<T>> {
 public:
  explicit PendingResult(const asio::any_io_executor& ex)
      : wake_(ex, asio::steady_timer::time_point::max()) {}

  /// Arms the object for the next call and returns what the call completes with. The
  /// completer holds a plain pointer (a std::function stores it without allocating): the
  /// session keeps this object alive while it waits, and answers only ever reach it on the
  /// session's strand (net::Handoff) while the session waits or is still inside the call.
  [[nodiscard]] auto start() {
    state_.store(kCalling, std::memory_order_relaxed);
    return [self = this](T value) { self->complete(std::move(value)); };
  }

  /// The value of the call start() armed; suspends only when the call has not answered yet.
  asio::awaitable<T> wait() {
    int expected = kCalling;
    if (state_.compare_exchange_strong(expected, kWaiting)) {
      // The cancel is posted to this strand, so it cannot run before this wait has started.
      co_await wake_.async_wait(use_nothrow);
    }
    co_return std::move(value_);
  }

 private:
  static constexpr int kCalling = 0;   // inside the call: an answer now is an inline one
  static constexpr int kAnswered = 1;  // answered inline: wait() returns at once
  static constexpr int kWaiting = 2;   // the session waits: the answer must wake it

  void complete(T value) {
    value_ = std::move(value);
    int expected = kCalling;
    if (!state_.compare_exchange_strong(expected, kAnswered)) {
      asio::post(wake_.get_executor(), [self = this->shared_from_this()] { self->wake_.cancel(); });
    }
  }

  asio::steady_timer wake_;
  T value_{};
  std::atomic<int> state_{kCalling};
};

}  // namespace ticketd::net
