// A stand-in for a session's executor: net::Completion posts steps here, and the test runs them
// on its own thread, as the session's strand would.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "server/net/completion.h"

namespace ticketd::testing {

class StepQueue {
 public:
  /// The Post of a Completion whose late answers this queue receives.
  [[nodiscard]] net::Completion::Post post() {
    return [this](net::Completion::Step step) {
      {
        std::lock_guard lock(mutex_);
        steps_.push_back(std::move(step));
      }
      ready_.notify_all();
    };
  }

  /// Waits up to `deadline` for a posted step and runs it on the calling thread; false when
  /// none came.
  bool run_one(std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    net::Completion::Step step;
    {
      std::unique_lock lock(mutex_);
      if (!ready_.wait_for(lock, deadline, [this] { return !steps_.empty(); })) return false;
      step = std::move(steps_.front());
      steps_.pop_front();
    }
    step();
    return true;
  }

  [[nodiscard]] std::size_t size() {
    std::lock_guard lock(mutex_);
    return steps_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<net::Completion::Step> steps_;
};

}  // namespace ticketd::testing
