// The highest store position a synced commit reached, kept outside the store's own log.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "server/base/result.h"

namespace ticketd {

/// A small file (`ticketd.durable` in the data directory) that remembers the highest write
/// position (RocksDB's sequence number) that a synced commit reached, so that opening a store
/// whose write-ahead log was lost, truncated or damaged is refused instead of resuming lower.
///
/// Why a second record: RocksDB replays its WAL up to the first bad record and, after a torn tail,
/// cannot tell "the last write never finished" from "half of the log is gone". The mark is
/// written only after RocksDB's synced write returned, so it never runs ahead of what the WAL
/// holds; a store that opens below it has lost acknowledged writes.
///
/// The mark also names the store it belongs to (RocksDB's DB identity, bound once the store
/// exists), so a mark copied from another store is refused rather than trusted.
///
/// The file holds two fixed-size slots, written alternately, each with a checksum, so a torn slot
/// leaves the other readable. (Files written before the identity have shorter slots without it;
/// they are read, and rewritten in the current form at the next open.) Updates overwrite in place
/// (no new blocks: a full disk cannot fail them) and are made durable by `fdatasync` at most once
/// per `sync_interval` and at close; after a process crash the page cache still holds them. Thread
/// safety: all members may be called concurrently.
class DurableMark {
 public:
  static constexpr const char* kFileName = "ticketd.durable";
  /// The longest store identity a slot holds (RocksDB's is a 36-character UUID).
  static constexpr std::size_t kMaxIdentity = 47;

  /// What a mark file holds, read without creating or writing anything (verify, and the checks
  /// before a store is opened): nullopt when there is no file.
  struct Reading {
    std::uint64_t position = 0;
    std::string identity;  // empty: not bound to a store yet
  };
  [[nodiscard]] static DetailedResult<std::optional<Reading>> read(const std::string& dir);
  /// The same for a mark at any path (the external mark, `durability.external_mark`). With
  /// `empty_is_unbound`, an empty file reads as position 0 bound to no store: the operator
  /// created it to be adopted.
  [[nodiscard]] static DetailedResult<std::optional<Reading>> read_file(
      const std::string& path, bool empty_is_unbound = false);

  /// Opens (creating when missing) the mark file in `dir`. `stored()` tells what it held.
  [[nodiscard]] static DetailedResult<std::unique_ptr<DurableMark>> open(
      const std::string& dir, std::chrono::milliseconds sync_interval = std::chrono::seconds(1));
  /// Opens (creating when missing) the mark file at `path`; its directory is synced after a
  /// creation. With `empty_is_new`, an empty file is written like a new one (the external mark
  /// an operator created for ticketd to adopt); otherwise it is refused like any unreadable one.
  [[nodiscard]] static DetailedResult<std::unique_ptr<DurableMark>> open_file(
      const std::string& path, std::chrono::milliseconds sync_interval, bool empty_is_new);
  ~DurableMark();
  DurableMark(const DurableMark&) = delete;
  DurableMark& operator=(const DurableMark&) = delete;

  /// The position recorded before this process opened the file; empty when the file was new.
  [[nodiscard]] std::optional<std::uint64_t> stored() const { return stored_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  /// The store this mark belongs to; empty until bind().
  [[nodiscard]] std::string identity() const;
  /// Names the store this mark belongs to, durably (both slots, synced).
  [[nodiscard]] DetailedResult<void> bind(std::string identity);

  /// Records `position` when it is above what was recorded; `force_sync` makes it durable now.
  [[nodiscard]] DetailedResult<void> record(std::uint64_t position, bool force_sync = false);
  /// Records `position` even below what was recorded, and `identity`, durably: for restore
  /// only, which makes a new data directory the store this mark now speaks for.
  [[nodiscard]] DetailedResult<void> reset(std::uint64_t position, std::string identity);

 private:
  DurableMark(int fd, std::string path, std::optional<std::uint64_t> stored,
              std::uint64_t generation, std::string identity,
              std::chrono::milliseconds sync_interval);
  [[nodiscard]] DetailedResult<void> write_slot_locked(std::uint64_t position);
  /// Writes `position` and `identity` into both slots and syncs them (mutex_ held).
  [[nodiscard]] DetailedResult<void> rewrite_locked(std::uint64_t position, std::string identity);

  mutable std::mutex mutex_;
  int fd_;
  std::string path_;
  std::optional<std::uint64_t> stored_;
  std::uint64_t recorded_ = 0;
  std::uint64_t generation_ = 0;
  std::string identity_;
  std::chrono::milliseconds sync_interval_;
  std::chrono::steady_clock::time_point last_sync_{};
  bool dirty_ = false;
};

/// One slot of the mark file.
struct MarkSlot {
  std::uint64_t position = 0;
  std::uint64_t generation = 0;
  std::string identity;  // at most DurableMark::kMaxIdentity bytes
  friend bool operator==(const MarkSlot&, const MarkSlot&) = default;
};
/// Encodes one slot of the mark file (exposed for the codec's tests): "TDMARK02", position,
/// generation (8 bytes each, little endian), the identity's length (1 byte) and the identity
/// padded with zeros to 47 bytes, FNV-1a 64 of everything before it: 80 bytes.
std::string encode_mark_slot(const MarkSlot& slot);
/// Decodes a slot of either form ("TDMARK02", or the 32-byte "TDMARK01" without an identity),
/// or empty when it is torn or not a slot.
std::optional<MarkSlot> decode_mark_slot(std::string_view slot);

}  // namespace ticketd
