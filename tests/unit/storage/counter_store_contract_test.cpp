// One contract suite, run against every CounterStore implementation.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"
#include "storage/backup_marker.h"
#include "storage/memory_counter_store.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {
namespace {

// Opens and "reopens" a store: for memory, reopening keeps the same object (a restart of the
// engine); for RocksDB, the database is closed and opened again from disk.
class StoreFactory {
 public:
  virtual ~StoreFactory() = default;
  virtual CounterStore& open() = 0;
  virtual void close() = 0;
};

class MemoryFactory : public StoreFactory {
 public:
  CounterStore& open() override { return store_; }
  void close() override {}

 private:
  MemoryCounterStore store_;
};

class RocksFactory : public StoreFactory {
 public:
  RocksFactory() {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() / ("ticketd-store-" + std::to_string(rd()));
  }
  ~RocksFactory() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  CounterStore& open() override {
    auto s = RocksDbCounterStore::open(dir_.string());
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    store_ = std::move(*s);
    return *store_;
  }
  void close() override { store_.reset(); }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<RocksDbCounterStore> store_;
};

class CounterStoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      factory_ = std::make_unique<MemoryFactory>();
    } else {
      factory_ = std::make_unique<RocksFactory>();
    }
  }
  std::unique_ptr<StoreFactory> factory_;
};

TEST_P(CounterStoreContract, CommitIsVisibleAndAtomic) {
  auto& s = factory_->open();
  std::vector<Mutation> m{{"seq/a", "1"}, {"seq/b", "2"}, {"tomb/a", "x"}};
  ASSERT_TRUE(s.commit(m));
  std::vector<Mutation> m2{{"tomb/a", std::nullopt}, {"seq/c", "3"}};
  ASSERT_TRUE(s.commit(m2));
  auto all = s.scan("seq/");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0], (std::pair<std::string, std::string>{"seq/a", "1"}));
  EXPECT_EQ((*all)[2], (std::pair<std::string, std::string>{"seq/c", "3"}));
  auto gone = s.get("tomb/a");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->has_value());
  auto tombs = s.scan("tomb/");
  ASSERT_TRUE(tombs);
  EXPECT_TRUE(tombs->empty());
}

TEST_P(CounterStoreContract, ScanLastReadsTheTailBackwardsWithinThePrefix) {
  auto& s = factory_->open();
  std::vector<Mutation> m{{"lease/a/01", "1"},  {"lease/a/02", "2"}, {"lease/a/03", "3"},
                          {"lease/ab/09", "x"}, {"lease/b/01", "y"}, {"lease/a", "z"}};
  ASSERT_TRUE(s.commit(m));
  auto last2 = s.scan_last("lease/a/", 2);
  ASSERT_TRUE(last2);
  ASSERT_EQ(last2->size(), 2u);
  EXPECT_EQ((*last2)[0].first, "lease/a/03");
  EXPECT_EQ((*last2)[1].first, "lease/a/02");
  auto all = s.scan_last("lease/a/", 100);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 3u);
  auto none = s.scan_last("lease/c/", 5);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  auto zero = s.scan_last("lease/a/", 0);
  ASSERT_TRUE(zero);
  EXPECT_TRUE(zero->empty());
}

TEST_P(CounterStoreContract, ScanFirstReadsTheHeadForwardsWithinThePrefix) {
  auto& s = factory_->open();
  std::vector<Mutation> m{{"lease/a/01", "1"},  {"lease/a/02", "2"}, {"lease/a/03", "3"},
                          {"lease/ab/09", "x"}, {"lease/b/01", "y"}, {"lease/a", "z"}};
  ASSERT_TRUE(s.commit(m));
  auto first2 = s.scan_first("lease/a/", 2);
  ASSERT_TRUE(first2);
  ASSERT_EQ(first2->size(), 2u);
  EXPECT_EQ((*first2)[0].first, "lease/a/01");
  EXPECT_EQ((*first2)[1].first, "lease/a/02");
  auto all = s.scan_first("lease/a/", 100);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 3u);
  auto none = s.scan_first("lease/c/", 5);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  auto zero = s.scan_first("lease/a/", 0);
  ASSERT_TRUE(zero);
  EXPECT_TRUE(zero->empty());
}

// RocksDB inserts with a hint per key family (the key without its trailing digits and dashes):
// keys of one family written out of order, families interleaved and one key rewritten over and
// over must still read back in key order with the last value, before and after a reopen (which
// replays the log into a new memtable).
TEST_P(CounterStoreContract, KeysOfOneFamilyWrittenOutOfOrderReadBackInOrder) {
  constexpr int kKeys = 3000;
  std::vector<int> order(kKeys);
  for (int i = 0; i < kKeys; ++i) order[i] = i;
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  const auto lease = [](int n) {
    std::string digits = std::to_string(n);
    return "lease/s1/" + std::string(8 - digits.size(), '0') + digits + "-" + digits;
  };
  const auto check = [&](CounterStore& s) {
    auto all = s.scan("lease/s1/");
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), static_cast<std::size_t>(kKeys));
    for (int n = 0; n < kKeys; ++n) {
      EXPECT_EQ((*all)[n].first, lease(n));
      EXPECT_EQ((*all)[n].second, std::to_string(n));
    }
    auto seqs = s.scan("seq/");
    ASSERT_TRUE(seqs);
    ASSERT_EQ(seqs->size(), 2u);
    EXPECT_EQ((*seqs)[0], (std::pair<std::string, std::string>{"seq/s1", "2999"}));
    EXPECT_EQ((*seqs)[1], (std::pair<std::string, std::string>{"seq/s12", "-2999"}));
  };
  auto& s = factory_->open();
  for (int i = 0; i < kKeys; i += 10) {
    std::vector<Mutation> m;
    for (int j = i; j < i + 10; ++j) {
      m.push_back({lease(order[j]), std::to_string(order[j])});
      m.push_back({"seq/s1", std::to_string(j)});
      m.push_back({"seq/s12", std::to_string(-j)});
    }
    ASSERT_TRUE(s.commit(m));
  }
  check(s);
  factory_->close();
  check(factory_->open());
}

TEST_P(CounterStoreContract, StateSurvivesReopen) {
  {
    auto& s = factory_->open();
    std::vector<Mutation> m{{"seq/a", "hello"}};
    ASSERT_TRUE(s.commit(m));
    factory_->close();
  }
  auto& s = factory_->open();
  auto v = s.get("seq/a");
  ASSERT_TRUE(v && *v);
  EXPECT_EQ(**v, "hello");
}

TEST_P(CounterStoreContract, NoValueIsIssuedTwiceAcrossReopens) {
  std::set<std::uint64_t> seen;
  std::uint64_t last = 0;
  for (int round = 0; round < 5; ++round) {
    auto& store = factory_->open();
    {
      GroupCommitter committer(store);
      TicketService service(store, committer);
      ASSERT_TRUE(service.load());
      ASSERT_TRUE(service.ensure_configured(SequenceSpec{.name = "t", .cache = 7}));
      for (int i = 0; i < 20; ++i) {
        auto b = next_and_wait(service, "t", 1 + static_cast<std::uint64_t>(i % 3));
        ASSERT_TRUE(b);
        EXPECT_GT(b->first, last);
        for (std::uint64_t k = 0; k < b->count; ++k) {
          EXPECT_TRUE(seen.insert(b->first + k * b->step).second);
        }
        last = b->last();
      }
    }
    factory_->close();
  }
  EXPECT_EQ(seen.size(), 5u * (7 * 1 + 7 * 2 + 6 * 3));
}

INSTANTIATE_TEST_SUITE_P(Stores, CounterStoreContract, ::testing::Values("memory", "rocksdb"));

TEST(RocksDbCounterStore, SecondOpenOfADirectoryIsRefusedAsLocked) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("ticketd-lock-" + std::to_string(rd()));
  {
    auto first = RocksDbCounterStore::open(dir.string());
    ASSERT_TRUE(first);
    auto second = RocksDbCounterStore::open(dir.string());
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code, StorageErrc::kLocked) << second.error().message;
  }
  std::filesystem::remove_all(dir);
}

std::filesystem::path temp_dir(const char* what) {
  std::random_device rd;
  return std::filesystem::temp_directory_path() /
         (std::string("ticketd-") + what + "-" + std::to_string(rd()));
}

TEST(RocksDbCounterStore, ACheckpointHoldsEveryCommitBeforeItAndNoneAfter) {
  const auto dir = temp_dir("cp-src");
  const auto copy = temp_dir("cp-dst");
  {
    auto store = RocksDbCounterStore::open(dir.string());
    ASSERT_TRUE(store);
    std::vector<Mutation> before{{"seq/a", "1"}, {"seq/b", "2"}};
    ASSERT_TRUE((*store)->commit(before));
    auto position = (*store)->checkpoint(copy.string());
    ASSERT_TRUE(position) << position.error().message;
    EXPECT_GE(*position, 2u);
    std::vector<Mutation> after{{"seq/c", "3"}, {"seq/a", "9"}};
    ASSERT_TRUE((*store)->commit(after));
    // The live store keeps serving: it sees the later commit.
    auto live = (*store)->get("seq/a");
    ASSERT_TRUE(live && *live);
    EXPECT_EQ(**live, "9");
    // A second checkpoint into an existing directory is refused.
    EXPECT_FALSE((*store)->checkpoint(copy.string()));
  }
  const auto files_before = std::distance(std::filesystem::directory_iterator(copy),
                                          std::filesystem::directory_iterator());
  {
    auto read = RocksDbCounterStore::open_read_only(copy.string());
    ASSERT_TRUE(read) << read.error().message;
    auto all = (*read)->scan("seq/");
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0], (std::pair<std::string, std::string>{"seq/a", "1"}));
    EXPECT_EQ((*all)[1], (std::pair<std::string, std::string>{"seq/b", "2"}));
    auto first = (*read)->scan_first("seq/", 1);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->size(), 1u);
    std::vector<Mutation> write{{"seq/z", "1"}};
    auto refused = (*read)->commit(write);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, StorageErrc::kClosed);
  }
  // Reading the copy wrote nothing into it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(copy),
                          std::filesystem::directory_iterator()),
            files_before);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(copy);
}

TEST(RocksDbCounterStore, ADirectoryHoldingABackupManifestIsRefusedNamingRestore) {
  const auto dir = temp_dir("backup");
  const auto copy = temp_dir("backup-copy");
  {
    auto store = RocksDbCounterStore::open(dir.string());
    ASSERT_TRUE(store);
    std::vector<Mutation> m{{"seq/a", "1"}};
    ASSERT_TRUE((*store)->commit(m));
    ASSERT_TRUE((*store)->checkpoint(copy.string()));
  }
  // The copy keeps the store's identity (RocksDB's checkpoint alone leaves IDENTITY out, and
  // each open would read a new one): what a manifest and a restored mark are bound to.
  auto stamp = RocksDbCounterStore::stamp_of(copy.string());
  auto again = RocksDbCounterStore::stamp_of(copy.string());
  auto mark = DurableMark::read(dir.string());
  ASSERT_TRUE(stamp && again && mark && *mark);
  EXPECT_EQ(stamp->identity, again->identity);
  EXPECT_EQ(stamp->identity, (*mark)->identity);
  EXPECT_EQ(stamp->position, again->position);
  std::FILE* f = std::fopen((copy / std::string(kBackupManifestFile)).c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{}", f);
  std::fclose(f);
  auto refused = RocksDbCounterStore::open(copy.string());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, StorageErrc::kCorruption);
  EXPECT_NE(refused.error().message.find("ticketd restore"), std::string::npos)
      << refused.error().message;
  // Nothing was created in it: no durable mark, no new log.
  EXPECT_FALSE(std::filesystem::exists(copy / DurableMark::kFileName));
  // Without the manifest the same files are a store without its durable mark: refused, unless
  // the caller adopts them (what `ticketd restore` does), which gives them their first mark.
  std::filesystem::remove(copy / std::string(kBackupManifestFile));
  auto unmarked = RocksDbCounterStore::open(copy.string());
  ASSERT_FALSE(unmarked);
  EXPECT_EQ(unmarked.error().code, StorageErrc::kCorruption);
  EXPECT_NE(unmarked.error().message.find("not its durable mark"), std::string::npos)
      << unmarked.error().message;
  EXPECT_FALSE(std::filesystem::exists(copy / DurableMark::kFileName));
  auto opened = RocksDbCounterStore::open(copy.string(), StoreMarks{MarkPolicy::kAdopt, {}});
  ASSERT_TRUE(opened) << opened.error().message;
  auto v = (*opened)->get("seq/a");
  ASSERT_TRUE(v && *v);
  EXPECT_EQ(**v, "1");
  opened->reset();
  // Adopted once, it is an ordinary store with its mark, bound to its identity.
  auto reading = DurableMark::read(copy.string());
  ASSERT_TRUE(reading && *reading);
  EXPECT_FALSE((*reading)->identity.empty());
  EXPECT_TRUE(RocksDbCounterStore::open(copy.string()));
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(copy);
}

TEST(RocksDbCounterStore, OpenVerifiedRunsTheChecksAndWritesNothing) {
  const auto dir = temp_dir("verified");
  {
    auto store = RocksDbCounterStore::open(dir.string());
    ASSERT_TRUE(store);
    std::vector<Mutation> m{{"seq/a", "1"}};
    ASSERT_TRUE((*store)->commit(m));
  }
  std::map<std::string, std::filesystem::file_time_type> before;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    before[e.path().filename().string()] = e.last_write_time();
  }
  {
    auto verified = RocksDbCounterStore::open_verified(dir.string());
    ASSERT_TRUE(verified) << verified.error().message;
    auto v = (*verified)->get("seq/a");
    ASSERT_TRUE(v && *v);
    EXPECT_FALSE((*verified)->commit(std::vector<Mutation>{{"seq/b", "2"}}));
  }
  std::map<std::string, std::filesystem::file_time_type> after;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    after[e.path().filename().string()] = e.last_write_time();
  }
  EXPECT_EQ(before, after);
  // Without its mark the store is refused by the same checks, and the mark is not recreated.
  std::filesystem::remove(dir / DurableMark::kFileName);
  auto refused = RocksDbCounterStore::open_verified(dir.string());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, StorageErrc::kCorruption);
  EXPECT_FALSE(std::filesystem::exists(dir / DurableMark::kFileName));
  std::filesystem::remove_all(dir);
}

TEST(RocksDbCounterStore, OpeningADirectoryWithoutAStoreReadOnlyIsRefused) {
  const auto dir = temp_dir("empty");
  std::filesystem::create_directories(dir);
  auto r = RocksDbCounterStore::open_read_only(dir.string());
  EXPECT_FALSE(r);
  std::filesystem::remove_all(dir);
}

// durability.external_mark (issue 27.7): a data directory rolled back as a whole, its own mark
// included, is refused at open and by verify; a missing, foreign or restored mark is handled.
TEST(RocksDbCounterStore, AnExternalMarkRefusesADirectoryRolledBackAsAWhole) {
  const auto dir = temp_dir("ext");
  const auto snapshot = temp_dir("ext-snapshot");
  const auto other = temp_dir("ext-other");
  const auto volume = temp_dir("ext-volume");
  std::filesystem::create_directories(volume);
  const std::string mark = (volume / "ticketd.external").string();
  const StoreMarks marks{MarkPolicy::kRequire, mark};
  std::uint64_t reached = 0;
  {
    auto store = RocksDbCounterStore::open(dir.string(), marks);
    ASSERT_TRUE(store) << store.error().message;
    std::vector<Mutation> m{{"seq/a", "1"}};
    ASSERT_TRUE((*store)->commit(m));
  }
  // The snapshot: every file of the directory, its durable mark included.
  std::filesystem::copy(dir, snapshot, std::filesystem::copy_options::recursive);
  {
    auto store = RocksDbCounterStore::open(dir.string(), marks);
    ASSERT_TRUE(store) << store.error().message;
    for (int i = 2; i < 10; ++i) {
      std::vector<Mutation> m{{"seq/a", std::to_string(i)}};
      ASSERT_TRUE((*store)->commit(m));
    }
  }
  auto recorded = DurableMark::read_file(mark);
  ASSERT_TRUE(recorded && *recorded);
  reached = (*recorded)->position;
  EXPECT_GE(reached, 9u);  // each commit reached it before commit() returned
  std::filesystem::remove_all(dir);
  std::filesystem::copy(snapshot, dir, std::filesystem::copy_options::recursive);
  // The local mark came back with the snapshot, so without the external one nothing notices.
  EXPECT_TRUE(RocksDbCounterStore::open_verified(dir.string()));
  auto refused = RocksDbCounterStore::open(dir.string(), marks);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, StorageErrc::kCorruption);
  EXPECT_NE(refused.error().message.find("rolled back as a whole"), std::string::npos)
      << refused.error().message;
  auto verified = RocksDbCounterStore::open_verified(dir.string(), mark);
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error().code, StorageErrc::kCorruption);
  // Refused means untouched: the mark still records the highest write.
  recorded = DurableMark::read_file(mark);
  ASSERT_TRUE(recorded && *recorded);
  EXPECT_EQ((*recorded)->position, reached);
  // Another store (a wiped data directory among them) is refused: the mark is not its own.
  auto foreign = RocksDbCounterStore::open(other.string(), marks);
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message.find("belongs to another store"), std::string::npos)
      << foreign.error().message;
  EXPECT_FALSE(std::filesystem::exists(other / "CURRENT"));
  // A restore makes the mark the restored directory's, at its position, and keeps it current.
  {
    auto store = RocksDbCounterStore::open(dir.string(), StoreMarks{MarkPolicy::kAdopt, mark});
    ASSERT_TRUE(store) << store.error().message;
    std::vector<Mutation> m{{"seq/a", "100"}};
    ASSERT_TRUE((*store)->commit(m));
    ASSERT_TRUE((*store)->adopt_external_mark(mark));
    std::vector<Mutation> more{{"seq/a", "101"}};
    ASSERT_TRUE((*store)->commit(more));
  }
  EXPECT_TRUE(RocksDbCounterStore::open(dir.string(), marks));
  // A missing mark is refused for a store that exists; an empty one is adopted.
  std::filesystem::remove(mark);
  auto missing = RocksDbCounterStore::open(dir.string(), marks);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("is missing"), std::string::npos)
      << missing.error().message;
  std::FILE* f = std::fopen(mark.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_TRUE(RocksDbCounterStore::open(dir.string(), marks));
  recorded = DurableMark::read_file(mark);
  ASSERT_TRUE(recorded && *recorded);
  EXPECT_FALSE((*recorded)->identity.empty());
  for (const std::filesystem::path& p : {dir, snapshot, other, volume}) {
    std::filesystem::remove_all(p);
  }
}

}  // namespace
}  // namespace ticketd
