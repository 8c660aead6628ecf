// The DDL and administration of sequences of every kind: what load() finds in the store, what
// the config makes exist, create and drop, tombstones, and the restore floor of a restored
// store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/base/result.h"
#include "server/core/audit.h"
#include "server/core/kind_context.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_record.h"
#include "server/core/sequence_registry.h"
#include "server/core/ticket_sequence.h"

namespace ticketd {

using DoneCallback = std::function<void(DetailedResult<void>)>;

/// How create() treats a name that exists or existed.
struct CreateOptions {
  bool if_not_exists = false;  // an existing live sequence is success, not kAlreadyExists
  bool force = false;          // ignore a tombstone: may re-issue old values (logged)
};

/// Creates, configures and drops sequences in the registry, and keeps what outlives a sequence
/// in the store: tombstones (the highest value a dropped name may have issued), which names
/// have a stored definition, and the restore floor. A create or drop claims its name in the
/// registry first; what is kept per name changes only under that claim. Thread safety: create,
/// drop and ensure_configured may be called concurrently; load(), configure(), add*(),
/// accept_not_in_backup() and open_deferred_definitions() run before serving.
class SequenceDdl {
 public:
  SequenceDdl(SequenceRegistry& registry, KindContext& kinds, const AuditTrail& audit)
      : registry_(registry), kinds_(kinds), audit_(audit) {}

  /// Reads every sequence from the store: ticket sequences, tombstones, and the definitions of
  /// sequences of other kinds created at run time (Snowflake ones are opened later, by
  /// open_deferred_definitions(), once the worker ID is known).
  [[nodiscard]] DetailedResult<void> load();
  /// Opens the sequences load() found defined in the store whose kind opens once the worker ID
  /// is known (Snowflake; start-up only), unless the config serves the name.
  [[nodiscard]] DetailedResult<void> open_deferred_definitions();

  /// Makes a configured ticket sequence exist (start-up and reload): created when missing
  /// (above any tombstone); when it exists, TicketSequence::apply_config applies it: a larger
  /// start moves it forward, max/cache apply to future values, and a changed increment/offset
  /// is refused (kInvalidArgument naming `ticketd restride`) unless a restride set the stored
  /// grid (kept, with a warning) or `force.grid` (audited), and a higher max_rate is refused
  /// unless `force.rate_raise` (audited). Blocks until durable: never on an I/O thread.
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
  /// Names the operator says never existed after the backup this store was restored from
  /// (--force-not-in-backup): created in this run without the restore floor (audited).
  void accept_not_in_backup(std::vector<std::string> names) { not_in_backup_ = std::move(names); }

  /// Creates a sequence of any kind. Ticket: durable before `done`, above any tombstone.
  /// Gapless, Snowflake, UUIDv7, ULID (with runtime kinds enabled): opened on the background
  /// thread, and their definition is durable before `done`; a gapless sequence starts above
  /// any tombstone of its name.
  void create(const SequenceDefinition& definition, CreateOptions options, DoneCallback done);
  /// Drops a sequence of any kind. Counters (ticket, gapless) and Snowflake sequences leave a
  /// tombstone with the highest value they may have issued, so a new sequence of that name
  /// starts above it. A sequence from the config file comes back at the next start.
  void drop(std::string_view name, DoneCallback done);

 private:
  [[nodiscard]] DetailedResult<SequenceHandle> open_definition(
      const SequenceDefinition& d, std::optional<std::uint64_t> tombstone = std::nullopt);
  void create_ticket(const SequenceSpec& spec, CreateOptions options, DoneCallback done);
  /// The ceiling a new ticket sequence starts above (its tombstone, the restore floor), or
  /// why it cannot start. Under the name's claim.
  [[nodiscard]] DetailedResult<std::uint64_t> ticket_ceiling(const SequenceSpec& spec,
                                                             CreateOptions options) const;
  /// Gapless, Snowflake, UUIDv7, ULID: runs on the background thread, under the name's claim.
  [[nodiscard]] DetailedResult<void> create_other(SequenceDefinition definition, bool force);
  /// Whether --force-not-in-backup names `name` (audited when it does).
  [[nodiscard]] bool floor_waived(const std::string& name) const;
  /// Why a sequence without stored state may not be added now (a restore floor, not forced),
  /// or nullopt.
  [[nodiscard]] std::optional<Error> unstored_refused(const std::string& name, SequenceKind kind,
                                                      bool force) const;

  SequenceRegistry& registry_;
  KindContext& kinds_;
  const AuditTrail& audit_;
  mutable std::mutex mutex_;  // guards tombstones_, defined_ and restore_floor_
  // Last ceilings of dropped names (mirrors "tomb/" keys), so create() needs no read I/O.
  std::unordered_map<std::string, std::uint64_t> tombstones_;
  // Names with a stored definition ("def/"), so a drop deletes it.
  std::unordered_set<std::string> defined_;
  // What a restore of this store could not see ("restore/floor"): a ticket sequence of a name
  // with neither a record nor a tombstone is created above it, a new gapless one refused.
  std::optional<RestoreFloor> restore_floor_;
  std::vector<std::string> not_in_backup_;  // set before load(), then read only
  // Definitions load() found of kinds that open after the worker ID is known.
  std::vector<SequenceDefinition> deferred_;
};

}  // namespace ticketd
