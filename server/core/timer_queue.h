// Runs functions at a time of the injected clock, off the I/O threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "server/core/clock.h"

namespace ticketd {

/// Runs functions when its Clock reaches a time. The engine uses it when a generator answers
/// "retry later" (a Snowflake tick is full, the clock stepped back a little, a high-water mark is
/// being written, a leased worker ID's mark is not yet raised): the caller's callback is
/// completed later instead of any thread sleeping on the caller's behalf.
///
/// A delay is measured on the clock given at construction, in one of two ways:
/// - a clock that runs by itself (SystemClock, and the default): one thread of the queue's
///   own waits it out on the monotonic clock, as a timer would, so a wall-clock step while a
///   function waits neither holds it back nor fires it early (the retried call reads the clock
///   again and the generator judges the step);
/// - a clock that moves only when told (a test's FakeClock): no thread; a function runs inside
///   the step that brings the clock to or past its time, on the stepping thread, in time order
///   (ties in scheduling order). One scheduled for a time the clock already reads runs at the
///   next step (advance(0) is one), never on the caller's thread. The clock must outlive the
///   queue.
/// On stop, pending functions run at once, in time order (they then see the engine stopping),
/// and functions scheduled after stop() run at once on the caller's thread.
/// Thread safety: after(), at() and stop() may be called from any thread, also from a function
/// the queue runs (but stop() not from one when the queue has its own thread).
class TimerQueue {
 public:
  /// Real time (a SystemClock).
  TimerQueue();
  explicit TimerQueue(const Clock& clock);
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  /// Runs `fn` once the clock reads at least its reading now plus `delay`.
  void after(std::chrono::milliseconds delay, std::function<void()> fn);
  /// Runs `fn` once the clock reads at least `unix_ms`.
  void at(std::int64_t unix_ms, std::function<void()> fn);
  void stop();

 private:
  struct Item {
    // Nanoseconds of the monotonic clock (own thread) or the clock's Unix ms (stepped clock).
    std::int64_t due;
    std::uint64_t order;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return due != o.due ? due > o.due : order > o.order; }
  };
  // Fires the functions a step of a stepped clock made due.
  class StepObserver final : public ClockStepObserver {
   public:
    explicit StepObserver(TimerQueue& owner) : owner_(owner) {}
    void on_clock_step() override { owner_.run_due_at_step(); }

   private:
    TimerQueue& owner_;
  };

  static std::int64_t steady_now_ns();
  void schedule(std::int64_t due, std::function<void()> fn);
  void run();
  void run_due_at_step();

  const Clock& clock_;
  StepObserver observer_{*this};
  bool stepped_ = false;  // set once, in the constructor
  std::mutex mutex_;
  std::condition_variable wake_;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue_;
  std::uint64_t next_order_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ticketd
