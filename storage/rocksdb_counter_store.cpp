#include "storage/rocksdb_counter_store.h"

#include <fcntl.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "server/base/log.h"
#include "storage/backup_marker.h"

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

// RocksDB's own messages (warnings and errors only) go to ticketd's log, not to a LOG file on the
// data device: when that device is full, RocksDB's file logger fails, and the Debian build then
// aborts on an assertion at its next line.
class ForwardingLogger final : public rocksdb::Logger {
 public:
  ForwardingLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    std::array<char, 1024> line{};
    std::vsnprintf(line.data(), line.size(), format, ap);
    const std::string message = std::string("rocksdb: ") + line.data();
    // Warnings a checkpoint (an online backup) and opening a copy of one always print.
    for (const char* benign : {"File Deletions", "without unique ID to verify"}) {
      if (level < rocksdb::InfoLogLevel::ERROR_LEVEL && message.find(benign) != std::string::npos) {
        log::debug(message);
        return;
      }
    }
    if (level >= rocksdb::InfoLogLevel::ERROR_LEVEL) {
      log::error(message);
    } else {
      log::warn(message);
    }
  }
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
};

// RocksDB's automatic recovery from a full disk re-uses the failed log writer and, in the Debian
// build, aborts on an assertion. The store recovers by reopening instead (see commit()).
class NoAutomaticRecovery final : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/, rocksdb::Status /*bg_error*/,
                            bool* auto_recovery) override {
    *auto_recovery = false;
  }
};

// The memtable's insert hint: RocksDB remembers, per prefix, where the last key with that prefix
// went, and starts the next insert there instead of at the top of the skip list. ticketd's
// writes land next to the previous one of their family: a sequence's record is rewritten (a new
// version sorts just before the old one), and lease and gapless keys end in a zero-padded
// counter that only grows. The prefix is the key without its trailing digits and dashes
// ("lease/Tickets64/" for "lease/Tickets64/<ms>-<n>"). A hint that does not fit (keys of one
// prefix written out of order) costs a search from where it fits, never a wrong order.
class HintPrefix final : public rocksdb::SliceTransform {
 public:
  [[nodiscard]] const char* Name() const override { return "ticketd.HintPrefix"; }
  [[nodiscard]] rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    std::size_t n = key.size();
    while (n > 0 && ((key[n - 1] >= '0' && key[n - 1] <= '9') || key[n - 1] == '-')) --n;
    return {key.data(), n};
  }
  [[nodiscard]] bool InDomain(const rocksdb::Slice& /*key*/) const override { return true; }
};

rocksdb::Options store_options(bool create) {
  rocksdb::Options options;
  options.create_if_missing = create;
  // Counters are tiny; keep the footprint small and the WAL the source of truth.
  options.max_open_files = 64;
  options.keep_log_file_num = 4;
  options.write_buffer_size = 4 << 20;
  options.memtable_insert_with_hint_prefix_extractor = std::make_shared<HintPrefix>();
  // Recovery refuses every damaged record except an incomplete one at the very end of the last
  // log (a write that a crash interrupted before it was synced, so never acknowledged). The
  // default, point-in-time recovery, silently drops everything after the first bad record.
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  // The MANIFEST lists the logs it expects: a deleted log fails the open instead of vanishing.
  options.track_and_verify_wals_in_manifest = true;
  options.paranoid_checks = true;
  options.info_log = std::make_shared<ForwardingLogger>();
  options.listeners.push_back(std::make_shared<NoAutomaticRecovery>());
  return options;
}

// What the directory holds before RocksDB opens it.
struct DirContents {
  bool current = false;                // the CURRENT file that names the live MANIFEST
  std::vector<std::string> manifests;  // MANIFEST-*
  std::vector<std::string> data;       // *.log (write-ahead logs) and *.sst
};

DirContents inspect(const std::string& dir) {
  DirContents c;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "CURRENT") {
      c.current = true;
    } else if (name.starts_with("MANIFEST-")) {
      c.manifests.push_back(name);
    } else if (name.ends_with(".log") || name.ends_with(".sst")) {
      c.data.push_back(name);
    }
  }
  std::sort(c.manifests.begin(), c.manifests.end());
  std::sort(c.data.begin(), c.data.end());
  return c;
}

// The write-ahead logs and their sizes, for messages about a store that opened too low.
std::string describe_logs(const std::string& dir, const DirContents& c) {
  std::string out;
  for (const auto& name : c.data) {
    if (!name.ends_with(".log")) continue;
    std::error_code ec;
    const auto size = std::filesystem::file_size(dir + "/" + name, ec);
    out += (out.empty() ? "" : ", ") + name + " (" + (ec ? "?" : std::to_string(size)) + " bytes)";
  }
  return out.empty() ? "no write-ahead log (*.log) present" : "write-ahead logs: " + out;
}

// Reads shared by the read-write store and the read-only one (a backup).
DetailedResult<std::optional<std::string>> read_key(rocksdb::DB& db, std::string_view key) {
  std::string value;
  auto s = db.Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &value);
  if (s.IsNotFound()) return std::optional<std::string>{};
  if (!s.ok()) return to_error(s, "read");
  return std::optional<std::string>{std::move(value)};
}

DetailedResult<KeyValues> read_prefix(rocksdb::DB& db, std::string_view prefix,
                                      std::size_t limit = SIZE_MAX) {
  KeyValues out;
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid() && out.size() < limit;
       it->Next()) {
    auto key = it->key().ToStringView();
    if (!key.starts_with(prefix)) break;
    out.emplace_back(std::string(key), it->value().ToString());
  }
  if (!it->status().ok()) return to_error(it->status(), "scan");
  return out;
}

DetailedResult<KeyValues> read_prefix_last(rocksdb::DB& db, std::string_view prefix,
                                           std::size_t limit) {
  KeyValues out;
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
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

// A backup, opened to be read: RocksDB's read-only mode writes nothing into the directory.
class ReadOnlyStore final : public CounterStore {
 public:
  ReadOnlyStore(std::string dir, std::unique_ptr<rocksdb::DB> db)
      : dir_(std::move(dir)), db_(std::move(db)) {}
  DetailedResult<std::optional<std::string>> get(std::string_view key) override {
    return read_key(*db_, key);
  }
  DetailedResult<KeyValues> scan(std::string_view prefix) override {
    return read_prefix(*db_, prefix);
  }
  DetailedResult<KeyValues> scan_first(std::string_view prefix, std::size_t limit) override {
    return read_prefix(*db_, prefix, limit);
  }
  DetailedResult<KeyValues> scan_last(std::string_view prefix, std::size_t limit) override {
    return read_prefix_last(*db_, prefix, limit);
  }
  DetailedResult<void> commit(std::span<const Mutation>) override {
    return Error{StorageErrc::kClosed, "store at '" + dir_ + "' is open read-only"};
  }

 private:
  std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

RocksDbCounterStore::RocksDbCounterStore(std::string dir, std::unique_ptr<rocksdb::DB> db,
                                         std::unique_ptr<DurableMark> mark,
                                         std::unique_ptr<DurableMark> external)
    : dir_(std::move(dir)),
      db_(std::move(db)),
      mark_(std::move(mark)),
      external_(std::move(external)) {}

RocksDbCounterStore::~RocksDbCounterStore() {
  if (db_) {
    // Closing flushes nothing we depend on (every commit is already synced), but a clean close
    // keeps the next open fast.
    auto s = db_->Close();
    (void)s;  // best effort at shutdown: the data is durable either way
  }
}

namespace {

// What the checks before an open found: the directory's contents, its durable mark, and (when
// the directory holds a store) the store opened read-only, checked against the mark.
struct Checked {
  DirContents contents;
  std::optional<DurableMark::Reading> mark;
  std::unique_ptr<rocksdb::DB> probe;  // null when the directory holds no store yet
  std::string identity;                // the probe's DB identity
};

std::string mark_path(const std::string& dir) { return dir + "/" + DurableMark::kFileName; }

Error older_than_acknowledged(const std::string& dir, const DirContents& contents,
                              std::uint64_t reached, std::uint64_t acknowledged) {
  return Error{StorageErrc::kCorruption,
               "store at '" + dir + "' is older than what ticketd acknowledged: it reaches write " +
                   std::to_string(reached) + " but " + mark_path(dir) + " records write " +
                   std::to_string(acknowledged) +
                   " as synced and answered. A write-ahead log was lost, truncated or damaged (" +
                   describe_logs(dir, contents) +
                   "); starting would issue values again, so "
                   "ticketd refuses"};
}

Error open_error(const std::string& dir, const DirContents& contents, const rocksdb::Status& st) {
  Error e = to_error(st, "open RocksDB at '" + dir + "'");
  if (st.IsCorruption()) {
    e.message += " (" + describe_logs(dir, contents) +
                 "; the rocksdb lines above name the damaged record). ticketd refuses to start "
                 "on a damaged store";
  }
  return e;
}

// The external mark against the store found in the directory (`identity` empty and `reached` 0
// when there is none yet). Restore (kAdopt) resets the mark instead, so it is not checked.
DetailedResult<void> check_external(const std::string& dir, const StoreMarks& marks,
                                    const std::string& identity, std::uint64_t reached) {
  if (marks.external.empty() || marks.policy == MarkPolicy::kAdopt) return {};
  auto read = DurableMark::read_file(marks.external, true);
  if (!read) return read.error();
  const std::string& path = marks.external;
  if (!*read) {
    if (identity.empty()) return {};  // a new store and a new mark: both start here
    return Error{StorageErrc::kCorruption,
                 "the external durable mark " + path +
                     " (durability.external_mark) is missing while the store at '" + dir +
                     "' exists: it is what tells a data directory rolled back as a whole from "
                     "the one ticketd last served, so ticketd refuses to start without it. If "
                     "the mark is being set up for this store, create it empty (install -m 600 "
                     "/dev/null " +
                     path + ") and ticketd adopts it"};
  }
  if (!(*read)->identity.empty() && (*read)->identity != identity) {
    return Error{StorageErrc::kCorruption,
                 "the external durable mark " + path + " belongs to another store (identity " +
                     (*read)->identity + ", the store at '" + dir + "' is " +
                     (identity.empty() ? std::string("new") : identity) +
                     "): each server needs its own, and a data directory made from a backup "
                     "gets one with `ticketd restore --external-mark`"};
  }
  if (reached < (*read)->position) {
    return Error{StorageErrc::kCorruption,
                 "store at '" + dir +
                     "' is older than what ticketd acknowledged: it reaches "
                     "write " +
                     std::to_string(reached) + " but the external durable mark " + path +
                     " records write " + std::to_string((*read)->position) +
                     ". The data directory was rolled back as a whole (a disk or VM snapshot, "
                     "or a copy put back); starting would issue values again, so ticketd "
                     "refuses. Make a data directory from a backup with `ticketd restore "
                     "--external-mark " +
                     path + "`, which skips past what was issued"};
  }
  return {};
}

// Every check that needs no write: the refusals are the same whether the store is then opened to
// serve or only to be verified, and a refused directory stays exactly as it was found.
DetailedResult<Checked> check_directory(const std::string& dir, const StoreMarks& marks) {
  const MarkPolicy policy = marks.policy;
  Checked c;
  c.contents = inspect(dir);
  auto mark = DurableMark::read(dir);
  if (!mark) return mark.error();
  c.mark = std::move(*mark);
  const std::uint64_t acknowledged = c.mark ? c.mark->position : 0;
  // A store is created only in a directory that never held one. Without CURRENT, RocksDB would
  // start an empty store next to the old files: every counter would begin again.
  if (!c.contents.current &&
      (!c.contents.manifests.empty() || !c.contents.data.empty() || acknowledged > 0)) {
    std::string detail = c.contents.manifests.empty()
                             ? "no MANIFEST file either"
                             : "its newest MANIFEST is " + c.contents.manifests.back() +
                                   " (to restore the pointer: printf '" +
                                   c.contents.manifests.back() + "\\n' > " + dir + "/CURRENT)";
    return Error{StorageErrc::kCorruption,
                 "data directory '" + dir + "' held a store (" + mark_path(dir) +
                     " records write " + std::to_string(acknowledged) +
                     " as acknowledged) but its CURRENT file is missing; " + detail +
                     "; refusing to create an empty store over it"};
  }
  if (!c.contents.current) {
    if (auto r = check_external(dir, marks, {}, 0); !r) return r.error();
    return c;
  }
  // The mark is what tells a lost or rolled-back log from a complete one: a store found without
  // it is refused, never given a new one that would accept whatever the store now holds. Only
  // restore, which makes a data directory of a backup, adopts an unmarked store.
  if (!c.mark && policy == MarkPolicy::kRequire) {
    return Error{StorageErrc::kCorruption,
                 "data directory '" + dir + "' holds a store but not its durable mark " +
                     mark_path(dir) +
                     " (deleted, or not copied with the store): the mark records the highest "
                     "write ticketd acknowledged, and without it a lost or rolled-back "
                     "write-ahead log cannot be told from a complete one, so ticketd refuses to "
                     "start rather than recreate it. Put the mark back from where the store came "
                     "from, or make a new data directory from a backup with `ticketd restore`"};
  }
  // Checked read-only first, so a refused store stays exactly as it was found: a read-write
  // open would flush what it recovered and retire the damaged log.
  rocksdb::DB* raw = nullptr;
  auto st = rocksdb::DB::OpenForReadOnly(store_options(false), dir, &raw);
  c.probe.reset(raw);
  if (!st.ok()) return open_error(dir, c.contents, st);
  if (st = c.probe->GetDbIdentity(c.identity); !st.ok()) {
    return to_error(st, "read the identity of the store at '" + dir + "'");
  }
  if (c.mark && !c.mark->identity.empty() && c.mark->identity != c.identity) {
    return Error{StorageErrc::kCorruption,
                 mark_path(dir) + " belongs to another store (identity " + c.mark->identity +
                     ", this store's is " + c.identity +
                     "): a mark copied from elsewhere says nothing about what this store "
                     "acknowledged, so ticketd refuses it"};
  }
  const auto reached = c.probe->GetLatestSequenceNumber();
  if (reached < acknowledged)
    return older_than_acknowledged(dir, c.contents, reached, acknowledged);
  if (auto r = check_external(dir, marks, c.identity, reached); !r) return r.error();
  // Every block of every table file against its checksum: damage found later, while loading,
  // would be found after the read-write open had already changed the directory. The store
  // holds counters, not bulk data, so this reads little.
  if (st = c.probe->VerifyChecksum(); !st.ok()) return open_error(dir, c.contents, st);
  return c;
}

}  // namespace

DetailedResult<std::unique_ptr<RocksDbCounterStore>> RocksDbCounterStore::open(
    const std::string& dir, const StoreMarks& marks) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{StorageErrc::kIo, "create data directory '" + dir + "': " + ec.message()};
  if (std::filesystem::exists(dir + "/" + std::string(kBackupManifestFile), ec)) {
    return Error{StorageErrc::kCorruption,
                 "'" + dir + "' is a ticketd backup (it holds " + std::string(kBackupManifestFile) +
                     "), not a data directory: starting on it would issue again every value "
                     "handed out since the backup. Make a data directory of it with `ticketd "
                     "restore --from " +
                     dir + " --data-dir NEW_DIR`"};
  }
  auto checked = check_directory(dir, marks);
  if (!checked) return checked.error();
  checked->probe.reset();
  const std::uint64_t acknowledged = checked->mark ? checked->mark->position : 0;
  // Created (for a new store) before the store itself: a crash between the two leaves a mark at
  // 0 and no store, which starts; never a store without its mark.
  auto mark = DurableMark::open(dir);
  if (!mark) return mark.error();
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(store_options(!checked->contents.current), dir, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (!s.ok()) return open_error(dir, checked->contents, s);
  const std::uint64_t reached = db->GetLatestSequenceNumber();
  if (reached < acknowledged) {
    return older_than_acknowledged(dir, checked->contents, reached, acknowledged);
  }
  std::string identity;
  if (s = db->GetDbIdentity(identity); !s.ok()) {
    return to_error(s, "read the identity of the store at '" + dir + "'");
  }
  if ((*mark)->identity() != identity) {
    // A new store, a mark of the old form, or a store adopted by restore: bound once.
    if (auto r = (*mark)->bind(identity); !r) return r.error();
  }
  if (auto r = (*mark)->record(reached, true); !r) return r.error();
  std::unique_ptr<DurableMark> external;
  if (!marks.external.empty() && marks.policy != MarkPolicy::kAdopt) {
    // Checked above: missing only for a new store, empty when the operator set it up for this
    // one, else this store's and not above it.
    auto opened = DurableMark::open_file(marks.external, std::chrono::milliseconds(0), true);
    if (!opened) return opened.error();
    external = std::move(*opened);
    if (external->identity() != identity) {
      if (auto r = external->bind(identity); !r) return r.error();
    }
    if (auto r = external->record(reached, true); !r) return r.error();
  }
  return std::unique_ptr<RocksDbCounterStore>(
      new RocksDbCounterStore(dir, std::move(db), std::move(*mark), std::move(external)));
}

DetailedResult<void> RocksDbCounterStore::adopt_external_mark(const std::string& path) {
  std::unique_lock lock(mutex_);
  if (!db_) return unavailable();
  std::string identity;
  if (auto s = db_->GetDbIdentity(identity); !s.ok()) {
    return to_error(s, "read the identity of the store at '" + dir_ + "'");
  }
  auto opened = DurableMark::open_file(path, std::chrono::milliseconds(0), true);
  if (!opened) return opened.error();
  if (auto r = (*opened)->reset(db_->GetLatestSequenceNumber(), identity); !r) return r;
  external_ = std::move(*opened);
  return {};
}

DetailedResult<std::unique_ptr<CounterStore>> RocksDbCounterStore::open_verified(
    const std::string& dir, const std::string& external_mark) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error{StorageErrc::kIo, "'" + dir + "' is not a directory"};
  }
  auto checked = check_directory(dir, StoreMarks{MarkPolicy::kRequire, external_mark});
  if (!checked) return checked.error();
  if (!checked->probe) {
    return Error{StorageErrc::kIo, "'" + dir + "' holds no store (no CURRENT file)"};
  }
  return std::unique_ptr<CounterStore>(new ReadOnlyStore(dir, std::move(checked->probe)));
}

DetailedResult<std::optional<std::string>> RocksDbCounterStore::get(std::string_view key) {
  std::shared_lock lock(mutex_);
  if (!db_) return unavailable();
  return read_key(*db_, key);
}

DetailedResult<KeyValues> RocksDbCounterStore::scan(std::string_view prefix) {
  std::shared_lock lock(mutex_);
  if (!db_) return unavailable();
  return read_prefix(*db_, prefix);
}

DetailedResult<KeyValues> RocksDbCounterStore::scan_first(std::string_view prefix,
                                                          std::size_t limit) {
  std::shared_lock lock(mutex_);
  if (!db_) return unavailable();
  return read_prefix(*db_, prefix, limit);
}

DetailedResult<KeyValues> RocksDbCounterStore::scan_last(std::string_view prefix,
                                                         std::size_t limit) {
  std::shared_lock lock(mutex_);
  if (!db_) return unavailable();
  return read_prefix_last(*db_, prefix, limit);
}

DetailedResult<std::uint64_t> RocksDbCounterStore::checkpoint(const std::string& target) {
  std::shared_lock lock(mutex_);
  if (!db_) return unavailable();
  rocksdb::Checkpoint* raw = nullptr;
  auto s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  if (!s.ok()) return to_error(s, "checkpoint of '" + dir_ + "'");
  std::uint64_t position = 0;
  // log_size_for_flush 0: always flush, so the copy is table files and no log to replay.
  s = cp->CreateCheckpoint(target, 0, &position);
  if (!s.ok()) return to_error(s, "checkpoint of '" + dir_ + "' into '" + target + "'");
  // RocksDB's checkpoint leaves out the IDENTITY file, and a store without one reads a new
  // random identity at every open: copied, the copy keeps the store's identity, which a backup's
  // manifest and a restored store's durable mark are bound to.
  const std::string identity = target + "/IDENTITY";
  std::error_code ec;
  if (!std::filesystem::exists(identity, ec)) {
    std::filesystem::copy_file(dir_ + "/IDENTITY", identity, ec);
    if (ec) {
      return Error{StorageErrc::kIo,
                   "copy the store's IDENTITY into '" + target + "': " + ec.message()};
    }
    const int fd = ::open(identity.c_str(), O_RDONLY | O_CLOEXEC);
    const bool synced = fd >= 0 && ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    if (!synced) return Error{StorageErrc::kIo, "sync '" + identity + "'"};
  }
  return position;
}

DetailedResult<std::unique_ptr<CounterStore>> RocksDbCounterStore::open_read_only(
    const std::string& dir) {
  if (!std::filesystem::exists(dir + "/CURRENT")) {
    return Error{StorageErrc::kIo, "'" + dir + "' holds no store (no CURRENT file)"};
  }
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::OpenForReadOnly(store_options(false), dir, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (!s.ok()) return to_error(s, "open RocksDB read-only at '" + dir + "'");
  if (s = db->VerifyChecksum(); !s.ok()) return to_error(s, "checksums of '" + dir + "'");
  return std::unique_ptr<CounterStore>(new ReadOnlyStore(dir, std::move(db)));
}

DetailedResult<RocksDbCounterStore::Stamp> RocksDbCounterStore::stamp_of(const std::string& dir) {
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::OpenForReadOnly(store_options(false), dir, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (!s.ok()) return to_error(s, "open RocksDB read-only at '" + dir + "'");
  Stamp stamp;
  if (s = db->GetDbIdentity(stamp.identity); !s.ok()) {
    return to_error(s, "read the identity of the store at '" + dir + "'");
  }
  stamp.position = db->GetLatestSequenceNumber();
  return stamp;
}

Error RocksDbCounterStore::unavailable() const {
  return Error{StorageErrc::kClosed, "store at '" + dir_ + "' is closed"};
}

DetailedResult<void> RocksDbCounterStore::commit(std::span<const Mutation> mutations) {
  rocksdb::WriteBatch batch;
  for (const auto& m : mutations) {
    rocksdb::Slice key(m.key.data(), m.key.size());
    auto s = m.value ? batch.Put(key, rocksdb::Slice(m.value->data(), m.value->size()))
                     : batch.Delete(key);
    if (!s.ok()) return to_error(s, "build write batch");
  }
  if (failed_.load(std::memory_order_acquire)) {
    if (auto r = reopen_after_failure(); !r) return r.error();
  }
  std::shared_lock lock(mutex_);
  if (!db_) return unavailable();
  rocksdb::WriteOptions options;
  options.sync = true;  // the durability switch: fsync the WAL before returning
  auto s = db_->Write(options, &batch);
  if (!s.ok()) {
    // The DB now holds a background error and refuses writes; its log writer must not be used
    // again. The next commit reopens the store (which also tells whether space came back).
    Error e = to_error(s, "synced write");
    {
      std::lock_guard guard(failure_mutex_);
      last_failure_ = e;
    }
    failed_.store(true, std::memory_order_release);
    log::error("storage: " + e.message + "; refusing writes until the store reopens");
    return e;
  }
  // Every write is synced, so the latest published position is durable in the WAL.
  const std::uint64_t position = db_->GetLatestSequenceNumber();
  if (auto r = mark_->record(position); !r) return r;
  // The external mark is synced before the values this write covers are served: one fdatasync
  // per commit (a commit raises a ceiling for `cache` values, or commits a batch of invoices).
  if (external_) return external_->record(position, true);
  return {};
}

DetailedResult<void> RocksDbCounterStore::reopen_after_failure() {
  std::unique_lock lock(mutex_);
  if (!failed_.load(std::memory_order_acquire)) return {};  // another caller reopened it
  std::lock_guard guard(failure_mutex_);
  const auto now = std::chrono::steady_clock::now();
  // One attempt per interval; callers in between get the failure that stopped the store.
  if (now < next_reopen_) {
    return Error{last_failure_.code, last_failure_.message + " (reopening the store)"};
  }
  next_reopen_ = now + kReopenInterval;
  if (db_) {
    auto s = db_->Close();
    (void)s;  // the failed log is reported again by Close(); what it holds is recovered below
    db_.reset();
  }
  const rocksdb::Options options = store_options(false);
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(options, dir_, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (!s.ok()) {
    last_failure_ = to_error(s, "reopen RocksDB at '" + dir_ + "'");
    return last_failure_;
  }
  // Every acknowledged write was synced before the failure, so the store reaches the mark.
  const std::uint64_t reached = db->GetLatestSequenceNumber();
  if (auto stored = mark_->stored(); stored && reached < *stored) {
    last_failure_ = Error{StorageErrc::kCorruption,
                          "reopened store at '" + dir_ + "' is older than the durable mark"};
    return last_failure_;
  }
  db_ = std::move(db);
  failed_.store(false, std::memory_order_release);
  log::info("storage: store at '" + dir_ + "' reopened after a failed write; writes resume");
  return {};
}

}  // namespace ticketd
