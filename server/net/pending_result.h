// Awaiting a result that is usually ready at once and sometimes arrives from another thread.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>

#include "server/net/asio_support.h"

namespace ticketd::net {

/// One reusable slot per session for the answer of an engine call. Most answers are ready
/// before the call returns (a cached ticket): those are used at once, with no trip through the
/// scheduler. An answer completed later, on the engine's committer thread, wakes the session by
/// cancelling `wake_`, posted to the session's strand. Used by one session at a time.
template <class T>
class PendingResult : public std::enable_shared_from_this<PendingResult<T>> {
 public:
  explicit PendingResult(const asio::any_io_executor& ex)
      : wake_(ex, asio::steady_timer::time_point::max()) {}

  /// Calls `start(callback)`, which returns false when it had nothing to do (then nullopt is
  /// returned and the callback must never run), and awaits the value the callback receives.
  asio::awaitable<std::optional<T>> run(const std::function<bool(std::function<void(T)>)>& start) {
    auto self = this->shared_from_this();
    state_.store(0, std::memory_order_relaxed);
    const bool started = start([self](T value) {
      self->value_ = std::move(value);
      int expected = 0;
      if (!self->state_.compare_exchange_strong(expected, 1)) {
        asio::post(self->wake_.get_executor(), [self] { self->wake_.cancel(); });
      }
    });
    if (!started) co_return std::nullopt;
    int expected = 0;
    if (state_.compare_exchange_strong(expected, 2)) {
      // Not answered yet. The cancel is posted to this strand, so it cannot run before this
      // wait has started.
      co_await wake_.async_wait(use_nothrow);
    }
    co_return std::move(value_);
  }

 private:
  asio::steady_timer wake_;
  T value_{};
  std::atomic<int> state_{0};  // 0: in start(), 1: answered inline, 2: awaiting
};

}  // namespace ticketd::net
