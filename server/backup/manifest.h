// What a backup holds, written next to it as ticketd-backup.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/result.h"
#include "server/core/sequence_spec.h"
#include "storage/backup_marker.h"
#include "storage/counter_store.h"

namespace ticketd::backup {

inline constexpr std::string_view kManifestFile = kBackupManifestFile;
inline constexpr int kManifestFormat = 1;

/// One sequence as the backup holds it. Ticket sequences carry their durable ceiling and peak
/// issue rate; gapless ones their frontier (every number below `committed_below` committed) and the
/// highest number committed or reserved; Snowflake and UUIDv7 ones only their kind.
struct BackedUpSequence {
  std::string name;
  SequenceKind kind = SequenceKind::kTicket;
  bool tombstone = false;  // a dropped name: `ceiling` is the highest value it may have issued
  std::uint64_t start = 1, increment = 1, offset = 1, max_value = 0, cache = 0;
  bool grid_known = false;    // start/increment (and offset, max_value, cache) were stored
  std::uint64_t ceiling = 0;  // ticket, tombstone
  // ticket, tombstone: values issued in the busiest minute of the 30 days before the backup
  std::uint64_t peak_per_minute = 0;
  std::optional<std::uint64_t> committed_below;    // gapless: every number below it committed
  std::optional<std::uint64_t> highest_committed;  // gapless: committed or voided
  std::optional<std::uint64_t> highest_reserved;   // gapless
  std::size_t reserved = 0;                        // gapless: reservations in flight
  friend bool operator==(const BackedUpSequence&, const BackedUpSequence&) = default;
};

struct BackupManifest {
  int format = kManifestFormat;
  std::string id;
  std::int64_t taken_at_ms = 0;
  std::string ticketd_version;
  std::string source;  // the data directory it was taken from
  bool online = false;
  std::vector<BackedUpSequence> sequences;  // by name; tombstones among them
  std::size_t worker_records = 0;  // worker-pool leases and marks ("worker/"), restored as they are
  friend bool operator==(const BackupManifest&, const BackupManifest&) = default;
};

/// Pretty-printed JSON, one field per line (an operator reads it with `cat`); with `path`, a
/// "path" field first (the HTTP answer to an online backup).
[[nodiscard]] std::string encode_manifest(const BackupManifest& manifest,
                                          std::string_view path = {});
[[nodiscard]] DetailedResult<BackupManifest> decode_manifest(std::string_view json);

/// A name that is served but has nothing stored yet (a configured gapless sequence that never
/// issued a number): the online backup lists it so that a restore asks about it.
struct ServedSequence {
  SequenceSpec spec;
};

/// Reads every sequence of `store` (a backup's own contents, opened read-only): ticket records,
/// tombstones, gapless state, definitions of run-time kinds, Snowflake marks, issue rates and
/// worker leases. Peak rates cover the 30 days up to `now_ms`. `served` adds sequences with no
/// stored state. `id`, time, version and source are left to the caller.
[[nodiscard]] DetailedResult<BackupManifest> describe_store(
    CounterStore& store, std::int64_t now_ms, const std::vector<ServedSequence>& served = {});

}  // namespace ticketd::backup
