#include "server/backup/restore.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "server/base/exit_code.h"
#include "server/core/gapless_sequence.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_sequence.h"

namespace ticketd::backup {
namespace {

using u128 = unsigned __int128;

constexpr u128 kU64Max = UINT64_MAX;

std::string fixed1(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tombstone keeps no cache size: the default one (SequenceSpec's) stands in for it.
constexpr std::uint64_t kDefaultCacheForTombstones = 1000;

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
  const double elapsed_s = static_cast<double>(elapsed_ms) / 1000.0;

  // How many values to skip for a ticket sequence or tombstone, and the reason; `bound` when
  // the skip is auto's proven bound (which must fit below max_value).
  struct Skip {
    u128 values;
    std::string why;
    bool bound = false;
  };
  auto skip_for = [&](const BackedUpSequence& s, const SequenceSpec& spec) -> Skip {
    if (auto it = options.skip_by_name.find(s.name); it != options.skip_by_name.end()) {
      return {it->second, "--skip-ahead " + s.name + "=" + std::to_string(it->second)};
    }
    switch (options.skip.mode) {
      case SkipAhead::Mode::kValues:
        return {options.skip.values, "--skip-ahead " + std::to_string(options.skip.values)};
      case SkipAhead::Mode::kPeak: {
        const double per_second = static_cast<double>(s.peak_per_minute) / 60.0;
        const double by_rate = std::ceil(2.0 * per_second * elapsed_s);
        const u128 rate_values = by_rate >= 1.8e19 ? kU64Max : static_cast<u128>(by_rate);
        const u128 cache_values = u128{2} * spec.cache;
        return {std::max(rate_values, cache_values),
                "peak (an estimate, not a bound): max(2 x peak " + fixed1(per_second) + "/s x " +
                    fixed1(elapsed_s) + " s since the backup, 2 x cache " +
                    std::to_string(spec.cache) + ")"};
      }
      case SkipAhead::Mode::kBound:
        break;
    }
    // Values raised in any interval stay within max_rate x its length plus one window: the
    // time since the backup (with a margin for this host's clock) plus the window bounds them.
    // The same count a restore floor gives a name the backup did not hold.
    const u128 values = restore_floor_skip(
        RestoreFloor{.span_ms = static_cast<std::uint64_t>(elapsed_ms + kRestoreClockMarginMs)},
        spec);
    return {values,
            "auto: max_rate " + std::to_string(spec.max_rate) + "/s x (" + fixed1(elapsed_s) +
                " s since the backup + " + fixed1(static_cast<double>(rate_window_us(spec)) / 1e6) +
                " s window + " + std::to_string(kRestoreClockMarginMs / 1000) + " s clock margin)",
            true};
  };
  // The new ceiling: old + skip × increment, up onto the grid, at most max_value.
  struct Raised {
    std::uint64_t ceiling;
    bool exhausted;
  };
  auto raise = [](std::uint64_t ceiling, u128 skip, std::uint64_t increment, std::uint64_t offset,
                  std::uint64_t max_value) {
    const u128 target = align_up(u128{ceiling} + skip * increment, increment, offset);
    if (target >= max_value) return Raised{max_value, true};
    return Raised{static_cast<std::uint64_t>(target), false};
  };

  auto sequences = restored.scan(kSequencePrefix);
  if (!sequences) return sequences.error();
  std::map<std::string, SequenceRecord> records;
  for (const auto& [key, value] : *sequences) {
    const std::string name = key.substr(kSequencePrefix.size());
    auto r = decode_record(name, value);
    if (!r) return Error{StorageErrc::kCorruption, "ticket sequence '" + name + "': unreadable"};
    records.emplace(name, std::move(*r));
  }
  auto gapless = restored.scan(kGaplessPrefix);
  if (!gapless) return gapless.error();

  for (const auto& s : manifest.sequences) {
    if (s.kind == SequenceKind::kTicket && s.tombstone) {
      // A name re-created after the backup issues at most at the default max_rate.
      const auto skip = skip_for(s, SequenceSpec{.cache = kDefaultCacheForTombstones});
      const auto& why = skip.why;
      const auto r = raise(s.ceiling, skip.values, 1, 0, UINT64_MAX);
      plan.mutations.push_back(Mutation{tombstone_key(s.name), encode_tombstone(r.ceiling)});
      plan.steps.push_back({s.name, "tombstone_restored_skip",
                            "dropped name: ceiling " + std::to_string(s.ceiling) + " -> " +
                                std::to_string(r.ceiling) + " (" + why + ")"});
      continue;
    }
    if (s.kind == SequenceKind::kTicket) {
      auto it = records.find(s.name);
      if (it == records.end()) {
        refusals.push_back("ticket sequence '" + s.name +
                           "' is in the manifest but not in the backup's store");
        continue;
      }
      SequenceRecord rec = it->second;
      const auto skip = skip_for(s, rec.spec);
      const auto& why = skip.why;
      const auto r =
          raise(rec.ceiling, skip.values, rec.spec.increment, rec.spec.offset, rec.spec.max_value);
      if (r.exhausted && skip.bound) {
        refusals.push_back(
            "ticket sequence '" + s.name + "': --skip-ahead auto needs " +
            std::to_string(static_cast<std::uint64_t>(std::min(skip.values, kU64Max))) +
            " values (" + why + "), more than fit below its max_value " +
            std::to_string(rec.spec.max_value) + " from the backup's ceiling " +
            std::to_string(rec.ceiling) + ": give --skip-ahead " + s.name +
            "=N, N at least the values it issued since the backup (or lower its max_rate "
            "before the next backup)");
        continue;
      }
      const std::uint64_t before = rec.ceiling;
      rec.ceiling = std::max(rec.ceiling, r.ceiling);
      plan.mutations.push_back(Mutation{sequence_key(s.name), encode_record(rec)});
      std::string detail = "ceiling " + std::to_string(before) + " -> " +
                           std::to_string(rec.ceiling) + " (" + why + ")";
      if (r.exhausted) {
        detail += "; the skip reaches max_value " + std::to_string(rec.spec.max_value) +
                  ": the sequence is exhausted";
      } else {
        detail += "; next value " + std::to_string(rec.ceiling + rec.spec.increment);
      }
      plan.steps.push_back({s.name, "sequence_restored_skip", detail});
      continue;
    }
    if (s.kind == SequenceKind::kGapless && !s.tombstone) {
      auto stated = options.gapless_last_used.find(s.name);
      if (stated == options.gapless_last_used.end()) {
        refusals.push_back(
            "gapless sequence '" + s.name + "' needs --gapless " + s.name +
            "=N, N the last number the application used (a gapless sequence can neither skip "
            "numbers nor resume from the backup, which may reuse numbers issued since)" +
            (s.highest_committed ? "; the backup shows numbers up to " +
                                       std::to_string(*s.highest_committed) + " committed"
                                 : "; the backup shows no number committed"));
        continue;
      }
      if (!s.grid_known) {
        refusals.push_back("gapless sequence '" + s.name +
                           "': the backup does not record its grid");
        continue;
      }
      const std::uint64_t last = stated->second;
      const std::uint64_t first = s.start;
      const std::uint64_t step = s.increment;
      const bool none_used = last < first;
      if (!none_used && (last - first) % step != 0) {
        refusals.push_back("--gapless " + s.name + "=" + std::to_string(last) +
                           ": not a number of the sequence (first " + std::to_string(first) +
                           ", step " + std::to_string(step) + ")");
        continue;
      }
      if (s.highest_committed && (none_used || last < *s.highest_committed)) {
        refusals.push_back("--gapless " + s.name + "=" + std::to_string(last) +
                           ": the backup shows numbers up to " +
                           std::to_string(*s.highest_committed) +
                           " committed; continuing lower would issue them again");
        continue;
      }
      const u128 next = none_used ? u128{first} : u128{last} + step;
      if (next > kU64Max) {
        refusals.push_back("--gapless " + s.name + ": the next number passes 2^64-1");
        continue;
      }
      const std::string prefix = std::string(kGaplessPrefix) + s.name + "/";
      std::size_t dropped_reservations = 0;
      for (const auto& [key, value] : *gapless) {
        if (!key.starts_with(prefix)) continue;
        auto k = parse_gapless_key(std::string_view(key).substr(kGaplessPrefix.size()));
        if (!k || k->name != s.name) continue;
        if (k->kind == "c" || k->kind == "r") {
          dropped_reservations += k->kind == "r" ? 1 : 0;
          plan.mutations.push_back(Mutation{key, std::nullopt});
        }
      }
      plan.mutations.push_back(Mutation{
          prefix + "f",
          encode_frontier(GaplessFrontier{static_cast<std::uint64_t>(next), first, step})});
      plan.steps.push_back(
          {s.name, "gapless_restored",
           "continues at exactly " + std::to_string(static_cast<std::uint64_t>(next)) +
               (none_used ? " (no number used, as stated)"
                          : " (last number used " + std::to_string(last) + ", as stated)") +
               (dropped_reservations != 0 ? "; " + std::to_string(dropped_reservations) +
                                                " reservation(s) of the backup dropped"
                                          : std::string())});
      continue;
    }
    plan.steps.push_back({s.name, "restored_as_is",
                          std::string(kind_name(s.kind)) + (s.tombstone ? " (dropped)" : "") +
                              ": restored as it is"});
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
             fixed1(static_cast<double>(floor.span_ms) / 1000.0) + " s at its max_rate" +
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
