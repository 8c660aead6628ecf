// The port through which a front end asks for an online backup.
#pragma once

#include <functional>
#include <string>

#include "server/backup/manifest.h"
#include "server/base/result.h"

namespace ticketd::backup {

struct TakenBackup {
  std::string path;  // the backup's directory
  BackupManifest manifest;
};

using BackupCallback = std::function<void(DetailedResult<TakenBackup>)>;

/// Takes a consistent backup of the running server's store while it keeps serving. `done` runs
/// on a background thread once the backup and its manifest are on disk. Implemented by the
/// composition root over the RocksDB store. Thread safety: take() may be called concurrently;
/// backups run one at a time.
class BackupTaker {
 public:
  virtual ~BackupTaker() = default;
  virtual void take(BackupCallback done) = 0;
};

}  // namespace ticketd::backup
