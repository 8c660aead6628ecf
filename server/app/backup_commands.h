// Backups of a data directory and safe restores of them: `ticketd backup`, `ticketd restore`
// and the online backup behind POST /v1/admin/backup.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "server/backup/backup_taker.h"
#include "server/backup/manifest.h"
#include "server/base/result.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {

class Engine;

/// What a backup records about where and when it was taken.
struct BackupContext {
  std::int64_t now_ms = 0;
  bool online = false;
  std::string source;  // the data directory
  std::vector<backup::ServedSequence> served;
};

/// Writes a backup of `store` into `target` (which must not exist): a RocksDB checkpoint, made
/// under "<target>.partial" and renamed once its manifest (read back from the checkpoint itself,
/// so it describes exactly what the backup holds) is synced next to it.
[[nodiscard]] DetailedResult<backup::TakenBackup> write_backup(RocksDbCounterStore& store,
                                                               const std::string& target,
                                                               const BackupContext& context);

/// `ticketd backup --data-dir DIR --to OUT` (a stopped server's data dir). Exit 0, 1 on a
/// failure, 2 on a usage error.
[[nodiscard]] int backup_command(int argc, char** argv, std::FILE* out);
/// `ticketd restore --from BACKUP --data-dir DIR [--skip-ahead auto|N|NAME=N]...
/// [--gapless NAME=N]...`: copies the backup into DIR (which must be missing or empty) and
/// raises what may have been issued since (see backup::plan_restore). Exit 0, 1 on a failure,
/// 2 on a usage error or a refused plan (DIR is left empty).
[[nodiscard]] int restore_command(int argc, char** argv, std::FILE* out);

/// The online backups of a running server (RocksDB only): each in its own directory under
/// `dir`, named after its time. Runs on the engine's store-reads thread, after closing an
/// issue-rate window so the manifest's peaks include the last seconds. Thread safety: take()
/// may be called from any thread; backups run one at a time.
class OnlineBackups final : public backup::BackupTaker {
 public:
  OnlineBackups(Engine& engine, RocksDbCounterStore& store, std::string dir, std::string data_dir);
  void take(backup::BackupCallback done) override;

 private:
  [[nodiscard]] DetailedResult<backup::TakenBackup> take_now();

  Engine& engine_;
  RocksDbCounterStore& store_;
  const std::string dir_;
  const std::string data_dir_;
  std::mutex mutex_;
};

}  // namespace ticketd
