// The file that makes a directory a backup rather than a data directory.
#pragma once

#include <string_view>

namespace ticketd {

/// A backup's manifest. The RocksDB store refuses to open a directory that holds one: starting
/// ticketd on a backup (or a copy of one) would resume every counter from the backup's ceilings
/// and issue again the values handed out since; `ticketd restore` makes a data directory of it.
inline constexpr std::string_view kBackupManifestFile = "ticketd-backup.json";

}  // namespace ticketd
