// Runs deferred retries off the I/O threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace ticketd {

/// One thread that runs functions after a delay. The engine uses it when a generator answers
/// "retry later" (a Snowflake tick is full, the clock stepped back a little, a high-water mark is
/// being written): the caller's callback is completed later instead of any thread sleeping on the
/// caller's behalf. On stop, pending functions run at once (they then see the engine stopping).
/// Thread safety: after() may be called from any thread.
class RetryScheduler {
 public:
  RetryScheduler();
  ~RetryScheduler();
  RetryScheduler(const RetryScheduler&) = delete;
  RetryScheduler& operator=(const RetryScheduler&) = delete;

  void after(std::chrono::milliseconds delay, std::function<void()> fn);
  void stop();

 private:
  struct Item {
    std::chrono::steady_clock::time_point at;
    std::uint64_t order;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue_;
  std::uint64_t next_order_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ticketd
