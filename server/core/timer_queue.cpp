#include "server/core/timer_queue.h"

#include <algorithm>
#include <utility>

namespace ticketd {

TimerQueue::TimerQueue() : TimerQueue(system_clock()) {}

TimerQueue::TimerQueue(const Clock& clock) : clock_(clock) {
  // Registered only once every member exists: a step on another thread may call in at once.
  stepped_ = clock_.observe_steps(observer_);
  if (!stepped_) thread_ = std::thread([this] { run(); });
}

TimerQueue::~TimerQueue() { stop(); }

std::int64_t TimerQueue::steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void TimerQueue::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  if (stepped_) {
    schedule(clock_.now_unix_ms() + delay.count(), std::move(fn));
  } else {
    schedule(steady_now_ns() + std::chrono::nanoseconds(delay).count(), std::move(fn));
  }
}

void TimerQueue::at(std::int64_t unix_ms, std::function<void()> fn) {
  if (stepped_) {
    schedule(unix_ms, std::move(fn));
  } else {
    after(std::chrono::milliseconds(std::max<std::int64_t>(0, unix_ms - clock_.now_unix_ms())),
          std::move(fn));
  }
}

void TimerQueue::schedule(std::int64_t due, std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push(Item{due, next_order_++, std::move(fn)});
      wake_.notify_one();
      return;
    }
  }
  fn();  // stopped: run now; the callee sees the engine shutting down
}

void TimerQueue::stop() {
  if (stepped_) {
    // After this no step calls in, so what is pending runs here, in time order.
    clock_.unobserve_steps(observer_);
    std::unique_lock lock(mutex_);
    stopping_ = true;
    while (!queue_.empty()) {
      auto fn = std::move(const_cast<Item&>(queue_.top()).fn);
      queue_.pop();
      lock.unlock();
      fn();
      lock.lock();
    }
    return;
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void TimerQueue::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    if (!stopping_ && queue_.top().due > steady_now_ns()) {
      wake_.wait_until(
          lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(queue_.top().due)));
      continue;
    }
    auto fn = std::move(const_cast<Item&>(queue_.top()).fn);
    queue_.pop();
    lock.unlock();
    fn();
    lock.lock();
  }
}

void TimerQueue::run_due_at_step() {
  // What this step made due, taken at once: a function that schedules itself again for a time
  // already reached runs at the next step, so a step always ends.
  std::vector<std::function<void()>> due;
  {
    std::lock_guard lock(mutex_);
    const std::int64_t now = clock_.now_unix_ms();
    while (!stopping_ && !queue_.empty() && queue_.top().due <= now) {
      due.push_back(std::move(const_cast<Item&>(queue_.top()).fn));
      queue_.pop();
    }
  }
  for (auto& fn : due) fn();
}

}  // namespace ticketd
