#include "server/app/verify.h"

#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "server/app/data_dir_lock.h"
#include "server/base/exit_code.h"
#include "server/core/gapless_sequence.h"
#include "server/core/sequence_record.h"
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
  std::vector<std::string> problems;
  auto sequences = (*store)->scan(kSequencePrefix);
  auto gapless = (*store)->scan(kGaplessPrefix);
  if (!sequences || !gapless) {
    std::fprintf(out, "verify: reading %s failed: %s\n", dir.c_str(),
                 (!sequences ? sequences.error() : gapless.error()).message.c_str());
    return exit_status(ExitCode::kCannotOpen);
  }
  for (const auto& [key, value] : *sequences) {
    const auto name = std::string_view(key).substr(kSequencePrefix.size());
    auto record = decode_record(name, value);
    if (!record) {
      problems.push_back("ticket sequence '" + std::string(name) + "': unreadable record");
      continue;
    }
    std::fprintf(out, "ticket  %-24s ceiling %llu\n", std::string(name).c_str(),
                 static_cast<unsigned long long>(record->ceiling));
  }
  // One summary line per gapless sequence: its frontier and how many numbers are above it.
  std::map<std::string, std::map<char, std::size_t>> counts;
  std::map<std::string, std::string> frontiers;
  for (const auto& [key, value] : *gapless) {
    auto rest = std::string_view(key).substr(kGaplessPrefix.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) continue;  // reported by verify_gapless_records
    const std::string name(rest.substr(0, slash));
    auto kind = rest.substr(slash + 1);
    if (kind == "f") {
      frontiers[name] = value;
    } else if (!kind.empty()) {
      ++counts[name][kind.front()];
    }
  }
  std::set<std::string> names;
  for (const auto& [n, _] : frontiers) names.insert(n);
  for (const auto& [n, _] : counts) names.insert(n);
  for (const auto& n : names) {
    auto& c = counts[n];
    std::fprintf(out, "gapless %-24s %s, %zu committed above it, %zu reserved, %zu void\n",
                 n.c_str(), frontiers.contains(n) ? frontiers[n].c_str() : "(no frontier)", c['c'],
                 c['r'], c['v']);
  }
  for (auto& p : verify_gapless_records(*gapless)) problems.push_back("gapless " + p);
  for (const auto& p : problems) std::fprintf(out, "VIOLATION %s\n", p.c_str());
  std::fprintf(out, "verify: %zu ticket and %zu gapless sequences, %zu violations\n",
               sequences->size(), names.size(), problems.size());
  return exit_status(problems.empty() ? ExitCode::kOk : ExitCode::kFailed);
}

}  // namespace ticketd
