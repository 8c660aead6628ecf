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
/// 2: bound to its checkpoint (store_identity, store_position) and checksummed. Format 1
/// (earlier releases) is still read: restore checks it against the checkpoint, unbound.
inline constexpr int kManifestFormat = 2;

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
  std::uint64_t max_rate = kDefaultMaxRate;        // ticket: the enforced bound (values per second)
  std::optional<std::uint64_t> committed_below;    // gapless: every number below it committed
  std::optional<std::uint64_t> highest_committed;  // gapless: committed or voided
  std::optional<std::uint64_t> highest_reserved;   // gapless
  std::size_t reserved = 0;                        // gapless: reservations in flight
  std::optional<std::int64_t> mark_unix_ms;        // ulid: the durable mark
  std::optional<std::int64_t> mark_written_at_ms;  // ulid: the clock when it was written
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
  // The checkpoint this manifest describes: its store's identity and the write position it
  // reaches (format 2; empty / 0 in a format 1 manifest).
  std::string store_identity;
  std::uint64_t store_position = 0;
  friend bool operator==(const BackupManifest&, const BackupManifest&) = default;
};

/// Pretty-printed JSON, one field per line (an operator reads it with `cat`); with `path`, a
/// "path" field first (the HTTP answer to an online backup). The last field, "checksum", is
/// "sha256:" and the SHA-256 of the same text without "path" and "checksum".
[[nodiscard]] std::string encode_manifest(const BackupManifest& manifest,
                                          std::string_view path = {});
/// Reads a manifest; a format 2 manifest whose checksum does not match is refused (an edited
/// or damaged manifest).
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

/// What a restore believes: `derived` (describe_store of the checkpoint itself, at the
/// manifest's time) with the manifest's metadata and the sequences it lists that have nothing
/// stored (served only: a gapless sequence that never issued a number, UUIDv7, Snowflake).
/// Every other disagreement is listed and refuses the restore: a sequence the checkpoint holds
/// that the manifest leaves out or lists with another kind, ceiling, tombstone, committed or
/// reserved number, grid or peak rate; a ticket sequence the checkpoint does not hold.
[[nodiscard]] DetailedResult<BackupManifest> reconcile(const BackupManifest& manifest,
                                                       const BackupManifest& derived);

}  // namespace ticketd::backup
