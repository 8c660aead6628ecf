#include "server/backup/restore.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "server/backup/kind_backup.h"
#include "server/base/exit_code.h"
#include "server/core/gapless_sequence.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_sequence.h"

namespace ticketd::backup {
namespace {

using u128 = unsigned __int128;

constexpr u128 kU64Max = UINT64_MAX;

}  // namespace

DetailedResult<RestorePlan> plan_restore(const BackupManifest& manifest, CounterStore& restored,
                                         const RestoreOptions& options) {
  RestorePlan plan;
  std::vector<std::string> refusals;
  std::set<std::string> known;
  for (const auto& s : manifest.sequences) known.insert(s.name);
  for (const auto& [name, _] : options.skip_by_name) {
    if (!known.contains(name)) {
      refusals.push_back("--skip-ahead " + name + ": the backup holds no sequence of that name");
    }
  }
  for (const auto& stated : options.gapless_last_used) {
    const std::string& name = stated.first;
    auto it = std::find_if(manifest.sequences.begin(), manifest.sequences.end(),
                           [&name](const auto& s) { return s.name == name; });
    if (it == manifest.sequences.end() || it->kind != SequenceKind::kGapless || it->tombstone) {
      refusals.push_back("--gapless " + name +
                         ": the backup holds no gapless sequence of that name");
    }
  }
  const std::int64_t elapsed_ms = std::max<std::int64_t>(0, options.now_ms - manifest.taken_at_ms);
  RestoreRun run(restored, options, elapsed_ms, plan, refusals);
  for (const auto& s : manifest.sequences) {
    if (auto r = kind_backup(s.kind).plan(s, run); !r) return r.error();
  }
  // Names the backup does not hold may have been created after it and issued values: the span
  // the backup cannot see (and an explicit skip) is added to the store's restore floor, which
  // such a name starts above when it is created (TicketService).
  auto prior = restored.get(kRestoreFloorKey);
  if (!prior) return prior.error();
  RestoreFloor floor;
  if (*prior) {
    auto decoded = decode_restore_floor(**prior);
    if (!decoded) return Error{StorageErrc::kCorruption, "the backup's restore floor: unreadable"};
    floor = *decoded;
  }
  const RestoreFloor before = floor;
  if (options.skip.mode == SkipAhead::Mode::kValues) {
    floor.values = static_cast<std::uint64_t>(
        std::min<u128>(u128{floor.values} + options.skip.values, kU64Max));
  } else {
    floor.span_ms = static_cast<std::uint64_t>(std::min<u128>(
        u128{floor.span_ms} + static_cast<std::uint64_t>(elapsed_ms) + kRestoreClockMarginMs,
        kU64Max));
  }
  if (floor != before) {
    plan.mutations.push_back(Mutation{std::string(kRestoreFloorKey), encode_restore_floor(floor)});
    plan.steps.push_back(
        {std::string(kRestoreFloorStep), "restore_floor",
         "a ticket sequence created later under a name this backup does not hold starts above "
         "what it can have issued in " +
             one_decimal(static_cast<double>(floor.span_ms) / 1000.0) + " s at its max_rate" +
             (floor.values != 0 ? " plus " + std::to_string(floor.values) + " values" : "") +
             "; a gapless one is refused unless forced"});
  }
  if (!refusals.empty()) {
    std::string message;
    for (const auto& r : refusals) message += (message.empty() ? "" : "\n") + r;
    return Error{ToolErrc::kRefused, message};
  }
  return plan;
}

}  // namespace ticketd::backup
