// Snowflake sequences in a backup: named by their high-water marks ("snowflake/<name>/hwm"),
// which a restore keeps as they are (a worker ID's mark still holds after a restore).
#include "server/backup/kind_backup.h"

namespace ticketd::backup {
namespace {

constexpr std::string_view kMarkPrefix = "snowflake/";

class SnowflakeBackup final : public KindBackup {
 public:
  SequenceKind kind() const override { return SequenceKind::kSnowflake; }

  DetailedResult<void> read_state(CounterStore& store, ManifestEntries& entries) const override {
    auto marks = store.scan(kMarkPrefix);
    if (!marks) return marks.error();
    for (const auto& [key, value] : *marks) {
      const std::string_view rest = std::string_view(key).substr(kMarkPrefix.size());
      const auto slash = rest.find('/');
      if (slash == std::string_view::npos) continue;
      // Restored as it is: the kind is all a restore needs to know.
      (void)entries.entry(std::string(rest.substr(0, slash)), SequenceKind::kSnowflake);
    }
    return {};
  }

  DetailedResult<void> verify(CounterStore& store, VerifyReport& report) const override {
    return verify_marks(store, "snowflake", kMarkPrefix, "hwm", report);
  }
};

}  // namespace

const KindBackup& snowflake_backup() {
  static const SnowflakeBackup module;
  return module;
}

}  // namespace ticketd::backup
