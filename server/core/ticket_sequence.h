// One ticket sequence: hands out values below a durable ceiling, raising it through group commit.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/sequence_record.h"
#include "server/core/sequence_spec.h"

namespace ticketd {

using BlockCallback = std::function<void(DetailedResult<Block>)>;
/// Builds a record of a block that must land in the same atomic write as the ceiling that
/// covers it (a hi-lo lease record). Called once, under the sequence's lock: it must be short.
using BlockRecorder = std::function<Mutation(const Block&)>;

/// Smallest value >= v that is ≡ offset (mod increment); may exceed 2^64-1, hence 128 bits.
[[nodiscard]] unsigned __int128 align_up(unsigned __int128 v, std::uint64_t increment,
                                         std::uint64_t offset);

/// Point-in-time view of a sequence, for admin APIs and metrics.
struct SequenceInfo {
  SequenceSpec spec;
  std::uint64_t next_value = 0;  // the value the next call would get (0 when exhausted)
  bool exhausted = false;
  std::uint64_t durable_ceiling = 0;
  std::uint64_t issued = 0;     // values issued since the first value of the sequence
  std::uint64_t remaining = 0;  // values left before max_value
  /// Values this process handed out (takes and blocks, not SETVAL-style advances): what the
  /// issue-rate tracker measures.
  std::uint64_t handed_out = 0;
  /// Highest durable ceiling written or in flight: every value ever issued is at or below it,
  /// and a fence or restride floor must not be below it.
  std::uint64_t highest_ceiling = 0;
  std::uint64_t fence = 0;        // 0: none (SequenceRecord::fence)
  bool restrided = false;         // the grid was set by a restride
  std::uint64_t rate_tat_us = 0;  // SequenceRecord::rate_tat_us, as of the last write started
};

/// A new grid for a ticket sequence (TicketSequence::restride): values ≡ offset (mod increment),
/// the first of them the first such value above `floor`.
struct Restride {
  std::uint64_t increment = 1;
  std::uint64_t offset = 1;
  std::uint64_t floor = 0;
};

/// What a config's settings did to a stored sequence (TicketSequence::apply_config).
/// What an operator's start-only flags let a config change in a stored sequence (each an
/// explicit, logged choice; a reload never carries them).
struct ConfigForce {
  bool grid = false;        // --force-grid-change: the config's increment/offset replace the grid
  bool rate_raise = false;  // --force-rate-raise: the config's higher max_rate applies
};

struct ConfigOutcome {
  bool changed = false;      // a durable write applied new settings
  bool grid_kept = false;    // the config names another grid; the restrided one was kept
  bool grid_forced = false;  // the config's grid replaced the stored one (a forced change)
  bool rate_raised = false;  // the config's higher max_rate applies (a forced change)
  SequenceSpec before;       // the settings before the change
  SequenceSpec after;        // the settings now in force
};
using ConfigCallback = std::function<void(DetailedResult<ConfigOutcome>)>;

/// Allocator for one `kind: ticket` sequence.
///
/// A value is handed out only when it is <= the durable ceiling, i.e. when a synced commit has
/// already recorded that values up to it may be in use. When a request does not fit under the
/// ceiling it waits while one commit raises the ceiling far enough for every waiter plus `cache`
/// values ahead; requests arriving meanwhile queue behind it, in order, so the sequence stays
/// strictly increasing. A failed commit fails every waiter and leaves the ceiling unchanged.
/// When less than half the cache is left, a write raising the ceiling by `cache` values starts
/// in the background, so a steady caller rarely waits for a sync.
///
/// Every ceiling raise is held to the spec's max_rate: the values the takes and prefetches of all
/// writes add, over any interval, stay within max_rate × its length plus one burst of
/// rate_window_us() (GCRA, its state kept in the sequence record, so a restart does not refill
/// it). A take that would pass it fails with kRetryLater and nothing is issued for it. That
/// bound is what lets a restore skip far enough (backup::plan_restore). Forward moves
/// (advance_to, advance_past, a restride's floor) are operator actions, not issue rate: they are
/// not counted.
///
/// Callbacks run either inline (the fast path, on the caller's thread) or on the committer
/// thread. Thread safety: all members may be called concurrently.
class TicketSequence : public std::enable_shared_from_this<TicketSequence> {
 public:
  /// `record.ceiling` is the durable ceiling read from the store (or the initial one). Always
  /// owned by a shared_ptr: a commit in flight keeps the sequence alive.
  TicketSequence(SequenceRecord record, GroupCommitter& committer,
                 const Clock& clock = system_clock());

  /// `count` consecutive values of the sequence (count >= 1), as one Block.
  void take(std::uint64_t count, BlockCallback done);
  /// Like take(), and `record(block)` is written in the same atomic commit as the ceiling that
  /// covers the block (or alone, when the block is already under a synced ceiling and another
  /// write is in flight): `done` gets the block only once both are durable, so a block is never
  /// handed out unrecorded and a leased block that passes the ceiling costs one synced write.
  /// If that write fails the block's values are never handed out.
  void take_recorded(std::uint64_t count, BlockRecorder record, BlockCallback done);
  /// The cached path alone: the Block when it is already covered by the durable ceiling (and no
  /// one is queued), nullopt when the caller must use take(). No allocation, no callback.
  [[nodiscard]] std::optional<Block> try_take(std::uint64_t count);
  /// Moves the next value forward to at least `value`, durably; never backwards. Completes with
  /// the Block {next value, step, 0}.
  void advance_to(std::uint64_t value, BlockCallback done);
  /// Marks every value up to `last_used` as used, durably: the next value is the first one above
  /// it. `last_used` may be max_value itself, which exhausts the sequence (MariaDB's
  /// SETVAL(s, max_value)); only a value above max_value is refused.
  void advance_past(std::uint64_t last_used, BlockCallback done);
  /// Applies a config's settings to the stored sequence, decided and queued under the
  /// sequence's lock, so that no fence, restride or other config change interleaves with it
  /// (while one of them is in flight this is kRetryLater). A larger start moves the next value
  /// forward, max_value, cache and max_rate apply to future values. A grid (increment/offset) that
  /// differs from the stored one is never applied by a config: refused (kInvalidArgument,
  /// naming `ticketd restride`), kept when a restride set the stored grid (grid_kept), and
  /// refused even with `force.grid` while a fence holds the grid; `force.grid` (an explicit,
  /// logged operator choice) moves an unfenced grid above every ceiling written or in flight.
  /// A higher max_rate is refused unless `force.rate_raise`: a restore bounds what was issued
  /// since a backup by the rate the backup recorded (docs/durability.md); a lower one applies.
  /// Like a restride, the change rides a synced write that every take queues behind: nothing
  /// is issued under the new settings before it is durable, and a failed write restores the
  /// old settings and cached values. `done` runs inline when nothing changes.
  void apply_config(const SequenceSpec& configured, ConfigForce force, ConfigCallback done);
  /// What apply_config(configured, {}) would refuse now, without applying anything (a
  /// reload checks every sequence before it changes any).
  [[nodiscard]] std::optional<Error> check_config(const SequenceSpec& configured) const;
  /// Durably limits the values of the current grid to `fence` (0 lifts it): nothing above it is
  /// issued until a restride, which lifts it. Refused (kInvalidArgument) when a ceiling already
  /// written or in flight is above `fence`: values up to it may be out. Completes with the Block
  /// {next value, step, 0} once the fence is synced.
  void set_fence(std::uint64_t fence, BlockCallback done);
  /// Moves the sequence, atomically and durably, onto a new grid: the next value is the first
  /// value ≡ r.offset (mod r.increment) above r.floor, the fence is lifted and the new grid is
  /// marked as set by a restride (it wins over a config's at start). Values cached under the old
  /// ceiling are abandoned. While the commit is in flight nothing is issued: takes queue behind
  /// it and are answered on the new grid. Refused when r.floor is below a ceiling written or in
  /// flight (a value above the floor may be out on the old grid), when no value is left below
  /// max_value, and while another restride or fence is in flight (kRetryLater). A failed commit
  /// leaves the old grid, fence and cached values as they were. Completes with the Block
  /// {first value of the new grid, increment, 0}.
  void restride(const Restride& r, BlockCallback done);

  /// Marks the sequence dropped (fails waiters) and returns the tombstone ceiling to persist.
  [[nodiscard]] std::uint64_t mark_dropped();

  [[nodiscard]] SequenceInfo info() const;
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  struct Waiter {
    std::uint64_t count;  // 0: only needs the ceiling to cover an advance
    BlockCallback done;
    BlockRecorder record;  // empty for a plain take
    // Set when the write that answers this waiter was submitted: its values were taken then
    // (so a record could go into that write), and it completes with that write's result.
    bool assigned = false;
    bool exhausted = false;     // assigned, but the block would pass max_value
    bool rate_limited = false;  // assigned, but the block would pass max_rate
    // Carries a settings change (fence, restride, config): answered only by the write that
    // takes the change, never by an earlier write that happens to cover its count of 0.
    bool carries_change = false;
    Block block{};
  };
  using Completion = std::pair<BlockCallback, DetailedResult<Block>>;

  // All *_locked members require mutex_.
  [[nodiscard]] bool fits_locked(std::uint64_t count) const;
  [[nodiscard]] Block issue_locked(std::uint64_t count);
  [[nodiscard]] bool exceeds_max_locked(std::uint64_t count) const;
  void enqueue_locked(Waiter w, std::unique_lock<std::mutex>& lock);
  void take_impl(std::uint64_t count, BlockRecorder record, BlockCallback done);
  void start_write_locked(std::unique_lock<std::mutex>& lock);
  // What the waiters queued for a write took when it started.
  struct WriteTake {
    unsigned __int128 needed = 0;  // the highest value the write's ceiling must cover
    std::uint64_t spent = 0;       // of the write's max_rate budget
    bool took_values = false;      // some waiter took values (next_ moved)
  };
  // Gives every queued waiter its answer, in queue order: its block (issued now, within
  // `budget`), exhausted or rate-limited; a waiter's record joins `mutations`.
  [[nodiscard]] WriteTake take_for_write_locked(std::uint64_t budget,
                                                std::vector<Mutation>& mutations);
  // The ceiling a write asks for: what its waiters need plus up to `cache` values ahead (a
  // prefetch when none waits), within the limit and never below highest_target_. Adds the
  // values it reaches ahead for to take.spent.
  [[nodiscard]] unsigned __int128 write_target_locked(WriteTake& take, std::uint64_t budget) const;
  // Charges max_rate's allowance for raising highest_target_ to `target`, keeping the old
  // arrival time in rollback_tat_us_ for a failed write.
  void charge_rate_locked(std::uint64_t spent, unsigned __int128 target, std::uint64_t now);
  void maybe_prefetch_locked(std::unique_lock<std::mutex>& lock);
  void on_written(std::uint64_t target, const DetailedResult<void>& result);
  // advance_to / advance_past: the next value becomes at least `next` (may be max_value + 1).
  void advance_locked(unsigned __int128 next, BlockCallback done,
                      std::unique_lock<std::mutex>& lock);
  [[nodiscard]] Error exhausted_error() const;
  [[nodiscard]] Error rate_error() const;
  // Values the next write may add under max_rate at `now_us` (GCRA: the allowance left before
  // rate_tat_us_ passes now + the window).
  [[nodiscard]] std::uint64_t rate_budget_locked(std::uint64_t now_us) const;
  // The clock the allowance runs on: monotonic, so a wall clock stepped back neither stalls
  // issuance nor, stepped forward, refills the allowance early.
  [[nodiscard]] std::uint64_t now_us() const;
  // The wall clock in microseconds (0 before 1970), what the record's arrival time is kept in.
  [[nodiscard]] std::uint64_t wall_now_us() const;
  // rate_tat_us_ as a wall-clock time, for the record (a restart's monotonic clock starts over).
  [[nodiscard]] std::uint64_t rate_tat_wall_us_locked() const;
  // The highest value the current grid may issue: max_value, or the fence below it.
  [[nodiscard]] std::uint64_t limit_locked() const;
  // Queues a count-0 waiter answered by the write that carries a settings change (set_fence,
  // restride, apply_config); grid_undo_ holds what to restore if that write fails.
  void change_grid_locked(BlockCallback done, std::unique_lock<std::mutex>& lock);
  // apply_config's decision: the settings to apply and what they do, or why not.
  [[nodiscard]] DetailedResult<std::pair<SequenceSpec, ConfigOutcome>> plan_config_locked(
      const SequenceSpec& configured, ConfigForce force) const;
  /// Why a fence, restride or config change cannot start now (dropped, or another one in
  /// flight); nullopt: it can.
  [[nodiscard]] std::optional<Error> grid_change_refused_locked() const;

  const std::string name_;
  GroupCommitter& committer_;
  const Clock& clock_;
  mutable std::mutex mutex_;
  SequenceSpec spec_;
  unsigned __int128 next_ = 0;         // next value to issue (may pass max: exhausted)
  std::uint64_t durable_ceiling_ = 0;  // highest value a synced commit allows
  std::uint64_t highest_target_ = 0;   // highest ceiling submitted (durable or in flight)
  bool write_in_flight_ = false;
  // With assigned blocks in the write in flight: the next value before they were taken, to
  // return to if the write fails (nothing else is handed out while they wait).
  std::optional<unsigned __int128> rollback_next_;
  bool spec_dirty_ = false;  // spec changed: the next write must carry it
  // The GCRA's theoretical arrival time on now_us()'s monotonic clock, as of the last write
  // started; the record keeps it as wall-clock time (rate_tat_wall_us_locked()).
  std::uint64_t rate_tat_us_ = 0;
  std::uint64_t rollback_tat_us_ = 0;  // before the write in flight, to return to if it fails
  std::uint64_t fence_ = 0;
  bool restrided_ = false;
  // A fence, restride or config change not yet durable: what to go back to if its write
  // fails, so a failed change never takes effect later with some other write.
  struct GridUndo {
    SequenceSpec spec;
    unsigned __int128 next = 0;
    std::uint64_t fence = 0;
    bool restrided = false;
    bool spec_dirty = false;
  };
  std::optional<GridUndo> grid_undo_;
  bool grid_change_in_write_ = false;  // the write in flight carries grid_undo_'s change
  bool dropped_ = false;
  std::uint64_t handed_out_ = 0;
  std::deque<Waiter> waiters_;
};

}  // namespace ticketd
