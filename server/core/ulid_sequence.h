// A ULID sequence: a UlidGenerator whose IDs never pass a durable mark, so a restart, a crash,
// a failover to another server on the same store, or a restore from a backup (which keeps the
// mark) resumes above every ULID handed out before.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/snowflake_generator.h"  // ClockPolicy, SnowflakeHwmRecord
#include "server/core/ulid_generator.h"
#include "storage/counter_store.h"

namespace ticketd {

/// How far ahead of the newest ID a ULID sequence keeps its durable mark, by default.
inline constexpr std::int64_t kDefaultUlidMarkMarginMs = 2000;

struct UlidSequenceOptions {
  std::string name{};
  ClockPolicy policy = ClockPolicy::kWait;
  std::int64_t max_backward_ms = 5;
  /// How far ahead of the newest ID the durable mark is kept: it bounds how long a restart
  /// after a crash waits, and costs one synced write per margin/2 of activity.
  std::int64_t mark_margin_ms = kDefaultUlidMarkMarginMs;
  /// After a failed mark write, calls that need a new mark fail with kStorageFailed for this
  /// long before one of them submits the write again.
  std::int64_t failure_backoff_ms = 100;
  UlidRandomSource random{};  // empty: getrandom_fill
};

/// The store key of a ULID sequence's mark: "ulid/<name>/mark", a SnowflakeHwmRecord (the
/// highest millisecond any ID may use, and the clock when it was written).
[[nodiscard]] std::string ulid_mark_key(std::string_view name);

/// The ULID a run resumes above when `mark_unix_ms` is the previous run's mark: that
/// millisecond with its random part used up, so every new ID has a later millisecond.
[[nodiscard]] Ulid ulid_floor_of_mark(std::int64_t mark_unix_ms);

struct UlidMarkStats {
  std::int64_t mark_unix_ms = 0;  // gauge: the durable mark
  std::uint64_t mark_writes = 0;
  std::uint64_t mark_write_failures = 0;
};

/// Owned by a shared_ptr: a mark write in flight keeps it alive. Mark completions run on the
/// committer thread. Thread safety: all members may be called concurrently.
class UlidSequence : public std::enable_shared_from_this<UlidSequence> {
  struct Private {};

 public:
  /// Reads the stored mark (resuming above it), and durably writes a new one (blocks for one
  /// commit: start-up or the registry's background thread only). A mark that does not decode
  /// is kCorruption; storage errors are returned as they are.
  [[nodiscard]] static DetailedResult<std::shared_ptr<UlidSequence>> open(
      UlidSequenceOptions options, CounterStore& store, GroupCommitter& committer,
      const Clock& clock);

  /// The next ID, or why not now: the generator's answers (UlidGenerator::try_next), plus
  /// kRetryLater while a mark that covers the ID is being written, kStorageFailed within the
  /// backoff after a failed mark write, and kShuttingDown after close().
  [[nodiscard]] UlidNext try_next();

  /// Raises the mark in the background when it is less than half the margin ahead of the
  /// clock or the newest ID (the daemon calls it a few times per margin, so an idle sequence
  /// does not make its next caller wait for a write). True when a write was submitted.
  bool refresh();

  /// Stops issuing (kShuttingDown) and durably lowers the mark to the newest ID's millisecond,
  /// so a clean restart does not wait for the clock to pass the margin.
  [[nodiscard]] DetailedResult<void> close();

  [[nodiscard]] const UlidGenerator& generator() const { return generator_; }
  [[nodiscard]] const std::string& name() const { return options_.name; }
  [[nodiscard]] ClockPolicy policy() const { return options_.policy; }
  [[nodiscard]] UlidMarkStats mark_stats() const;

  UlidSequence(Private, UlidSequenceOptions options, UlidOptions generator_options,
               GroupCommitter& committer, const Clock& clock);

 private:
  struct MarkWrite {
    std::int64_t mark_ms = 0;
    std::int64_t now = 0;
  };
  // Members ending in _locked require mutex_.
  [[nodiscard]] std::int64_t target_locked(std::int64_t newest_ms, std::int64_t now) const;
  [[nodiscard]] std::optional<MarkWrite> plan_locked(std::int64_t need_ms, std::int64_t now);
  [[nodiscard]] bool in_backoff_locked(std::int64_t now) const;
  void submit(const MarkWrite& write);
  void on_written(std::int64_t mark_ms, const DetailedResult<void>& result);

  const UlidSequenceOptions options_;
  const std::string key_;
  GroupCommitter& committer_;
  const Clock& clock_;
  UlidGenerator generator_;

  mutable std::mutex mutex_;  // taken before the generator's own lock, never after it
  std::int64_t durable_ms_ = 0;
  std::int64_t submitted_ms_ = 0;
  bool write_in_flight_ = false;
  std::optional<Error> write_failure_;
  std::int64_t write_failed_at_ms_ = 0;
  bool closed_ = false;
  UlidMarkStats stats_;
};

}  // namespace ticketd
