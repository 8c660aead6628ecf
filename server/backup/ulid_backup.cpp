// ULID sequences in a backup: their durable marks ("ulid/<name>/mark"), the newest millisecond
// any ID may have used. A restore raises each mark by the backup's age (the old server may have
// gone on issuing with its clock until now), so a restored server resumes above every ULID
// handed out before the restore, whatever its own clock reads.
#include <algorithm>
#include <string>

#include "server/backup/kind_backup.h"
#include "server/base/utc_time.h"
#include "server/core/ulid_sequence.h"

namespace ticketd::backup {
namespace {

constexpr std::string_view kMarkPrefix = "ulid/";
constexpr std::string_view kMarkSuffix = "mark";

std::string mark_text(const std::optional<std::int64_t>& ms) {
  return ms ? std::to_string(*ms) : std::string("none");
}

class UlidBackup final : public KindBackup {
 public:
  SequenceKind kind() const override { return SequenceKind::kUlid; }

  DetailedResult<void> read_state(CounterStore& store, ManifestEntries& entries) const override {
    auto marks = store.scan(kMarkPrefix);
    if (!marks) return marks.error();
    for (const auto& [key, value] : *marks) {
      const auto name = mark_owner(key, kMarkPrefix, kMarkSuffix);
      if (!name) continue;
      const auto mark = decode_hwm(value);
      if (!mark) return backup_corruption("ULID mark " + key + " does not decode: '" + value + "'");
      auto& s = entries.entry(std::string(*name), SequenceKind::kUlid);
      s.mark_unix_ms = mark->hwm_unix_ms;
      s.mark_written_at_ms = mark->written_at_unix_ms;
    }
    return {};
  }

  DetailedResult<void> verify(CounterStore& store, VerifyReport& report) const override {
    return verify_marks(store, "ulid", kMarkPrefix, kMarkSuffix, report);
  }

  void to_json(const BackedUpSequence& s, boost::json::object& o) const override {
    if (s.mark_unix_ms) o["mark_unix_ms"] = *s.mark_unix_ms;
    if (s.mark_written_at_ms) o["mark_written_at_ms"] = *s.mark_written_at_ms;
  }

  std::optional<std::string> from_json(const boost::json::object& o,
                                       BackedUpSequence& s) const override {
    for (auto [key, field] :
         {std::pair{"mark_unix_ms", &BackedUpSequence::mark_unix_ms},
          std::pair{"mark_written_at_ms", &BackedUpSequence::mark_written_at_ms}}) {
      const auto* v = o.if_contains(key);
      if (v == nullptr) continue;
      if (!v->is_int64() && !v->is_uint64()) return std::string(key) + " is not an integer";
      s.*field = v->to_number<std::int64_t>();
    }
    return std::nullopt;
  }

  void compare(const BackedUpSequence& d, const BackedUpSequence& m,
               const Differ& differ) const override {
    differ("mark_unix_ms", mark_text(d.mark_unix_ms), mark_text(m.mark_unix_ms));
  }

  // The skip rule for time: the old server may have gone on issuing until now, up to a margin
  // ahead of its clock, so the mark moves by the backup's age, and at least to the margin
  // ahead of now (a mark lowered by a clean stop long before the backup says nothing of what
  // a later run issued).
  DetailedResult<void> plan(const BackedUpSequence& s, RestoreRun& run) const override {
    if (!s.mark_unix_ms) return KindBackup::plan(s, run);
    const std::int64_t now = run.options.now_ms;
    const std::int64_t mark =
        std::max(*s.mark_unix_ms + run.elapsed_ms, now + kDefaultUlidMarkMarginMs);
    const std::int64_t written_at =
        std::max(s.mark_written_at_ms.value_or(*s.mark_unix_ms) + run.elapsed_ms, now);
    run.plan.mutations.push_back(
        Mutation{ulid_mark_key(s.name), encode_hwm(SnowflakeHwmRecord{mark, written_at})});
    run.plan.steps.push_back({s.name, "ulid_mark_raised",
                              "ulid: IDs resume after " + format_utc_ms(mark) +
                                  " (the backup's mark " + format_utc_ms(*s.mark_unix_ms) +
                                  " + its age " +
                                  one_decimal(static_cast<double>(run.elapsed_ms) / 1000.0) +
                                  " s, at least the mark's margin past now)"});
    return {};
  }
};

}  // namespace

const KindBackup& ulid_backup() {
  static const UlidBackup module;
  return module;
}

}  // namespace ticketd::backup
