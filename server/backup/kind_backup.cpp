#include "server/backup/kind_backup.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "server/base/parse_int.h"
#include "server/base/utc_time.h"
#include "server/core/snowflake_generator.h"

namespace ticketd::backup {

BackedUpSequence& ManifestEntries::entry(const std::string& name, SequenceKind kind) {
  auto [it, inserted] = by_name_.try_emplace(name);
  if (inserted) {
    it->second.name = name;
    it->second.kind = kind;
  }
  return it->second;
}

BackedUpSequence* ManifestEntries::find(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

std::vector<BackedUpSequence> ManifestEntries::take() {
  std::vector<BackedUpSequence> out;
  out.reserve(by_name_.size());
  for (auto& [_, s] : by_name_) out.push_back(std::move(s));
  by_name_.clear();
  return out;
}

DetailedResult<const std::map<std::string, std::string>*> RestoreRun::stored(
    std::string_view prefix) {
  if (auto it = scans_.find(prefix); it != scans_.end()) return &it->second;
  auto scan = restored_.scan(std::string(prefix));
  if (!scan) return scan.error();
  auto& keys = scans_[std::string(prefix)];
  for (auto& [key, value] : *scan) keys.emplace(std::move(key), std::move(value));
  return &keys;
}

DetailedResult<void> KindBackup::plan(const BackedUpSequence& s, RestoreRun& run) const {
  run.plan.steps.push_back(
      {s.name, "restored_as_is",
       std::string(kind_name(s.kind)) + (s.tombstone ? " (dropped)" : "") + ": restored as it is"});
  return {};
}

namespace {

// A kind with nothing of its own in a backup (UUIDv7: time and randomness).
class AsItIs final : public KindBackup {
 public:
  explicit AsItIs(SequenceKind kind) : kind_(kind) {}
  SequenceKind kind() const override { return kind_; }

 private:
  SequenceKind kind_;
};

}  // namespace

const KindBackup& kind_backup(SequenceKind kind) {
  static const AsItIs uuidv7(SequenceKind::kUuidV7);
  // One row per kind, in SequenceKind's order (checked at first use).
  static const std::array<const KindBackup*, std::size(kSequenceKindRows)> rows = {
      &ticket_backup(), &gapless_backup(), &snowflake_backup(), &uuidv7, &ulid_backup()};
  static const bool in_order = in_kind_order(rows);
  if (!in_order) std::abort();  // a registration row out of place: a programming error
  return *rows[static_cast<std::size_t>(kind)];
}

Error backup_corruption(const std::string& what) {
  return Error{StorageErrc::kCorruption, "backup: " + what};
}

std::optional<std::string_view> mark_owner(std::string_view key, std::string_view prefix,
                                           std::string_view suffix) {
  if (!key.starts_with(prefix)) return std::nullopt;
  const std::string_view rest = key.substr(prefix.size());
  const auto slash = rest.rfind('/');
  if (slash == std::string_view::npos || slash == 0 || rest.substr(slash + 1) != suffix) {
    return std::nullopt;
  }
  return rest.substr(0, slash);
}

DetailedResult<void> verify_marks(CounterStore& store, std::string_view kind,
                                  std::string_view prefix, std::string_view suffix,
                                  VerifyReport& report) {
  auto marks = store.scan(prefix);
  if (!marks) return marks.error();
  for (const auto& [key, value] : *marks) {
    const auto owner = mark_owner(key, prefix, suffix);
    if (!owner) continue;
    const std::string_view name = *owner;
    ++report.sequences;
    const auto mark = decode_hwm(value);
    if (!mark) {
      report.problems.push_back(std::string(kind) + " '" + std::string(name) +
                                "': unreadable mark '" + value + "'");
      continue;
    }
    char line[160];
    std::snprintf(line, sizeof line, "%-9s %-24s mark %s", std::string(kind).c_str(),
                  std::string(name).c_str(), format_utc_ms(mark->hwm_unix_ms).c_str());
    report.lines.emplace_back(line);
  }
  return {};
}

std::string one_decimal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

boost::json::value manifest_u64(std::uint64_t v) { return boost::json::value(std::to_string(v)); }

std::optional<std::uint64_t> read_manifest_u64(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return parse_u64(std::string_view(v->as_string()));
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
  return std::nullopt;
}

}  // namespace ticketd::backup
