#include "storage/rocksdb_counter_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

namespace ticketd {
namespace {

// rocksdb::Status is translated here and nowhere else.
Error to_error(const rocksdb::Status& s, std::string_view what) {
  StorageErrc code = StorageErrc::kIo;
  if (s.IsNoSpace() || s.subcode() == rocksdb::Status::kNoSpace) {
    code = StorageErrc::kNoSpace;
  } else if (s.IsCorruption()) {
    code = StorageErrc::kCorruption;
  } else if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    code = StorageErrc::kLocked;
  }
  return Error{code, std::string(what) + ": " + s.ToString()};
}

}  // namespace

RocksDbCounterStore::RocksDbCounterStore(std::unique_ptr<rocksdb::DB> db) : db_(std::move(db)) {}

RocksDbCounterStore::~RocksDbCounterStore() {
  if (db_) {
    // Closing flushes nothing we depend on (every commit is already synced), but a clean close
    // keeps the next open fast.
    auto s = db_->Close();
    (void)s;  // best effort at shutdown: the data is durable either way
  }
}

DetailedResult<std::unique_ptr<RocksDbCounterStore>> RocksDbCounterStore::open(
    const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  // Counters are tiny; keep the footprint small and the WAL the source of truth.
  options.max_open_files = 64;
  options.keep_log_file_num = 4;
  options.write_buffer_size = 4 << 20;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(options, dir, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (!s.ok()) return to_error(s, "open RocksDB at '" + dir + "'");
  return std::unique_ptr<RocksDbCounterStore>(new RocksDbCounterStore(std::move(db)));
}

DetailedResult<std::optional<std::string>> RocksDbCounterStore::get(std::string_view key) {
  std::string value;
  auto s = db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &value);
  if (s.IsNotFound()) return std::optional<std::string>{};
  if (!s.ok()) return to_error(s, "read");
  return std::optional<std::string>{std::move(value)};
}

DetailedResult<KeyValues> RocksDbCounterStore::scan(std::string_view prefix) {
  KeyValues out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
    auto key = it->key().ToStringView();
    if (!key.starts_with(prefix)) break;
    out.emplace_back(std::string(key), it->value().ToString());
  }
  if (!it->status().ok()) return to_error(it->status(), "scan");
  return out;
}

DetailedResult<KeyValues> RocksDbCounterStore::scan_last(std::string_view prefix,
                                                         std::size_t limit) {
  KeyValues out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  // Position at the last key <= prefix + 0xFF..., then walk backwards while the prefix holds.
  std::string upper(prefix);
  upper.append(16, '\xff');
  for (it->SeekForPrev(upper); it->Valid() && out.size() < limit; it->Prev()) {
    auto key = it->key().ToStringView();
    if (!key.starts_with(prefix)) break;
    out.emplace_back(std::string(key), it->value().ToString());
  }
  if (!it->status().ok()) return to_error(it->status(), "reverse scan");
  return out;
}

DetailedResult<void> RocksDbCounterStore::commit(std::span<const Mutation> mutations) {
  rocksdb::WriteBatch batch;
  for (const auto& m : mutations) {
    rocksdb::Slice key(m.key.data(), m.key.size());
    auto s = m.value ? batch.Put(key, rocksdb::Slice(m.value->data(), m.value->size()))
                     : batch.Delete(key);
    if (!s.ok()) return to_error(s, "build write batch");
  }
  rocksdb::WriteOptions options;
  options.sync = true;  // the durability switch: fsync the WAL before returning
  auto s = db_->Write(options, &batch);
  if (!s.ok()) return to_error(s, "synced write");
  return {};
}

}  // namespace ticketd
