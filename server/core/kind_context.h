// What the engine lends the kinds' modules for one call (KindEnv), and the one retry queue
// their "retry later" answers share.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/kind_module.h"
#include "server/core/sequence_handle.h"
#include "server/core/timer_queue.h"
#include "storage/counter_store.h"

namespace ticketd {

/// The store, the committer, the rate clock and the run-time services (RuntimeKinds) that the
/// kinds' modules borrow. enable_runtime_kinds() runs before serving; env() and
/// use_retry_timers() may be called concurrently.
class KindContext {
 public:
  /// `clock` times each ticket sequence's max_rate allowance.
  KindContext(CounterStore& store, GroupCommitter& committer, const Clock& clock)
      : store_(store), committer_(committer), clock_(clock) {}

  /// Lets sequences of the run-time kinds (gapless, Snowflake, UUIDv7, ULID) be opened.
  void enable_runtime_kinds(RuntimeKinds kinds);
  /// Where "retry later" answers wait, and the clock that times them: one pair for every
  /// sequence, the first one given (enable_runtime_kinds or a Snowflake generator's). Set
  /// once and read without a lock.
  void use_retry_timers(TimerQueue* timers, const Clock* clock);

  [[nodiscard]] KindEnv env() const {
    return KindEnv{store_, committer_, clock_, runtime_,
                   retry_timers_.load(std::memory_order_acquire)};
  }
  [[nodiscard]] const RuntimeKinds& runtime() const { return runtime_; }
  /// Whether a sequence of a run-time kind can be opened (enable_runtime_kinds gave a clock).
  [[nodiscard]] bool opens_runtime_kinds() const { return runtime_.clock != nullptr; }
  [[nodiscard]] CounterStore& store() const { return store_; }
  [[nodiscard]] GroupCommitter& committer() const { return committer_; }
  [[nodiscard]] const Clock& clock() const { return clock_; }

 private:
  CounterStore& store_;
  GroupCommitter& committer_;
  const Clock& clock_;
  RuntimeKinds runtime_;
  std::mutex retry_mutex_;
  std::unique_ptr<RetryTimers> retry_timers_storage_;
  std::atomic<const RetryTimers*> retry_timers_{nullptr};
};

}  // namespace ticketd
