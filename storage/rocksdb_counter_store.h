// The embedded, default CounterStore.
#pragma once

#include <memory>
#include <string>

#include "storage/counter_store.h"

namespace rocksdb {
class DB;
}

namespace ticketd {

/// A CounterStore in a RocksDB directory. Every commit is one WriteBatch written with
/// `WriteOptions::sync = true`, so it is on disk before commit() returns. RocksDB's own LOCK file
/// keeps a second process out of the directory. Thread safety: all members may be called
/// concurrently (RocksDB serialises writers internally).
class RocksDbCounterStore final : public CounterStore {
 public:
  /// Opens (creating if missing) the store in `dir`.
  [[nodiscard]] static DetailedResult<std::unique_ptr<RocksDbCounterStore>> open(
      const std::string& dir);
  ~RocksDbCounterStore() override;

  [[nodiscard]] DetailedResult<std::optional<std::string>> get(std::string_view key) override;
  [[nodiscard]] DetailedResult<KeyValues> scan(std::string_view prefix) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_last(std::string_view prefix,
                                                    std::size_t limit) override;
  [[nodiscard]] DetailedResult<void> commit(std::span<const Mutation> mutations) override;

 private:
  explicit RocksDbCounterStore(std::unique_ptr<rocksdb::DB> db);
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace ticketd
