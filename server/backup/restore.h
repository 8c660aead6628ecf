// What a safe restore changes in a copy of a backup before ticketd may start on it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/backup/manifest.h"
#include "server/base/result.h"
#include "storage/counter_store.h"

namespace ticketd::backup {

/// How far a ticket sequence's ceiling moves past the backup's, counted in values of the
/// sequence (a skip of N moves the ceiling by N × increment, then up onto the grid).
/// kBound ("auto", the default): max_rate × (seconds since the backup + the rate window + a
/// clock margin) values, the most the sequence can have issued since (TicketSequence enforces
/// max_rate on every ceiling raise); refused when it does not fit below max_value.
/// kPeak ("peak", warned): max(2 × peak rate × seconds since the backup, 2 × cache) values, the
/// peak being the busiest minute of the 30 days before the backup: an estimate, not a bound.
/// kValues: exactly `values`.
struct SkipAhead {
  enum class Mode { kBound, kPeak, kValues };
  Mode mode = Mode::kBound;
  std::uint64_t values = 0;
};

/// The margin kBound adds for a restore host's clock that runs behind the backup's.
inline constexpr std::int64_t kRestoreClockMarginMs = 60000;

struct RestoreOptions {
  SkipAhead skip;                                     // every ticket sequence and tombstone
  std::map<std::string, std::uint64_t> skip_by_name;  // NAME=N overrides `skip`
  /// Gapless sequences: the last number the application used (read from its own table); the
  /// restored sequence continues at exactly the next number of its grid. 0, or any number below
  /// the first, means none was used.
  std::map<std::string, std::uint64_t> gapless_last_used;
  std::int64_t now_ms = 0;
};

/// One restore action, for the command's output and the audit trail.
struct RestoreStep {
  std::string sequence;
  std::string event;   // "sequence_restored_skip" | "gapless_restored" | "ulid_mark_raised" |
                       // "restored_as_is"
  std::string detail;  // what changed and why, one line
};

/// The `sequence` of the step that records the store's restore floor (RestoreFloor).
inline constexpr std::string_view kRestoreFloorStep = "(names not in the backup)";

struct RestorePlan {
  std::vector<Mutation> mutations;  // one atomic commit
  std::vector<RestoreStep> steps;   // by name
};

/// Plans the restore of `manifest` into `restored` (a fresh copy of the backup, opened). Reads
/// the copy's ticket records, tombstones and gapless state and returns what to write:
/// - ticket sequences and tombstones: ceilings raised by the skip, onto the grid; an explicit
///   skip stops at max_value (the sequence is then exhausted, and the step says so), the
///   bound (auto) that does not fit below max_value is refused, asking for a number;
/// - gapless sequences: only with a stated last number, which must be on the grid and at or above
///   every number the backup shows committed; the state becomes "everything up to it committed",
///   reservations dropped, voids kept;
/// - ULID sequences: each mark raised by the backup's age (IDs resume above it);
/// - Snowflake and UUIDv7 sequences and worker leases: as they are (time-based; a worker ID's
///   high-water mark still holds);
/// - names the backup does not hold: the store's RestoreFloor grows by the backup's age plus the
///   clock margin (auto, peak) or by the stated values (--skip-ahead N).
/// Every refusal is listed at once (a gapless sequence without a stated number, a stated number
/// that would reuse or skip numbers, names the backup does not hold).
[[nodiscard]] DetailedResult<RestorePlan> plan_restore(const BackupManifest& manifest,
                                                       CounterStore& restored,
                                                       const RestoreOptions& options);

}  // namespace ticketd::backup
