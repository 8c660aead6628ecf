// A CounterStore wrapper for tests: can fail commits on demand and hold them until released.
#pragma once

#include <condition_variable>
#include <mutex>

#include "storage/counter_store.h"
#include "storage/memory_counter_store.h"

namespace ticketd::testing {

/// Wraps a MemoryCounterStore. `fail_next(n)` makes the next n commits fail with kNoSpace
/// (nothing applied); `lose_reply_next(n, applied)` makes them answer kOutcomeUnknown, having
/// applied them or not (a remote store whose reply was lost); `hold()` blocks commits until
/// `release()`, so tests can queue requests behind a commit in progress and observe group commit
/// deterministically.
class ScriptedStore final : public CounterStore {
 public:
  DetailedResult<std::optional<std::string>> get(std::string_view key) override {
    return inner_.get(key);
  }
  DetailedResult<KeyValues> scan(std::string_view prefix) override { return inner_.scan(prefix); }
  DetailedResult<KeyValues> scan_first(std::string_view prefix, std::size_t limit) override {
    return inner_.scan_first(prefix, limit);
  }
  DetailedResult<KeyValues> scan_last(std::string_view prefix, std::size_t limit) override {
    return inner_.scan_last(prefix, limit);
  }
  DetailedResult<void> commit(std::span<const Mutation> mutations) override {
    std::unique_lock lock(mutex_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !held_; });
    if (failures_left_ > 0) {
      --failures_left_;
      return Error{StorageErrc::kNoSpace, "injected: no space left on device"};
    }
    if (lost_replies_left_ > 0) {
      --lost_replies_left_;
      if (lost_apply_) {
        if (auto r = inner_.commit(mutations); !r) return r;
      }
      return Error{StorageErrc::kOutcomeUnknown, "injected: no reply within the deadline"};
    }
    lock.unlock();
    return inner_.commit(mutations);
  }

  void lose_reply_next(int n, bool applied) {
    std::lock_guard lock(mutex_);
    lost_replies_left_ = n;
    lost_apply_ = applied;
  }

  void fail_next(int n) {
    std::lock_guard lock(mutex_);
    failures_left_ = n;
  }
  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }
  void release() {
    std::lock_guard lock(mutex_);
    held_ = false;
    changed_.notify_all();
  }
  /// Waits until `n` commits have started (entered commit()).
  void wait_entered(int n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return entered_ >= n; });
  }
  [[nodiscard]] std::size_t commit_count() const { return inner_.commit_count(); }
  MemoryCounterStore& inner() { return inner_; }

 private:
  MemoryCounterStore inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int failures_left_ = 0;
  int lost_replies_left_ = 0;
  bool lost_apply_ = false;
  int entered_ = 0;
  bool held_ = false;
};

}  // namespace ticketd::testing
