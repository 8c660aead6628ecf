// What a session coroutine waits on for the answer to one request: net::Completion's part that
// needs Asio.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <utility>

#include "server/net/asio_support.h"
#include "server/net/completion.h"

namespace ticketd::net {

/// A session coroutine's wait for the answer to one request (a MySQL packet's output, an HTTP
/// response), on top of the Completion its engine calls resume through. start() before the
/// request, then wait(). The answer is used at once when it came before wait() (inline, or
/// kept and run by end()); a later one wakes the session, which always resumes on its own
/// executor. The late answer's step already runs on the session (resume() posted it there), so
/// the wake is a cancel of the session's timer, not a second trip through the scheduler.
/// Thread safety: start() and wait() on the session's strand; the completer on any thread,
/// once per request.
template <class T>
class AwaitedCompletion final : public Completion {
 public:
  explicit AwaitedCompletion(const asio::any_io_executor& ex)
      : Completion([ex](Step step) { asio::post(ex, std::move(step)); }),
        wake_(ex, asio::steady_timer::time_point::max()) {}

  /// Arms the object for the next request and returns what the request completes with. The
  /// completer holds a plain pointer (a std::function stores it without allocating): the
  /// session keeps this object alive while it waits.
  [[nodiscard]] auto start() {
    state_.store(kCalling, std::memory_order_relaxed);
    return [self = this](T value) { self->complete(std::move(value)); };
  }

  /// The answer of the request start() armed; suspends only when it has not come yet.
  asio::awaitable<T> wait() {
    int expected = kCalling;
    if (state_.compare_exchange_strong(expected, kWaiting)) {
      // A wake from another thread is posted to this strand, so it cannot run before this wait
      // has started; one on this thread runs after the wait started too (the session is
      // suspended here whenever one of its steps runs).
      co_await wake_.async_wait(use_nothrow);
    }
    co_return std::move(value_);
  }

 private:
  static constexpr int kCalling = 0;   // inside the request: an answer now is an inline one
  static constexpr int kAnswered = 1;  // answered before the wait: wait() returns at once
  static constexpr int kWaiting = 2;   // the session waits: the answer must wake it

  void complete(T value) {
    value_ = std::move(value);
    int expected = kCalling;
    if (state_.compare_exchange_strong(expected, kAnswered)) return;
    if (on_session()) {
      wake_.cancel();  // a step of this session: the timer is this thread's to touch
      return;
    }
    asio::post(wake_.get_executor(), [self = shared_from_this(), this] { wake_.cancel(); });
  }

  asio::steady_timer wake_;
  T value_{};
  std::atomic<int> state_{kCalling};
};

}  // namespace ticketd::net
