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

/// A CounterStore in a RocksDB directory. Every commit is one WriteBatch written with
/// `WriteOptions::sync = true`, so it is on disk before commit() returns. RocksDB's own LOCK file
/// keeps a second process out of the directory. Thread safety: all members may be called
/// concurrently (RocksDB serialises writers internally).
///
/// Opening never starts on state older than what was acknowledged: a damaged log record (other
/// than an unsynced torn tail), a log the MANIFEST expects but that is missing, a missing
/// CURRENT, or a store that reaches a lower write position than its DurableMark records, is
/// refused with StorageErrc::kCorruption and a message naming the files.
///
/// After a failed write (a full disk, an I/O error) RocksDB refuses further writes; the next
/// commit closes and reopens the store (at most every kReopenInterval), so writes resume by
/// themselves once space returns. Until then every commit fails and nothing above the last
/// synced ceiling is issued.
class RocksDbCounterStore final : public CounterStore {
 public:
  /// Opens (creating if missing) the store in `dir`.
  [[nodiscard]] static DetailedResult<std::unique_ptr<RocksDbCounterStore>> open(
      const std::string& dir);
  ~RocksDbCounterStore() override;

  [[nodiscard]] DetailedResult<std::optional<std::string>> get(std::string_view key) override;
  [[nodiscard]] DetailedResult<KeyValues> scan(std::string_view prefix) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_first(std::string_view prefix,
                                                     std::size_t limit) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_last(std::string_view prefix,
                                                    std::size_t limit) override;
  [[nodiscard]] DetailedResult<void> commit(std::span<const Mutation> mutations) override;

  /// Writes a consistent copy of the store as it is now into `target` (which must not exist; its
  /// parent must), with RocksDB's checkpoint: the memtable is flushed, table files are
  /// hard-linked when `target` is on the same file system and copied otherwise, and the copy is
  /// synced. Serving continues meanwhile. Returns the write position the copy reaches.
  [[nodiscard]] DetailedResult<std::uint64_t> checkpoint(const std::string& target);
  /// Opens a store read-only (a backup): reads work, commit() fails with kClosed, and nothing in
  /// `dir` changes. Damaged table files are refused (checksums are verified).
  [[nodiscard]] static DetailedResult<std::unique_ptr<CounterStore>> open_read_only(
      const std::string& dir);

 private:
  static constexpr std::chrono::milliseconds kReopenInterval{200};

  RocksDbCounterStore(std::string dir, std::unique_ptr<rocksdb::DB> db,
                      std::unique_ptr<DurableMark> mark);
  [[nodiscard]] DetailedResult<void> reopen_after_failure();
  [[nodiscard]] Error unavailable() const;

  const std::string dir_;
  std::shared_mutex mutex_;  // shared: reads and writes; exclusive: reopening db_
  std::unique_ptr<rocksdb::DB> db_;
  std::unique_ptr<DurableMark> mark_;
  std::atomic<bool> failed_{false};  // a write failed: reopen before the next one
  std::mutex failure_mutex_;
  Error last_failure_;
  std::chrono::steady_clock::time_point next_reopen_{};
};

}  // namespace ticketd
