// Gapless sequences in a backup: their frontier, committed numbers and reservations; a restore
// continues at exactly the number after the last one the application says it used.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "server/backup/kind_backup.h"
#include "server/core/gapless_sequence.h"

namespace ticketd::backup {
namespace {

using u128 = unsigned __int128;

std::string n(std::optional<std::uint64_t> v) {
  return v ? std::to_string(*v) : std::string("none");
}

class GaplessBackup final : public KindBackup {
 public:
  SequenceKind kind() const override { return SequenceKind::kGapless; }

  // One line per sequence: its frontier and how many numbers are above it; then every record
  // that breaks the invariants (verify_gapless_records).
  DetailedResult<void> verify(CounterStore& store, VerifyReport& report) const override {
    auto gapless = store.scan(kGaplessPrefix);
    if (!gapless) return gapless.error();
    std::map<std::string, std::map<char, std::size_t>> counts;
    std::map<std::string, std::string> frontiers;
    for (const auto& [key, value] : *gapless) {
      auto rest = std::string_view(key).substr(kGaplessPrefix.size());
      auto slash = rest.find('/');
      if (slash == std::string_view::npos) continue;  // reported by verify_gapless_records
      const std::string name(rest.substr(0, slash));
      auto part = rest.substr(slash + 1);
      if (part == "f") {
        frontiers[name] = value;
      } else if (!part.empty()) {
        ++counts[name][part.front()];
      }
    }
    std::set<std::string> names;
    for (const auto& [name, _] : frontiers) names.insert(name);
    for (const auto& [name, _] : counts) names.insert(name);
    for (const auto& name : names) {
      auto& c = counts[name];
      char line[400];
      std::snprintf(
          line, sizeof line, "gapless   %-24s %s, %zu committed above it, %zu reserved, %zu void",
          name.c_str(), frontiers.contains(name) ? frontiers[name].c_str() : "(no frontier)",
          c['c'], c['r'], c['v']);
      report.lines.emplace_back(line);
    }
    report.sequences += names.size();
    for (auto& p : verify_gapless_records(*gapless)) report.problems.push_back("gapless " + p);
    return {};
  }

  DetailedResult<void> read_state(CounterStore& store, ManifestEntries& entries) const override {
    auto gapless = store.scan(kGaplessPrefix);
    if (!gapless) return gapless.error();
    for (const auto& [key, value] : *gapless) {
      auto k = parse_gapless_key(std::string_view(key).substr(kGaplessPrefix.size()));
      if (!k) return backup_corruption("unreadable gapless key '" + key + "'");
      auto& s = entries.entry(k->name, SequenceKind::kGapless);
      if (s.kind != SequenceKind::kGapless) continue;  // a dropped ticket name reused
      if (k->kind == "f") {
        auto f = decode_frontier(value);
        if (!f) return backup_corruption("gapless sequence '" + k->name + "': unreadable frontier");
        s.committed_below = f->first_open;
        if (!s.grid_known) {
          s.grid_known = true;
          s.start = f->first;
          s.increment = f->step;
          s.offset = f->first % f->step;
        }
        if (f->first_open > f->first) {
          s.highest_committed = std::max(s.highest_committed.value_or(0), f->first_open - f->step);
        }
      } else if (k->kind == "r") {
        ++s.reserved;
        s.highest_reserved = std::max(s.highest_reserved.value_or(0), k->number);
      } else {
        s.highest_committed = std::max(s.highest_committed.value_or(0), k->number);
      }
    }
    return {};
  }

  void to_json(const BackedUpSequence& s, boost::json::object& o) const override {
    if (s.committed_below) o["committed_below"] = manifest_u64(*s.committed_below);
    if (s.highest_committed) o["highest_committed"] = manifest_u64(*s.highest_committed);
    if (s.highest_reserved) o["highest_reserved"] = manifest_u64(*s.highest_reserved);
    o["reserved"] = s.reserved;
  }

  std::optional<std::string> from_json(const boost::json::object& o,
                                       BackedUpSequence& s) const override {
    s.committed_below = read_manifest_u64(o, "committed_below");
    s.highest_committed = read_manifest_u64(o, "highest_committed");
    s.highest_reserved = read_manifest_u64(o, "highest_reserved");
    s.reserved = read_manifest_u64(o, "reserved").value_or(0);
    return std::nullopt;
  }

  void compare(const BackedUpSequence& d, const BackedUpSequence& m,
               const Differ& differ) const override {
    differ("committed_below", n(d.committed_below), n(m.committed_below));
    differ("highest_committed", n(d.highest_committed), n(m.highest_committed));
    differ("highest_reserved", n(d.highest_reserved), n(m.highest_reserved));
    differ("reserved", std::to_string(d.reserved), std::to_string(m.reserved));
  }

  // Configured but never issued a number: nothing stored, nothing to lose.
  bool may_be_unstored(const BackedUpSequence& m) const override {
    return !m.tombstone && !m.committed_below && !m.highest_committed && !m.highest_reserved &&
           m.reserved == 0;
  }

  DetailedResult<void> plan(const BackedUpSequence& s, RestoreRun& run) const override {
    if (s.tombstone) return KindBackup::plan(s, run);
    auto next = stated_next(s, run);
    if (!next) return {};
    auto keys = run.stored(kGaplessPrefix);
    if (!keys) return keys.error();
    const std::string prefix = std::string(kGaplessPrefix) + s.name + "/";
    std::size_t dropped_reservations = 0;
    for (auto it = (*keys)->lower_bound(prefix); it != (*keys)->end(); ++it) {
      const auto& key = it->first;
      if (!key.starts_with(prefix)) break;
      auto k = parse_gapless_key(std::string_view(key).substr(kGaplessPrefix.size()));
      if (!k || k->name != s.name) continue;
      if (k->kind == "c" || k->kind == "r") {
        dropped_reservations += k->kind == "r" ? 1 : 0;
        run.plan.mutations.push_back(Mutation{key, std::nullopt});
      }
    }
    const std::uint64_t last = run.options.gapless_last_used.at(s.name);
    const bool none_used = last < s.start;
    run.plan.mutations.push_back(
        Mutation{prefix + "f", encode_frontier(GaplessFrontier{*next, s.start, s.increment})});
    run.plan.steps.push_back(
        {s.name, "gapless_restored",
         "continues at exactly " + std::to_string(*next) +
             (none_used ? " (no number used, as stated)"
                        : " (last number used " + std::to_string(last) + ", as stated)") +
             (dropped_reservations != 0 ? "; " + std::to_string(dropped_reservations) +
                                              " reservation(s) of the backup dropped"
                                        : std::string())});
    return {};
  }

 private:
  // The number the restored sequence continues at, from the stated last number used; or a
  // refusal (nullopt).
  static std::optional<std::uint64_t> stated_next(const BackedUpSequence& s, RestoreRun& run) {
    auto stated = run.options.gapless_last_used.find(s.name);
    if (stated == run.options.gapless_last_used.end()) {
      run.refusals.push_back(
          "gapless sequence '" + s.name + "' needs --gapless " + s.name +
          "=N, N the last number the application used (a gapless sequence can neither skip "
          "numbers nor resume from the backup, which may reuse numbers issued since)" +
          (s.highest_committed ? "; the backup shows numbers up to " +
                                     std::to_string(*s.highest_committed) + " committed"
                               : "; the backup shows no number committed"));
      return std::nullopt;
    }
    if (!s.grid_known) {
      run.refusals.push_back("gapless sequence '" + s.name +
                             "': the backup does not record its grid");
      return std::nullopt;
    }
    const std::uint64_t last = stated->second;
    const std::uint64_t first = s.start;
    const std::uint64_t step = s.increment;
    const bool none_used = last < first;
    if (!none_used && (last - first) % step != 0) {
      run.refusals.push_back("--gapless " + s.name + "=" + std::to_string(last) +
                             ": not a number of the sequence (first " + std::to_string(first) +
                             ", step " + std::to_string(step) + ")");
      return std::nullopt;
    }
    if (s.highest_committed && (none_used || last < *s.highest_committed)) {
      run.refusals.push_back("--gapless " + s.name + "=" + std::to_string(last) +
                             ": the backup shows numbers up to " +
                             std::to_string(*s.highest_committed) +
                             " committed; continuing lower would issue them again");
      return std::nullopt;
    }
    const u128 next = none_used ? u128{first} : u128{last} + step;
    if (next > std::numeric_limits<std::uint64_t>::max()) {
      run.refusals.push_back("--gapless " + s.name + ": the next number passes 2^64-1");
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(next);
  }
};

}  // namespace

const KindBackup& gapless_backup() {
  static const GaplessBackup module;
  return module;
}

}  // namespace ticketd::backup
