// Gapless sequences: numbers are reserved, then committed or released, and the committed
// numbers always form one unbroken run from the first value.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/gapless_options.h"
#include "server/core/gapless_records.h"
#include "server/core/group_committer.h"
#include "server/core/sequence_spec.h"
#include "storage/counter_store.h"

namespace ticketd {

/// A point-in-time view for the audit endpoint, `ticketd verify` and tests.
struct GaplessAudit {
  struct Pending {
    Reservation reservation;
    // "reserving" | "held" | "committing" | "releasing" | "in_doubt" (a commit whose write's
    // outcome is unknown: ticketd writes it again until it lands)
    std::string_view state;
  };
  SequenceSpec spec;
  GaplessOrder order = GaplessOrder::kRelaxed;
  std::optional<std::uint64_t> committed_through;  // every number up to it is committed
  std::optional<std::uint64_t> high;               // the largest number ever handed out
  std::uint64_t committed = 0;                     // committed numbers (voids included)
  std::vector<Pending> pending;                    // in number order
  std::vector<std::uint64_t> released;             // awaiting reuse, lowest first
  std::map<std::uint64_t, std::string> voids;      // number → reason
  /// Numbers in {first … high} that are neither committed, reserved nor awaiting reuse. The
  /// engine never makes one; the audit computes it rather than assuming it.
  std::vector<std::uint64_t> holes;
  std::size_t waiting = 0;  // strict: callers queued for their turn
  std::uint64_t commits = 0, voided = 0, releases = 0, expiries = 0, queue_timeouts = 0;
};

/// What a metrics scrape reads: counts only, so it costs no copy of any list.
struct GaplessCounts {
  std::size_t pending = 0;  // reservations in flight (reserving, held, committing, releasing)
  std::size_t waiting = 0;  // strict: callers queued for their turn
  std::uint64_t commits = 0, voided = 0, releases = 0, expiries = 0, queue_timeouts = 0;
};

/// kDurable: the reservation is synced before the caller gets its number and survives a
/// restart (HTTP reservations, which a client may commit after ticketd restarted).
/// kSession: held in memory only, for callers whose reservation ends with the server anyway: a
/// MySQL transaction dies with its connection when ticketd dies, and rolls back, so its number
/// is free again after a restart either way. It saves one sync per number; COMMIT is synced
/// before its OK exactly as for durable reservations.
enum class ReservationScope { kDurable, kSession };

using ReservationCallback = std::function<void(DetailedResult<Reservation>)>;
using GaplessDone = std::function<void(DetailedResult<void>)>;

/// One `kind: gapless` sequence.
///
/// Invariant: committed ∪ reserved ∪ released-awaiting-reuse = {first … high}, the three
/// disjoint, and released numbers are handed out (lowest first) before any new number. A
/// number reaches a caller only after its reservation is durable; a commit is durable before
/// its callback; so after a crash no acknowledged commit is lost and every number is either
/// committed, still reserved (it expires by its TTL or can be committed) or free again.
///
/// Store layout under "gapless/<name>/": "f" = every number below it is committed; "c/<n>" = n
/// committed (above f); "r/<n>" = n reserved (id, expiry, holder); "v/<n>" = n voided, with its
/// reason (kept forever). Each state change is one atomic commit through the GroupCommitter, so
/// concurrent callers share syncs. Folding "c/" keys into "f" is derived from durable facts
/// only and rides along with the next write.
///
/// Callbacks run inline or on the committer thread; they must not block. Thread safety: all
/// members may be called concurrently.
class GaplessSequence : public std::enable_shared_from_this<GaplessSequence> {
 public:
  /// Reads the sequence's state from `store` (blocking: start-up only).
  [[nodiscard]] static DetailedResult<std::shared_ptr<GaplessSequence>> open(
      const SequenceSpec& spec, const GaplessOptions& options, CounterStore& store,
      GroupCommitter& committer, const Clock& clock);

  /// Reserves the lowest released number, else a new one. `ttl_ms` 0 means the default.
  void reserve(std::string holder, std::int64_t ttl_ms, ReservationCallback done,
               ReservationScope scope = ReservationScope::kDurable);
  /// Reserve and commit in one durable write (autocommit statements, POST …/next).
  void take(std::string holder, ReservationCallback done);
  void commit(std::string_view reservation_id, GaplessDone done);
  /// Commits the number as used-but-void: it stays in the audit with `reason` and is never
  /// handed out again.
  void commit_void(std::string_view reservation_id, std::string reason, GaplessDone done);
  /// Returns the number for reuse. Completes after the release is durable; the number is free
  /// for the next caller even if that write fails (the stale record then expires by its TTL).
  void release(std::string_view reservation_id, GaplessDone done);
  /// Fails every strict-order waiter with `error` (at shutdown, so no callback outlives the
  /// front ends' executors).
  void fail_waiters(const Error& error);

  /// Releases reservations whose TTL ran out, writes again the commits whose outcome is in
  /// doubt, and fails strict-order waiters whose wait ran out; returns how many it ended. The
  /// daemon calls it periodically; tests call it after moving a FakeClock.
  std::size_t expire_due();

  [[nodiscard]] GaplessAudit audit(std::size_t list_limit = 1000) const;
  [[nodiscard]] GaplessCounts counts() const;
  [[nodiscard]] const SequenceSpec& spec() const { return spec_; }
  [[nodiscard]] const GaplessOptions& options() const { return options_; }
  /// The frontier record while none is stored (a sequence that never issued a number). The
  /// registry writes it when it adds the sequence, so that even an unused sequence is durable
  /// state: an offline backup lists it and a restore asks for its last number used.
  [[nodiscard]] std::optional<Mutation> unstored_frontier() const;
  /// That record is durable.
  void frontier_stored();
  /// The next number a caller would get (the lowest released, else the next new one).
  [[nodiscard]] std::uint64_t next_value() const;

  GaplessSequence(const SequenceSpec& spec, const GaplessOptions& options,
                  GroupCommitter& committer, const Clock& clock);  // use open()

 private:
  enum class State { kReserving, kHeld, kCommitting, kReleasing, kInDoubt };
  struct Entry {
    Reservation reservation;
    State state = State::kReserving;
    bool durable = true;  // a record "r/<n>" was (or is being) written
    // A commit of this number was written with an unknown outcome (StorageErrc::
    // kOutcomeUnknown): it may be committed on disk, so it is never released or handed out
    // again; ticketd writes the same commit again (at each expiry pass, or when the holder
    // retries) until one lands. `void_reason` is that commit's.
    bool in_doubt = false;
    std::optional<std::string> void_reason;
  };
  struct Waiter {
    std::string holder;
    std::int64_t ttl_ms = 0;
    std::int64_t deadline_unix_ms = 0;
    bool commit_now = false;
    bool durable = true;
    ReservationCallback done;
  };
  using Deferred = std::vector<std::function<void()>>;

  [[nodiscard]] DetailedResult<void> load(CounterStore& store);
  void start(Waiter w);
  // Under mutex_: picks a number and submits its write; may queue work into `later`.
  void start_locked(Waiter w, Deferred& later);
  void finish(std::string_view reservation_id, std::optional<std::string> void_reason,
              GaplessDone done);
  void on_reserved(std::uint64_t number, bool commit_now, const DetailedResult<void>& r,
                   ReservationCallback done);
  void on_finished(std::uint64_t number, std::optional<std::string> void_reason,
                   const DetailedResult<void>& r, GaplessDone done);
  void on_released(std::uint64_t number, const DetailedResult<void>& r, GaplessDone done);
  [[nodiscard]] Error queue_timeout() const;
  // Under mutex_: starts queued strict-order callers while it is their turn.
  void admit_waiters_locked(Deferred& later);
  void release_locked(std::uint64_t number, GaplessDone done, Deferred& later);
  // Under mutex_: writes the commit of `number` (a void one with `void_reason`).
  void submit_finish_locked(std::uint64_t number, std::optional<std::string> void_reason,
                            GaplessDone done, Deferred& later);
  // Under mutex_: `e`'s commit may have applied; it waits in doubt for the next attempt.
  void mark_in_doubt_locked(std::uint64_t number, Entry& e, std::optional<std::string> reason);
  void mark_committed_locked(std::uint64_t number);
  // Under mutex_: submits `mutations` (plus any pending fold of "c/" keys into "f").
  void submit_locked(std::vector<Mutation> mutations, GroupCommitter::Done done, Deferred& later);
  [[nodiscard]] std::string new_id(std::uint64_t number);
  [[nodiscard]] std::string key(std::string_view kind, std::uint64_t number) const;
  [[nodiscard]] Entry* find_locked(std::string_view reservation_id, Error& error);

  const SequenceSpec spec_;
  const GaplessOptions options_;
  GroupCommitter& committer_;
  const Clock& clock_;
  const std::string prefix_;   // "gapless/<name>/"
  const std::uint64_t first_;  // the first value: start aligned to increment/offset

  mutable std::mutex mutex_;
  std::uint64_t first_open_;                 // every number below it is committed (durably)
  std::uint64_t next_new_;                   // the next number never handed out
  std::set<std::uint64_t> committed_above_;  // durably committed numbers > first_open_
  std::map<std::uint64_t, Entry> entries_;   // reserved numbers
  std::set<std::pair<std::int64_t, std::uint64_t>> expiry_;  // (expires_at, number), held ones
  std::set<std::uint64_t> released_;
  std::map<std::uint64_t, std::string> voids_;
  std::deque<Waiter> waiters_;             // strict order only
  std::uint64_t disk_first_open_;          // "f" as stored
  bool f_written_ = false;                 // "f" exists on disk
  std::vector<std::string> fold_deletes_;  // "c/" keys folded into first_open_ in memory
  std::uint64_t id_nonce_;
  std::uint64_t id_counter_ = 0;
  std::uint64_t commits_ = 0, voided_ = 0, releases_ = 0, expiries_ = 0, queue_timeouts_ = 0;
};

}  // namespace ticketd
