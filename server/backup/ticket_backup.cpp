// Ticket sequences in a backup: their records and tombstones with their ceilings and peak issue
// rates; a restore raises every ceiling past what the sequence can have issued since.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "server/backup/kind_backup.h"
#include "server/core/issue_rate.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_sequence.h"

namespace ticketd::backup {
namespace {

using u128 = unsigned __int128;
constexpr u128 kU64Max = std::numeric_limits<std::uint64_t>::max();

// A tombstone keeps no cache size: the default one (SequenceSpec's) stands in for it.
constexpr std::uint64_t kDefaultCacheForTombstones = 1000;

// How many values to skip for a ticket sequence or tombstone, and the reason; `bound` when the
// skip is auto's proven bound (which must fit below max_value).
struct Skip {
  u128 values;
  std::string why;
  bool bound = false;
};

Skip skip_for(const BackedUpSequence& s, const SequenceSpec& spec, const RestoreRun& run) {
  const auto& options = run.options;
  if (auto it = options.skip_by_name.find(s.name); it != options.skip_by_name.end()) {
    return {it->second, "--skip-ahead " + s.name + "=" + std::to_string(it->second)};
  }
  const double elapsed_s = static_cast<double>(run.elapsed_ms) / 1000.0;
  switch (options.skip.mode) {
    case SkipAhead::Mode::kValues:
      return {options.skip.values, "--skip-ahead " + std::to_string(options.skip.values)};
    case SkipAhead::Mode::kPeak: {
      const double per_second = static_cast<double>(s.peak_per_minute) / 60.0;
      const double by_rate = std::ceil(2.0 * per_second * elapsed_s);
      const u128 rate_values = by_rate >= 1.8e19 ? kU64Max : static_cast<u128>(by_rate);
      const u128 cache_values = u128{2} * spec.cache;
      return {std::max(rate_values, cache_values),
              "peak (an estimate, not a bound): max(2 x peak " + one_decimal(per_second) + "/s x " +
                  one_decimal(elapsed_s) + " s since the backup, 2 x cache " +
                  std::to_string(spec.cache) + ")"};
    }
    case SkipAhead::Mode::kBound:
      break;
  }
  // Values raised in any interval stay within max_rate x its length plus one window: the time
  // since the backup (with a margin for this host's clock) plus the window bounds them. The
  // same count a restore floor gives a name the backup did not hold.
  const u128 values = restore_floor_skip(
      RestoreFloor{.span_ms = static_cast<std::uint64_t>(run.elapsed_ms + kRestoreClockMarginMs)},
      spec);
  return {values,
          "auto: max_rate " + std::to_string(spec.max_rate) + "/s x (" + one_decimal(elapsed_s) +
              " s since the backup + " +
              one_decimal(static_cast<double>(rate_window_us(spec)) / 1e6) + " s window + " +
              std::to_string(kRestoreClockMarginMs / 1000) + " s clock margin)",
          true};
}

// The new ceiling: old + skip × increment, up onto the grid, at most max_value.
struct Raised {
  std::uint64_t ceiling;
  bool exhausted;
};
Raised raise(std::uint64_t ceiling, u128 skip, std::uint64_t increment, std::uint64_t offset,
             std::uint64_t max_value) {
  const u128 target = align_up(u128{ceiling} + skip * increment, increment, offset);
  if (target >= max_value) return Raised{max_value, true};
  return Raised{static_cast<std::uint64_t>(target), false};
}

class TicketBackup final : public KindBackup {
 public:
  SequenceKind kind() const override { return SequenceKind::kTicket; }

  DetailedResult<void> verify(CounterStore& store, VerifyReport& report) const override {
    auto sequences = store.scan(kSequencePrefix);
    if (!sequences) return sequences.error();
    for (const auto& [key, value] : *sequences) {
      const auto name = std::string_view(key).substr(kSequencePrefix.size());
      ++report.sequences;
      auto record = decode_record(name, value);
      if (!record) {
        report.problems.push_back("ticket sequence '" + std::string(name) + "': unreadable record");
        continue;
      }
      char line[160];
      std::snprintf(line, sizeof line, "ticket    %-24s ceiling %llu", std::string(name).c_str(),
                    static_cast<unsigned long long>(record->ceiling));
      report.lines.emplace_back(line);
    }
    return {};
  }

  DetailedResult<void> read_records(CounterStore& store, ManifestEntries& entries) const override {
    auto sequences = store.scan(kSequencePrefix);
    if (!sequences) return sequences.error();
    for (const auto& [key, value] : *sequences) {
      const std::string name = key.substr(kSequencePrefix.size());
      auto r = decode_record(name, value);
      if (!r) return backup_corruption("ticket sequence '" + name + "': unreadable record");
      auto& s = entries.entry(name, SequenceKind::kTicket);
      s.grid_known = true;
      s.start = r->spec.start;
      s.increment = r->spec.increment;
      s.offset = r->spec.offset;
      s.max_value = r->spec.max_value;
      s.cache = r->spec.cache;
      s.max_rate = r->spec.max_rate;
      s.ceiling = r->ceiling;
    }
    auto tombs = store.scan(kTombstonePrefix);
    if (!tombs) return tombs.error();
    for (const auto& [key, value] : *tombs) {
      const std::string name = key.substr(kTombstonePrefix.size());
      const auto ceiling = decode_tombstone(value);
      if (!ceiling) return backup_corruption("tombstone '" + name + "': unreadable record");
      if (entries.contains(name)) continue;  // re-created above it: the live record decides
      auto& s = entries.entry(name, SequenceKind::kTicket);
      s.tombstone = true;
      s.ceiling = *ceiling;
    }
    return {};
  }

  DetailedResult<void> read_history(CounterStore& store, ManifestEntries& entries,
                                    std::int64_t now_ms) const override {
    auto rates = store.scan(kRatePrefix);
    if (!rates) return rates.error();
    const std::int64_t today = now_ms / IssueRateHistory::kDayMs;
    for (const auto& [key, value] : *rates) {
      auto h = decode_rate_history(value);
      if (!h) continue;  // advice only; a missing rate falls back on the cache rule
      auto* s = entries.find(key.substr(kRatePrefix.size()));
      if (s != nullptr && s->kind == SequenceKind::kTicket) {
        s->peak_per_minute = h->peak_per_minute(today);
      }
    }
    return {};
  }

  void to_json(const BackedUpSequence& s, boost::json::object& o) const override {
    o["ceiling"] = manifest_u64(s.ceiling);
    o["peak_per_minute"] = manifest_u64(s.peak_per_minute);
    if (!s.tombstone) o["max_rate"] = manifest_u64(s.max_rate);
  }

  std::optional<std::string> from_json(const boost::json::object& o,
                                       BackedUpSequence& s) const override {
    const auto ceiling = read_manifest_u64(o, "ceiling");
    if (!ceiling) return "ticket sequence '" + s.name + "' without a ceiling";
    s.ceiling = *ceiling;
    s.peak_per_minute = read_manifest_u64(o, "peak_per_minute").value_or(0);
    s.max_rate = read_manifest_u64(o, "max_rate").value_or(kDefaultMaxRate);
    return std::nullopt;
  }

  void compare(const BackedUpSequence& d, const BackedUpSequence& m,
               const Differ& differ) const override {
    differ("ceiling", std::to_string(d.ceiling), std::to_string(m.ceiling));
    differ("peak_per_minute", std::to_string(d.peak_per_minute), std::to_string(m.peak_per_minute));
    differ("max_rate", std::to_string(d.max_rate), std::to_string(m.max_rate));
  }

  bool may_be_unstored(const BackedUpSequence& /*claimed*/) const override { return false; }

  DetailedResult<void> plan(const BackedUpSequence& s, RestoreRun& run) const override {
    if (s.tombstone) {
      plan_tombstone(s, run);
      return {};
    }
    auto records = run.stored(kSequencePrefix);
    if (!records) return records.error();
    auto it = (*records)->find(sequence_key(s.name));
    if (it == (*records)->end()) {
      run.refusals.push_back("ticket sequence '" + s.name +
                             "' is in the manifest but not in the backup's store");
      return {};
    }
    auto decoded = decode_record(s.name, it->second);
    if (!decoded) {
      return Error{StorageErrc::kCorruption, "ticket sequence '" + s.name + "': unreadable"};
    }
    plan_sequence(s, std::move(*decoded), run);
    return {};
  }

 private:
  // A name re-created after the backup issues at most at the default max_rate.
  static void plan_tombstone(const BackedUpSequence& s, RestoreRun& run) {
    const auto skip = skip_for(s, SequenceSpec{.cache = kDefaultCacheForTombstones}, run);
    const auto r = raise(s.ceiling, skip.values, 1, 0, UINT64_MAX);
    run.plan.mutations.push_back(Mutation{tombstone_key(s.name), encode_tombstone(r.ceiling)});
    run.plan.steps.push_back({s.name, "tombstone_restored_skip",
                              "dropped name: ceiling " + std::to_string(s.ceiling) + " -> " +
                                  std::to_string(r.ceiling) + " (" + skip.why + ")"});
  }

  static void plan_sequence(const BackedUpSequence& s, SequenceRecord rec, RestoreRun& run) {
    const auto skip = skip_for(s, rec.spec, run);
    const auto& why = skip.why;
    const auto r =
        raise(rec.ceiling, skip.values, rec.spec.increment, rec.spec.offset, rec.spec.max_value);
    if (r.exhausted && skip.bound) {
      run.refusals.push_back(
          "ticket sequence '" + s.name + "': --skip-ahead auto needs " +
          std::to_string(static_cast<std::uint64_t>(std::min(skip.values, kU64Max))) + " values (" +
          why + "), more than fit below its max_value " + std::to_string(rec.spec.max_value) +
          " from the backup's ceiling " + std::to_string(rec.ceiling) + ": give --skip-ahead " +
          s.name +
          "=N, N at least the values it issued since the backup (or lower its max_rate "
          "before the next backup)");
      return;
    }
    const std::uint64_t before = rec.ceiling;
    rec.ceiling = std::max(rec.ceiling, r.ceiling);
    run.plan.mutations.push_back(Mutation{sequence_key(s.name), encode_record(rec)});
    std::string detail = "ceiling " + std::to_string(before) + " -> " +
                         std::to_string(rec.ceiling) + " (" + why + ")";
    if (r.exhausted) {
      detail += "; the skip reaches max_value " + std::to_string(rec.spec.max_value) +
                ": the sequence is exhausted";
    } else {
      detail += "; next value " + std::to_string(rec.ceiling + rec.spec.increment);
    }
    run.plan.steps.push_back({s.name, "sequence_restored_skip", detail});
  }
};

}  // namespace

const KindBackup& ticket_backup() {
  static const TicketBackup module;
  return module;
}

}  // namespace ticketd::backup
