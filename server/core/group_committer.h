// Batches durable writes from many callers into few synced commits.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/base/result.h"
#include "storage/counter_store.h"

namespace ticketd {

/// Owns one thread that applies submitted mutations to the store. Whatever was submitted while
/// the previous commit was running goes into the next one, so N concurrent callers cost one
/// synced write, not N (group commit). Completions run on the committer thread, in submission
/// order; they must be short and must not block (front ends post back to their own executor).
/// A failed commit fails every request in it. Thread safety: submit() may be called from any
/// thread; stop() and the destructor from the owner only.
class GroupCommitter {
 public:
  using Done = std::function<void(const DetailedResult<void>&)>;

  struct Stats {
    std::uint64_t commits = 0;           // synced writes performed
    std::uint64_t requests = 0;          // submissions carried by them
    std::uint64_t failures = 0;          // commits that failed
    std::uint64_t total_latency_ns = 0;  // time spent inside store.commit()
    std::uint64_t last_latency_ns = 0;
    bool last_commit_ok = true;  // readiness: the most recent durable write succeeded
  };

  /// One synced commit, as an observer sees it (metrics: latency and group-size histograms).
  struct CommitSample {
    std::size_t requests = 0;      // submissions folded into this commit
    std::size_t mutations = 0;     // their mutations
    std::uint64_t latency_ns = 0;  // time inside store.commit()
    bool ok = true;
  };
  /// Called on the committer thread after each commit, before its completions: must be cheap
  /// and must not block or call back into the committer.
  using CommitObserver = std::function<void(const CommitSample&)>;

  /// `max_mutations_per_commit` (0: no limit) caps one commit for stores that bound a
  /// transaction (etcd refuses more than --max-txn-ops operations, 128 by default): requests
  /// are taken in order until the next would pass the cap; a larger request goes alone.
  explicit GroupCommitter(CounterStore& store, std::size_t max_mutations_per_commit = 0);
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  void submit(std::vector<Mutation> mutations, Done done);
  /// Like submit(), but once stopping it returns the error instead of calling `done` inline, so
  /// a caller may submit while holding a lock its completion takes.
  [[nodiscard]] DetailedResult<void> try_submit(std::vector<Mutation> mutations, Done done);
  /// Commits everything already submitted, then stops; later submissions fail with kShuttingDown.
  void stop();
  [[nodiscard]] Stats stats() const;
  /// Installs the one observer (an empty function removes it). Returns once no call of the
  /// previous observer is running, so its owner may go away right after removing it.
  void set_observer(CommitObserver observer);

 private:
  struct Request {
    std::vector<Mutation> mutations;
    Done done;
  };
  void run();

  CounterStore& store_;
  const std::size_t max_mutations_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Request> queue_;
  bool stopping_ = false;
  Stats stats_;
  // Taken by the committer thread around each observer call and by set_observer() (so a call
  // never outlives its removal); uncontended otherwise: one lock per commit, not per request.
  std::mutex observer_mutex_;
  CommitObserver observer_;
  std::thread thread_;
};

/// Submits and waits. For start-up, tools and tests only: never call it on an I/O thread.
[[nodiscard]] DetailedResult<void> commit_and_wait(GroupCommitter& committer,
                                                   std::vector<Mutation> mutations);

}  // namespace ticketd
