#include "server/core/group_committer.h"

#include <chrono>
#include <future>
#include <iterator>

#include "server/core/ticket_errc.h"

namespace ticketd {

GroupCommitter::GroupCommitter(CounterStore& store, std::size_t max_mutations_per_commit)
    : store_(store), max_mutations_(max_mutations_per_commit) {
  thread_ = std::thread([this] { run(); });
}

GroupCommitter::~GroupCommitter() { stop(); }

void GroupCommitter::submit(std::vector<Mutation> mutations, Done done) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back(Request{std::move(mutations), std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  done(Error{TicketErrc::kShuttingDown, "server is shutting down"});
}

DetailedResult<void> GroupCommitter::try_submit(std::vector<Mutation> mutations, Done done) {
  std::lock_guard lock(mutex_);
  if (stopping_) return Error{TicketErrc::kShuttingDown, "server is shutting down"};
  queue_.push_back(Request{std::move(mutations), std::move(done)});
  wake_.notify_one();
  return {};
}

void GroupCommitter::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

GroupCommitter::Stats GroupCommitter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void GroupCommitter::set_observer(CommitObserver observer) {
  std::lock_guard lock(observer_mutex_);
  observer_ = std::move(observer);
}

void GroupCommitter::run() {
  std::vector<Request> batch;
  std::vector<Mutation> mutations;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything submitted has been committed
      if (max_mutations_ == 0) {
        batch.swap(queue_);
      } else {
        std::size_t taken = 0;
        std::size_t count = 0;
        while (taken < queue_.size() &&
               (taken == 0 || count + queue_[taken].mutations.size() <= max_mutations_)) {
          count += queue_[taken].mutations.size();
          ++taken;
        }
        const auto end = queue_.begin() + static_cast<std::ptrdiff_t>(taken);
        batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
        queue_.erase(queue_.begin(), end);
      }
    }
    mutations.clear();
    for (auto& r : batch) {
      for (auto& m : r.mutations) mutations.push_back(std::move(m));
    }
    // Mutations keep submission order inside the batch, so a later write to the same key wins.
    auto t0 = std::chrono::steady_clock::now();
    auto result = store_.commit(mutations);
    auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    {
      std::lock_guard lock(mutex_);
      stats_.commits += 1;
      stats_.requests += batch.size();
      stats_.failures += result.has_error() ? 1 : 0;
      stats_.total_latency_ns += static_cast<std::uint64_t>(ns);
      stats_.last_latency_ns = static_cast<std::uint64_t>(ns);
      stats_.last_commit_ok = !result.has_error();
    }
    {
      std::lock_guard lock(observer_mutex_);
      if (observer_) {
        observer_(CommitSample{batch.size(), mutations.size(), static_cast<std::uint64_t>(ns),
                               !result.has_error()});
      }
    }
    for (auto& r : batch) r.done(result);
    batch.clear();
  }
}

DetailedResult<void> commit_and_wait(GroupCommitter& committer, std::vector<Mutation> mutations) {
  std::promise<DetailedResult<void>> promise;
  auto future = promise.get_future();
  committer.submit(std::move(mutations),
                   [&promise](const DetailedResult<void>& r) { promise.set_value(r); });
  return future.get();
}

}  // namespace ticketd
