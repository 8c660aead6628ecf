// Snowflake IDs for one sequence: time-ordered, no per-ID coordination, restart-safe.
#pragma once

#include <boost/system/error_code.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/snowflake_layout.h"
#include "server/core/worker_lease.h"
#include "storage/counter_store.h"

namespace ticketd {

/// Errors only the Snowflake generator produces (everything else is a TicketErrc).
enum class SnowflakeErrc {
  kClockMovedBackwards = 1,  // the clock is further behind the last ID than the policy allows
  kWorkerLeaseLost,          // the worker ID's lease is not (or may no longer be) held
};

const boost::system::error_category& snowflake_category() noexcept;

inline boost::system::error_code make_error_code(SnowflakeErrc e) noexcept {
  return {static_cast<int>(e), snowflake_category()};
}

/// What the generator does when the clock reads earlier than the tick of the last ID.
enum class ClockPolicy {
  kFail,     // refuse with kClockMovedBackwards until the clock passes the last tick
  kWait,     // kRetryLater while the wait for the clock is <= max_backward_ms; an error beyond
  kLogical,  // keep counting from the last tick; IDs run ahead of real time until it catches up
};

[[nodiscard]] std::string_view policy_name(ClockPolicy policy);

/// Reported once per clock regression that reaches the generator (a reading lower than the
/// previous one while behind the last tick), and once at open() when the clock is behind the
/// high-water mark of the previous run by more than that run could explain.
struct ClockEvent {
  std::string sequence;
  ClockPolicy policy = ClockPolicy::kWait;
  std::int64_t now_unix_ms = 0;
  std::int64_t previous_unix_ms = 0;   // the reading (or the stored one) the clock fell below
  std::int64_t backward_ms = 0;        // previous_unix_ms - now_unix_ms
  std::int64_t resume_at_unix_ms = 0;  // when the clock will have passed the last tick used
  bool refused = false;                // the policy answers with an error, not a wait
};

struct SnowflakeOptions {
  std::string name;  // the sequence name; the HWM lives under "snowflake/<name>/hwm"
  SnowflakeLayout layout = SnowflakeLayout::twitter();
  std::uint64_t worker_id = 0;
  ClockPolicy policy = ClockPolicy::kWait;
  std::int64_t max_backward_ms = 5;  // kWait only
  /// How far ahead of the clock the durable high-water mark is kept. It bounds how long a
  /// restart after a crash waits, and costs one synced write per margin/2 of activity.
  std::int64_t hwm_margin_ms = 2000;
  /// retry_at distance while a high-water-mark write is in flight.
  std::int64_t hwm_retry_ms = 1;
  /// After a failed high-water-mark write, calls that need a new mark fail with kStorageFailed
  /// for this long before one of them submits the write again.
  std::int64_t hwm_failure_backoff_ms = 100;
  /// IDs start after this instant even if the store has no mark (the previous holder's
  /// high-water mark when the worker ID was leased from etcd or a worker pool); 0 if none.
  std::int64_t not_before_unix_ms = 0;
  /// When set, the worker ID is leased: `worker_id` and `not_before_unix_ms` are taken from it
  /// at open(), every call checks that the lease is valid on the generator's clock, and a new
  /// generation (a re-claim) rebinds the generator to its worker ID and mark. Must outlive
  /// nothing in particular: the generator shares ownership.
  std::shared_ptr<const WorkerLease> lease;
  /// Called, outside the generator's lock, for every ClockEvent, after its log line (metrics).
  std::function<void(const ClockEvent&)> on_clock_event;
};

/// The outcome of one try_next(): an ID, or an Error. With TicketErrc::kRetryLater,
/// `retry_at_unix_ms` (on the generator's clock) is when calling again can succeed: the caller
/// awaits a timer for retry_at_unix_ms - clock.now_unix_ms() and calls again.
struct SnowflakeNext {
  std::uint64_t id = 0;
  Error error;  // empty code on success
  std::int64_t retry_at_unix_ms = 0;

  [[nodiscard]] bool ok() const { return !error.code; }
  [[nodiscard]] bool retry_later() const;
};

/// Counters since open(), for metrics. Every counter is monotonic except the gauges at the end.
struct SnowflakeStats {
  std::uint64_t issued = 0;
  std::uint64_t sequence_exhausted = 0;     // calls told to retry: the tick's sequence was used up
  std::uint64_t clock_backward_events = 0;  // ClockEvents (the metric's label is the policy)
  std::uint64_t clock_backward_waits = 0;   // calls told to retry: clock behind the last tick
  std::uint64_t clock_backward_refusals = 0;  // calls refused: clock too far behind
  std::uint64_t logical_ids = 0;              // kLogical: IDs whose tick was ahead of the clock
  std::uint64_t logical_borrows = 0;          // kLogical: ticks taken early because a tick was full
  std::uint64_t hwm_waits = 0;     // calls told to retry: the tick was past the durable HWM
  std::uint64_t hwm_refusals = 0;  // calls refused: the last HWM write failed
  std::uint64_t hwm_writes = 0;    // durable HWM writes completed
  std::uint64_t hwm_write_failures = 0;
  std::uint64_t restart_waits = 0;    // calls told to retry: clock not yet past the restored HWM
  std::uint64_t lease_refusals = 0;   // calls refused: the worker-ID lease was not valid
  std::uint64_t lease_waits = 0;      // calls told to retry: the tick was past the lease's mark
  std::uint64_t lease_rebinds = 0;    // worker ID re-claimed (same or another ID)
  std::int64_t hwm_unix_ms = 0;       // gauge: the durable high-water mark
  std::int64_t last_id_unix_ms = 0;   // gauge: time field of the newest ID (0 before one)
  std::int64_t logical_ahead_ms = 0;  // gauge: how far that time is ahead of the clock
};

/// The store key of a sequence's high-water mark.
[[nodiscard]] std::string snowflake_hwm_key(std::string_view name);

/// "v=1 hwm_unix_ms=<ms> written_at_unix_ms=<ms>": the first ms of the highest tick any ID may
/// use, and the clock when the mark was written.
struct SnowflakeHwmRecord {
  std::int64_t hwm_unix_ms = 0;
  std::int64_t written_at_unix_ms = 0;
  friend bool operator==(const SnowflakeHwmRecord&, const SnowflakeHwmRecord&) = default;
};
[[nodiscard]] std::string encode_hwm(const SnowflakeHwmRecord& record);
[[nodiscard]] std::optional<SnowflakeHwmRecord> decode_hwm(std::string_view text);

/// Issues Snowflake IDs for one sequence and one worker ID: strictly increasing, never repeated,
/// even across restarts and a clock stepped back.
///
/// try_next() never blocks and never sleeps: when it cannot issue now (the tick's sequence is
/// used up, the clock is behind the last ID within what the policy tolerates, or the ID would
/// pass the durable high-water mark) it answers kRetryLater with the time to call again, so
/// callers on I/O threads await a timer. A clock regression the policy does not tolerate is an
/// error, never a duplicate.
///
/// Restarts: no ID is issued whose tick is past a durable high-water mark (HWM), a timestamp
/// kept `hwm_margin_ms` ahead of the clock in the store through the GroupCommitter, and raised
/// in the background when the newest ID comes within half the margin of it (or when the daemon
/// calls refresh()). open() resumes above the stored mark, so a new run never reuses a tick the
/// old one may have used: after a crash it waits up to the margin for the clock to pass it.
/// close() lowers the mark to the last tick actually used, so a clean restart barely waits.
///
/// Owned by a shared_ptr: a write in flight keeps the generator alive. HWM completions run on
/// the committer thread. Thread safety: all members may be called concurrently.
class SnowflakeGenerator : public std::enable_shared_from_this<SnowflakeGenerator> {
 public:
  /// Validates the layout and options (every problem in one kInvalidArgument message), reads
  /// the stored HWM, and durably writes a new one (blocks for one commit: start-up only).
  /// If the clock is behind the stored mark, the generator starts in the restored state: see
  /// try_next(). Storage errors are returned as they are.
  [[nodiscard]] static DetailedResult<std::shared_ptr<SnowflakeGenerator>> open(
      SnowflakeOptions options, CounterStore& store, GroupCommitter& committer, const Clock& clock);

  /// The next ID, or why not now. Errors: kRetryLater (with retry_at_unix_ms);
  /// SnowflakeErrc::kClockMovedBackwards (kFail: any regression behind the last tick; kWait:
  /// more than max_backward_ms; after a restart, the clock behind the previous run's last
  /// reading by more than that); kStorageFailed (the HWM write failed, within the backoff);
  /// kExhausted (the layout's time range is used up); kShuttingDown (after close());
  /// SnowflakeErrc::kWorkerLeaseLost (leased worker ID: the lease is not held, its window
  /// ended on this clock, or the clock reads before the last renewal).
  [[nodiscard]] SnowflakeNext try_next();

  /// Raises the durable HWM in the background when it is less than half the margin ahead of
  /// the newest tick or the clock. The daemon calls it every margin/4 or so, so that an idle
  /// generator does not make its next caller wait for a write. True when a write was submitted.
  bool refresh();

  /// Stops issuing (kShuttingDown) and durably lowers the HWM to the last tick used, so the
  /// next start waits at most one tick. Blocks for one commit: shutdown only, before the
  /// committer stops.
  [[nodiscard]] DetailedResult<void> close();

  [[nodiscard]] SnowflakeStats stats() const;
  [[nodiscard]] const std::string& name() const { return options_.name; }
  [[nodiscard]] const SnowflakeLayout& layout() const { return options_.layout; }
  /// The worker ID of the newest IDs (a leased one may change after a re-claim).
  [[nodiscard]] std::uint64_t worker_id() const;
  [[nodiscard]] ClockPolicy policy() const { return options_.policy; }
  /// The worker-ID lease this generator checks on every call; null for a configured worker ID.
  [[nodiscard]] const WorkerLease* lease() const { return options_.lease.get(); }

  SnowflakeGenerator(const SnowflakeGenerator&) = delete;
  SnowflakeGenerator& operator=(const SnowflakeGenerator&) = delete;

 private:
  struct Private {};

 public:
  /// Use open().
  SnowflakeGenerator(Private, SnowflakeOptions options, GroupCommitter& committer,
                     const Clock& clock);

 private:
  // A HWM write decided under the lock and submitted after it is released (a committer that
  // is stopping completes inline, and the completion takes the lock).
  struct HwmWrite {
    std::int64_t hwm_tick = 0;
    SnowflakeHwmRecord record;
  };
  // What one call decided, acted on outside the lock.
  struct Effects {
    std::optional<ClockEvent> event;
    std::optional<HwmWrite> write;
    std::string rebind_note;  // logged: the generator moved to a new lease generation
    std::uint64_t rebind_worker_id = 0;
  };

  // Members ending in _locked require mutex_.
  [[nodiscard]] SnowflakeNext next_locked(std::int64_t now, Effects& effects);
  /// Checks the lease (when there is one) and rebinds on a new generation; an error when no
  /// ID may be issued now.
  [[nodiscard]] std::optional<SnowflakeNext> check_lease_locked(std::int64_t now, Effects& effects);
  [[nodiscard]] SnowflakeNext behind_locked(std::int64_t now, std::int64_t previous_reading,
                                            Effects& effects);
  [[nodiscard]] SnowflakeNext issue_locked(std::int64_t tick, std::uint64_t sequence,
                                           std::int64_t now, Effects& effects);
  [[nodiscard]] ClockEvent event_locked(std::int64_t now, std::int64_t previous_reading,
                                        std::int64_t resume_at, bool refused) const;
  [[nodiscard]] bool in_backoff_locked(std::int64_t now) const;
  [[nodiscard]] std::int64_t hwm_target_locked(std::int64_t now_tick) const;
  /// Plans a write when the durable mark is less than half the margin ahead.
  void maybe_plan_hwm_locked(std::int64_t now, Effects& effects);
  /// Decides a new HWM (hwm_target_locked) unless one is in flight, the failure backoff runs,
  /// or it would not raise the mark.
  void plan_hwm_locked(std::int64_t now, Effects& effects);
  void submit(HwmWrite write);
  void on_hwm_written(std::int64_t hwm_tick, const DetailedResult<void>& result);
  void report(const ClockEvent& event) const;

  const SnowflakeOptions options_;
  const std::string hwm_key_;
  GroupCommitter& committer_;
  const Clock& clock_;
  const std::int64_t margin_ticks_;
  const std::uint64_t max_sequence_;
  const std::int64_t max_tick_;

  mutable std::mutex mutex_;
  std::uint64_t worker_id_ = 0;            // options_.worker_id, or the lease's
  std::uint64_t lease_generation_ = 0;     // the lease generation worker_id_ belongs to
  std::int64_t lease_issue_until_ms_ = 0;  // the lease's mark as of the last check
  std::int64_t last_tick_ = -1;  // tick of the newest ID (or the restored HWM); -1: none yet
  std::uint64_t last_sequence_ = 0;
  bool restored_ = false;  // last_tick_ is the previous run's HWM and no ID was issued since
  std::int64_t restored_reading_ms_ = 0;  // the previous run's last known clock reading
  std::int64_t last_reading_ms_ = 0;      // the previous clock reading (regression detection)
  std::int64_t durable_hwm_tick_ = -1;    // IDs may use ticks <= this
  std::int64_t submitted_hwm_tick_ = -1;  // highest mark submitted (durable or in flight)
  bool write_in_flight_ = false;
  std::optional<Error> write_failure_;
  std::int64_t write_failed_at_ms_ = 0;
  bool closed_ = false;
  SnowflakeStats stats_;
};

}  // namespace ticketd

template <>
struct boost::system::is_error_code_enum<ticketd::SnowflakeErrc> : std::true_type {};
