#include "server/app/verify.h"

#include <string>
#include <vector>

#include "server/app/data_dir_lock.h"
#include "server/backup/kind_backup.h"
#include "server/base/exit_code.h"
#include "server/base/sequence_kind.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {

int verify_data_dir(const std::string& dir, const std::string& external_mark, std::FILE* out) {
  // Verify writes nothing: the directory is locked (a server cannot start meanwhile) but no
  // file is created, and the store is checked and read read-only.
  auto lock = DataDirLock::acquire(dir, DataDirLock::Mode::kReadOnly);
  if (!lock) {
    std::fprintf(out, "verify: %s (stop ticketd before verifying)\n", lock.error().message.c_str());
    return exit_status(ExitCode::kCannotOpen);
  }
  auto store = RocksDbCounterStore::open_verified(dir, external_mark);
  if (!store) {
    // A damaged store, or one older than what was acknowledged, is a violation (the daemon
    // refuses it the same way); anything else means the directory could not be opened.
    const bool damaged = store.error().code == StorageErrc::kCorruption;
    std::fprintf(out, "%s%s\nverify: %s\n",
                 damaged ? "VIOLATION " : "verify: ", store.error().message.c_str(),
                 damaged ? "the store is refused" : "cannot open");
    return exit_status(damaged ? ExitCode::kFailed : ExitCode::kCannotOpen);
  }
  // Each kind checks its own keys (its KindBackup part); the summary counts them by kind.
  std::vector<std::string> problems;
  std::string counts;
  for (const auto kind : kAllSequenceKinds) {
    backup::VerifyReport report;
    if (auto r = backup::kind_backup(kind).verify(**store, report); !r) {
      std::fprintf(out, "verify: reading %s failed: %s\n", dir.c_str(), r.error().message.c_str());
      return exit_status(ExitCode::kCannotOpen);
    }
    for (const auto& line : report.lines) std::fprintf(out, "%s\n", line.c_str());
    problems.insert(problems.end(), report.problems.begin(), report.problems.end());
    if (report.sequences != 0 || kind == SequenceKind::kTicket) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(report.sequences) + " " +
                std::string(kind_name(kind));
    }
  }
  for (const auto& p : problems) std::fprintf(out, "VIOLATION %s\n", p.c_str());
  std::fprintf(out, "verify: %s sequences, %zu violations\n", counts.c_str(), problems.size());
  return exit_status(problems.empty() ? ExitCode::kOk : ExitCode::kFailed);
}

}  // namespace ticketd
