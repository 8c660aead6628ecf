#include "server/core/retry_scheduler.h"

namespace ticketd {

RetryScheduler::RetryScheduler() : thread_([this] { run(); }) {}

RetryScheduler::~RetryScheduler() { stop(); }

void RetryScheduler::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push(Item{std::chrono::steady_clock::now() + delay, next_order_++, std::move(fn)});
      wake_.notify_one();
      return;
    }
  }
  fn();  // stopped: run now; the callee sees the engine shutting down
}

void RetryScheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void RetryScheduler::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    if (!stopping_ && queue_.top().at > std::chrono::steady_clock::now()) {
      wake_.wait_until(lock, queue_.top().at);
      continue;
    }
    auto fn = std::move(const_cast<Item&>(queue_.top()).fn);
    queue_.pop();
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace ticketd
