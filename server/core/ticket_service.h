// The sequence engine: one registry of sequences of every kind, their creation, drop and
// allocation.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "server/base/result.h"
#include "server/base/string_hash.h"
#include "server/core/audit.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/kind_module.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_handle.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_sequence.h"
#include "server/core/timer_queue.h"
#include "storage/counter_store.h"

namespace ticketd {

using DoneCallback = std::function<void(DetailedResult<void>)>;

/// How create() treats a name that exists or existed.
struct CreateOptions {
  bool if_not_exists = false;  // an existing live sequence is success, not kAlreadyExists
  bool force = false;          // ignore a tombstone: may re-issue old values (logged)
};

/// The one registry of sequences, whatever their kind: find / list / describe / create / drop
/// for all four, and allocation. Knows nothing of sockets, protocols or the storage engine
/// behind CounterStore. All durable writes go through the GroupCommitter; callbacks run inline,
/// on the committer thread or on the RuntimeKinds background thread. Thread safety: all members
/// may be called concurrently, except load(), enable_runtime_kinds() and the add_*() methods,
/// which run before serving.
class TicketService {
 public:
  /// `clock` times each ticket sequence's max_rate allowance.
  TicketService(CounterStore& store, GroupCommitter& committer,
                const Clock& clock = system_clock());

  /// Lets create() and load() build gapless, Snowflake and UUIDv7 sequences (before load()).
  void enable_runtime_kinds(RuntimeKinds kinds);

  /// Where administrative changes are reported once durable (before serving): every create
  /// (forced re-creates apart), drop and forward move (SETVAL, ALTER TABLE AUTO_INCREMENT).
  /// Without a sink they are info log lines.
  void set_audit(AuditSink sink) { audit_ = std::move(sink); }

  /// Reads every sequence from the store: ticket sequences, tombstones, and the definitions of
  /// sequences of other kinds created at run time (Snowflake ones are opened later, by
  /// open_deferred_definitions(), once the worker ID is known).
  [[nodiscard]] DetailedResult<void> load();
  /// Opens the sequences load() found defined in the store whose kind opens once the worker ID
  /// is known (Snowflake; start-up only), unless the config serves the name.
  [[nodiscard]] DetailedResult<void> open_deferred_definitions();

  /// Makes a configured sequence exist (start-up and reload): created when missing (above any
  /// tombstone); when it exists, TicketSequence::apply_config applies it: a larger start moves
  /// it forward, max/cache apply to future values, and a changed increment/offset is refused
  /// (kInvalidArgument naming `ticketd restride`) unless a restride set the stored grid (kept,
  /// with a warning) or `force.grid` (audited), and a higher max_rate is refused unless
  /// `force.rate_raise` (audited). Blocks until durable: never on an I/O thread.
  [[nodiscard]] DetailedResult<void> ensure_configured(const SequenceSpec& spec,
                                                       ConfigForce force = {});

  /// Makes a configured sequence of any kind exist (start-up only, before serving): a ticket
  /// sequence through ensure_configured(), any other kind opened by its module and added.
  /// Kinds that open after the worker ID is known are left to their caller (Snowflake:
  /// add_snowflake()).
  [[nodiscard]] DetailedResult<void> configure(const SequenceDefinition& definition,
                                               ConfigForce force = {});
  /// Serves an opened sequence of a kind other than ticket under `name` (start-up only, before
  /// serving). A name already served with another kind is kAlreadyExists; the same kind (a
  /// definition stored earlier) is replaced by the config's. A sequence without stored state
  /// in a store restored from a backup (a restore floor) is refused unless `force`: it may
  /// have issued values after the backup that this store cannot see (docs/durability.md).
  [[nodiscard]] DetailedResult<void> add(const std::string& name, SequenceHandle handle,
                                         bool force = false);
  /// add() for a Snowflake generator; its "retry later" answers are retried on `retries`
  /// unless enable_runtime_kinds() gave a queue first, so callers never wait on a timer of
  /// their own.
  [[nodiscard]] DetailedResult<void> add_snowflake(std::shared_ptr<SnowflakeGenerator> generator,
                                                   TimerQueue& retries, const Clock& clock);
  [[nodiscard]] DetailedResult<void> add_gapless(std::shared_ptr<GaplessSequence> sequence,
                                                 bool force = false) {
    const std::string name = sequence->spec().name;
    return add(name, std::move(sequence), force);
  }
  [[nodiscard]] DetailedResult<void> add_uuidv7(std::string name,
                                                std::shared_ptr<UuidV7Generator> generator) {
    return add(name, std::move(generator));
  }
  /// Names the operator says never existed after the backup this store was restored from
  /// (--force-not-in-backup): created in this run without the restore floor (audited).
  void accept_not_in_backup(std::vector<std::string> names);

  [[nodiscard]] std::optional<SequenceHandle> find_any(std::string_view name) const;
  [[nodiscard]] std::optional<SequenceKind> kind_of(std::string_view name) const;
  [[nodiscard]] std::shared_ptr<TicketSequence> find(std::string_view name) const;
  [[nodiscard]] std::shared_ptr<GaplessSequence> find_gapless(std::string_view name) const;
  [[nodiscard]] std::shared_ptr<SnowflakeGenerator> find_snowflake(std::string_view name) const;
  /// UUIDv7 IDs are UUIDs, not integers: front ends take them from here; next() and blocks
  /// refuse the name (kWrongKind, pointing to the UUID interfaces).
  [[nodiscard]] std::shared_ptr<UuidV7Generator> find_uuidv7(std::string_view name) const;
  [[nodiscard]] bool exists(std::string_view name) const { return find_any(name).has_value(); }

  /// Ticket sequences, by name (metrics and tools).
  [[nodiscard]] std::vector<SequenceInfo> list() const;
  [[nodiscard]] std::vector<std::shared_ptr<SnowflakeGenerator>> snowflakes() const;
  /// The sequences whose kind keeps deadlines for its callers (KindModule::keeps_deadlines):
  /// read by the 20 ms expiry task each round (with etcd, sequences appear once this instance
  /// leads) and at shutdown.
  [[nodiscard]] std::vector<SequenceHandle> with_deadlines() const;
  /// Every sequence of every kind, by name (background upkeep and shutdown iterate over these
  /// through their kinds' modules).
  [[nodiscard]] std::vector<std::pair<std::string, SequenceHandle>> handles() const;
  /// Every sequence of every kind, by name.
  [[nodiscard]] std::vector<SequenceDescription> describe_all() const;
  [[nodiscard]] std::optional<SequenceDescription> describe(std::string_view name) const;

  /// Creates a sequence of any kind. Ticket: durable before `done`, above any tombstone.
  /// Gapless, Snowflake, UUIDv7 (with enable_runtime_kinds): opened on the background thread,
  /// and their definition is durable before `done`; a gapless sequence starts above any
  /// tombstone of its name.
  void create(const SequenceDefinition& definition, CreateOptions options, DoneCallback done);
  void create(const SequenceSpec& spec, CreateOptions options, DoneCallback done) {
    create(SequenceDefinition{spec, {}}, options, std::move(done));
  }
  /// Drops a sequence of any kind. Counters (ticket, gapless) and Snowflake sequences leave a
  /// tombstone with the highest value they may have issued, so a new sequence of that name
  /// starts above it. A sequence from the config file comes back at the next start.
  void drop(std::string_view name, DoneCallback done);

  /// `count` IDs of a sequence whose IDs are text (UUIDv7, ULID), at most kMaxIdsPerCall; a
  /// kind of integers refuses (kWrongKind). May complete inline.
  void next_text(std::string_view name, std::uint64_t count, TextForm form, TextIdsCallback done);
  /// `count` values of sequence `name` as one Block (at most kMaxIdsPerCall).
  void next(std::string_view name, std::uint64_t count, BlockCallback done);
  /// `count` values of ticket sequence `name`, with `record(block)` written in the same atomic
  /// commit as the ceiling that covers them (TicketSequence::take_recorded): hi-lo leases.
  /// The other kinds refuse blocks (kWrongKind).
  void next_recorded(std::string_view name, std::uint64_t count, BlockRecorder record,
                     BlockCallback done);
  void advance_to(std::string_view name, std::uint64_t value, BlockCallback done);
  /// Marks every value up to `last_used` as used (SETVAL): see TicketSequence::advance_past.
  void advance_past(std::string_view name, std::uint64_t last_used, BlockCallback done);
  /// Fences a ticket sequence before a restride (TicketSequence::set_fence); audited.
  void set_fence(std::string_view name, std::uint64_t fence, BlockCallback done);
  /// Moves a ticket sequence onto a new increment/offset grid above a floor
  /// (TicketSequence::restride); audited. The one way to change the grid of a sequence that
  /// other servers share a value space with: see docs/restride.md.
  void restride(std::string_view name, const Restride& r, BlockCallback done);

 private:
  [[nodiscard]] static Error unknown(std::string_view name);
  /// kWrongKind for a block (or any recorded take) asked of a sequence that is not a ticket
  /// sequence, or unknown(name) when there is none.
  [[nodiscard]] Error not_a_ticket_sequence(std::string_view name) const;
  [[nodiscard]] static std::optional<Error> check_count(std::uint64_t count);
  /// kWrongKind for a fence or restride of another kind, or unknown(name).
  [[nodiscard]] Error not_restridable(std::string_view name) const;
  void create_ticket(const SequenceSpec& spec, CreateOptions options, DoneCallback done);
  /// Under mutex_: the ceiling a new ticket sequence starts above, or why it cannot start.
  [[nodiscard]] DetailedResult<std::uint64_t> ticket_ceiling_locked(const SequenceSpec& spec,
                                                                    CreateOptions options) const;
  /// Gapless, Snowflake and UUIDv7: runs on the background thread.
  [[nodiscard]] DetailedResult<void> create_other(SequenceDefinition definition, bool force);
  [[nodiscard]] DetailedResult<SequenceHandle> open_definition(
      const SequenceDefinition& d, std::optional<std::uint64_t> tombstone = std::nullopt);
  /// What a kind's module borrows for one call.
  [[nodiscard]] KindEnv kind_env() const {
    return KindEnv{store_, committer_, clock_, runtime_,
                   retry_timers_.load(std::memory_order_acquire)};
  }
  [[nodiscard]] SequenceDescription describe_handle(const std::string& name,
                                                    const SequenceHandle& handle) const;
  /// Under mutex_: claims `name` for a DDL (kRetryLater when another one runs).
  [[nodiscard]] std::optional<Error> claim_ddl_locked(const std::string& name);
  /// Whether --force-not-in-backup names `name` (audited when it does).
  [[nodiscard]] bool floor_waived(const std::string& name) const;
  /// Why a sequence without stored state may not be added now (a restore floor, not forced),
  /// or nullopt.
  [[nodiscard]] std::optional<Error> unstored_refused(const std::string& name, SequenceKind kind,
                                                      bool force) const;

  // Lets find() look names up by string_view, without building a std::string per request.

  CounterStore& store_;
  GroupCommitter& committer_;
  const Clock& clock_;
  RuntimeKinds runtime_;
  mutable std::shared_mutex mutex_;
  StringMap<SequenceHandle> sequences_;
  // Names with a create/drop in flight, so two DDLs on one name never interleave.
  std::unordered_map<std::string, bool> ddl_in_flight_;
  // Last ceilings of dropped names (mirrors "tomb/" keys), so create() needs no read I/O.
  std::unordered_map<std::string, std::uint64_t> tombstones_;
  // What a restore of this store could not see ("restore/floor"): a ticket sequence of a name
  // with neither a record nor a tombstone is created above it, a new gapless one refused.
  std::optional<RestoreFloor> restore_floor_;
  std::vector<std::string> not_in_backup_;  // set before load(), then read only
  // Names with a stored definition ("def/"), so a drop deletes it.
  std::unordered_map<std::string, bool> defined_;
  // Definitions load() found of kinds that open after the worker ID is known.
  std::vector<SequenceDefinition> deferred_;
  // Where "retry later" answers wait, and the clock that times them: one pair for every
  // sequence, the first one given (enable_runtime_kinds or add_snowflake). Set once and read
  // without the lock.
  void use_retry_timers(TimerQueue* timers, const Clock* clock);
  std::atomic<const RetryTimers*> retry_timers_{nullptr};
  void advance(std::string_view name, std::uint64_t value, bool past, BlockCallback done);
  // One audit event about `sequence` (its field), or an info line without a sink.
  void audit(std::string_view event, std::string_view sequence, const std::string& detail) const;
  AuditSink audit_;
  std::unique_ptr<RetryTimers> retry_timers_storage_;
};

/// Blocking helpers for start-up, tools, the crash-test child and benchmarks. Never call them
/// on an I/O thread.
[[nodiscard]] DetailedResult<Block> next_and_wait(TicketService& service, std::string_view name,
                                                  std::uint64_t count);
[[nodiscard]] DetailedResult<Block> take_and_wait(TicketSequence& sequence, std::uint64_t count);

}  // namespace ticketd
