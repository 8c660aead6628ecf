// The embedded, default CounterStore.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "storage/counter_store.h"
#include "storage/durable_mark.h"

namespace rocksdb {
class DB;
}

namespace ticketd {

/// Whether opening a store may give it a durable mark it does not have.
enum class MarkPolicy {
  kRequire,  // a store without its mark is refused (every start, verify, backup)
  kAdopt,    // restore: the store was just copied from a backup and gets its first mark
};

/// How a store is opened: whether it may adopt a mark, and where its external high-water mark
/// lives (`durability.external_mark`; empty: none).
struct StoreMarks {
  MarkPolicy policy = MarkPolicy::kRequire;
  /// A mark file outside the data directory (another volume), synced after every commit before
  /// commit() returns: a data directory rolled back as a whole (a disk or VM snapshot, its own
  /// mark included) reaches less than it records and is refused. A missing file is refused for
  /// a store that exists (an empty one, created by the operator, is adopted). Not used with
  /// kAdopt: restore calls adopt_external_mark() once the new directory is complete.
  std::string external;
};

/// A CounterStore in a RocksDB directory. Every commit is one WriteBatch written with
/// `WriteOptions::sync = true`, so it is on disk before commit() returns. RocksDB's own LOCK file
/// keeps a second process out of the directory. Thread safety: all members may be called
/// concurrently (RocksDB serialises writers internally).
///
/// Opening never starts on state older than what was acknowledged: a damaged log record (other
/// than an unsynced torn tail), a log the MANIFEST expects but that is missing, a missing
/// CURRENT, or a store that reaches a lower write position than its DurableMark records, is
/// refused with StorageErrc::kCorruption and a message naming the files. So is a store whose
/// mark is missing (unless MarkPolicy::kAdopt) or names another store's identity.
///
/// After a failed write (a full disk, an I/O error) RocksDB refuses further writes; the next
/// commit closes and reopens the store (at most every kReopenInterval), so writes resume by
/// themselves once space returns. Until then every commit fails and nothing above the last
/// synced ceiling is issued.
class RocksDbCounterStore final : public CounterStore {
 public:
  /// Opens (creating if missing) the store in `dir`.
  [[nodiscard]] static DetailedResult<std::unique_ptr<RocksDbCounterStore>> open(
      const std::string& dir, const StoreMarks& marks = {});
  /// Runs every check open() runs (marks present and of this store, store not below them,
  /// checksums) and opens the store read-only: nothing in `dir` or at the external mark is
  /// created or written (`ticketd verify`).
  [[nodiscard]] static DetailedResult<std::unique_ptr<CounterStore>> open_verified(
      const std::string& dir, const std::string& external_mark = {});
  ~RocksDbCounterStore() override;

  [[nodiscard]] DetailedResult<std::optional<std::string>> get(std::string_view key) override;
  [[nodiscard]] DetailedResult<KeyValues> scan(std::string_view prefix) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_first(std::string_view prefix,
                                                     std::size_t limit) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_last(std::string_view prefix,
                                                    std::size_t limit) override;
  [[nodiscard]] DetailedResult<void> commit(std::span<const Mutation> mutations) override;

  /// Makes the external mark at `path` (created when missing, whatever it held) this store's,
  /// at the position the store reaches now, and keeps it up to date from here on. For restore
  /// only, once the new data directory holds everything it will start with: a mark reset
  /// earlier would accept the rolled-back directory it replaces if the restore then failed.
  [[nodiscard]] DetailedResult<void> adopt_external_mark(const std::string& path);

  /// Writes a consistent copy of the store as it is now into `target` (which must not exist; its
  /// parent must), with RocksDB's checkpoint: the memtable is flushed, table files are
  /// hard-linked when `target` is on the same file system and copied otherwise, and the copy is
  /// synced. Serving continues meanwhile. Returns the write position the copy reaches.
  [[nodiscard]] DetailedResult<std::uint64_t> checkpoint(const std::string& target);
  /// Opens a store read-only (a backup): reads work, commit() fails with kClosed, and nothing in
  /// `dir` changes. Damaged table files are refused (checksums are verified).
  [[nodiscard]] static DetailedResult<std::unique_ptr<CounterStore>> open_read_only(
      const std::string& dir);
  /// A store's identity (RocksDB's DB identity) and the write position it reaches, read
  /// read-only: what binds a backup's manifest to its checkpoint.
  struct Stamp {
    std::string identity;
    std::uint64_t position = 0;
  };
  [[nodiscard]] static DetailedResult<Stamp> stamp_of(const std::string& dir);

 private:
  static constexpr std::chrono::milliseconds kReopenInterval{200};

  RocksDbCounterStore(std::string dir, std::unique_ptr<rocksdb::DB> db,
                      std::unique_ptr<DurableMark> mark, std::unique_ptr<DurableMark> external);
  [[nodiscard]] DetailedResult<void> reopen_after_failure();
  [[nodiscard]] Error unavailable() const;

  const std::string dir_;
  std::shared_mutex mutex_;  // shared: reads and writes; exclusive: reopening db_
  std::unique_ptr<rocksdb::DB> db_;
  std::unique_ptr<DurableMark> mark_;
  std::unique_ptr<DurableMark> external_;  // null without durability.external_mark
  std::atomic<bool> failed_{false};        // a write failed: reopen before the next one
  std::mutex failure_mutex_;
  Error last_failure_;
  std::chrono::steady_clock::time_point next_reopen_{};
};

}  // namespace ticketd
