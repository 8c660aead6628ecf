#include "server/core/lease_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <thread>
#include <vector>

#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::FakeClock;
using testing::ScriptedStore;

// A ticket engine with a lease log over a ScriptedStore, the sequence "S" (cache 10) created.
struct Leases {
  Leases() {
    EXPECT_TRUE(tickets.load());
    std::promise<DetailedResult<void>> p;
    tickets.create(SequenceSpec{.name = "S", .cache = 10}, CreateOptions{},
                   [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
    EXPECT_TRUE(p.get_future().get());
  }
  ~Leases() {
    reads.stop();
    committer.stop();
  }

  DetailedResult<Lease> lease(std::uint64_t count, std::string holder = "h",
                              std::string_view seq = "S") {
    std::promise<DetailedResult<Lease>> p;
    auto f = p.get_future();
    log.lease(seq, count, std::move(holder),
              [&p](DetailedResult<Lease> r) { p.set_value(std::move(r)); });
    return f.get();
  }
  std::uint64_t ceiling() {
    auto v = store.get(sequence_key("S"));
    EXPECT_TRUE(v && *v);
    auto r = decode_record("S", **v);
    EXPECT_TRUE(r);
    return r ? r->ceiling : 0;
  }

  ScriptedStore store;
  FakeClock clock;
  GroupCommitter committer{store};
  TicketService tickets{store, committer};
  TimerQueue reads;
  LeaseLog log{tickets, store, reads, clock};
};

TEST(LeaseLog, EncodesAndDecodesWithAFreeTextHolder) {
  Lease l{"000001767225600000-0000000003", "S", Block{10, 2, 5}, "a b=c holder=x", 1767225600000};
  const auto key = lease_key(l.sequence, l.lease_id);
  EXPECT_EQ(key, "lease/S/000001767225600000-0000000003");
  EXPECT_EQ(encode_lease(l),
            "first=10 step=2 count=5 granted_at_ms=1767225600000 holder=a b=c holder=x");
  auto back = decode_lease(key, encode_lease(l));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, l);
  EXPECT_FALSE(decode_lease(key, "first=10 step=2"));
  EXPECT_FALSE(decode_lease("seq/S", encode_lease(l)));
  EXPECT_FALSE(decode_lease(key, "first=x step=2 count=5 granted_at_ms=1 holder="));
}

TEST(LeaseLog, ABlockPastTheCeilingIsOneCommitWithItsRecord) {
  Leases e;
  const auto before = e.store.commit_count();
  auto l = e.lease(100, "svc-a");
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->block, (Block{1, 1, 100}));
  EXPECT_EQ(l->holder, "svc-a");
  EXPECT_EQ(l->lease_id, "00000000000000000001");
  // One synced write carried both the raised ceiling and the lease record.
  EXPECT_EQ(e.store.commit_count(), before + 1);
  EXPECT_GE(e.ceiling(), 100u);
  auto stored = e.store.get(lease_key("S", l->lease_id));
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ(decode_lease(lease_key("S", l->lease_id), **stored), *l);
  // The next block starts above it, again in one write.
  auto next = e.lease(1000);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->block.first, 101u);
  EXPECT_EQ(next->lease_id, "00000000000000000101");  // 20 digits: key order is grant order
  EXPECT_EQ(e.store.commit_count(), before + 2);
  EXPECT_GE(e.ceiling(), 1100u);
}

TEST(LeaseLog, AFailedWriteHandsOutNothingAndRecordsNothing) {
  Leases e;
  e.store.fail_next(1);
  const auto ceiling = e.ceiling();
  auto l = e.lease(100);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, TicketErrc::kStorageFailed);
  EXPECT_EQ(e.ceiling(), ceiling);
  EXPECT_TRUE(e.store.scan(kLeasePrefix)->empty());
  // The values were never handed out: the next lease gets them.
  auto again = e.lease(100);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->block.first, 1u);
  EXPECT_EQ(e.store.scan(kLeasePrefix)->size(), 1u);
}

TEST(LeaseLog, ABlockUnderTheCeilingWhileAPrefetchLandsIsRecordedBeforeItIsAnswered) {
  Leases e;
  ASSERT_EQ(next_and_wait(e.tickets, "S", 1)->first, 1u);  // ceiling 10
  e.store.hold();
  // 6 of 10 values gone: a prefetch starts, and is held in the store.
  ASSERT_EQ(next_and_wait(e.tickets, "S", 5)->first, 2u);
  e.store.wait_entered(3);
  std::promise<DetailedResult<Lease>> p;
  e.log.lease("S", 3, "h", [&p](DetailedResult<Lease> r) { p.set_value(std::move(r)); });
  auto f = p.get_future();
  // Its values are under the synced ceiling, but its record is not durable yet: no answer.
  EXPECT_EQ(f.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  e.store.release();
  auto l = f.get();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->block, (Block{7, 1, 3}));
  EXPECT_TRUE(e.store.get(lease_key("S", l->lease_id))->has_value());
}

TEST(LeaseLog, ConcurrentLeasesShareCommitsAndNeverOverlap) {
  Leases e;
  e.store.hold();
  constexpr int kClients = 40;
  std::vector<std::promise<DetailedResult<Lease>>> promises(kClients);
  for (int i = 0; i < kClients; ++i) {
    e.log.lease("S", 25, "c" + std::to_string(i),
                [&promises, i](DetailedResult<Lease> r) { promises[i].set_value(std::move(r)); });
  }
  const auto before = e.store.commit_count();
  e.store.release();
  std::vector<Lease> got;
  for (auto& p : promises) {
    auto r = p.get_future().get();
    ASSERT_TRUE(r);
    got.push_back(*r);
  }
  // The first lease started a write; the other 39 queued behind it and shared one more.
  EXPECT_LE(e.store.commit_count() - before, 2u);
  std::sort(got.begin(), got.end(),
            [](const Lease& a, const Lease& b) { return a.block.first < b.block.first; });
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].block.first, 1 + i * 25);
    EXPECT_EQ(got[i].block.count, 25u);
  }
  EXPECT_GE(e.ceiling(), 1000u);
  std::promise<DetailedResult<std::vector<Lease>>> listed;
  e.log.recent("S", 1000,
               [&listed](DetailedResult<std::vector<Lease>> r) { listed.set_value(std::move(r)); });
  auto all = listed.get_future().get();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), static_cast<std::size_t>(kClients));
}

TEST(LeaseLog, ListsNewestFirstOffTheCallersThread) {
  Leases e;
  for (std::uint64_t i = 0; i < 5; ++i) {
    if (i % 2 == 0) e.clock.advance(1);
    ASSERT_TRUE(e.lease(10, "h" + std::to_string(i)));
  }
  std::promise<std::pair<std::thread::id, DetailedResult<std::vector<Lease>>>> p;
  e.log.recent("S", 3, [&p](DetailedResult<std::vector<Lease>> r) {
    p.set_value({std::this_thread::get_id(), std::move(r)});
  });
  auto [thread, recent] = p.get_future().get();
  EXPECT_NE(thread, std::this_thread::get_id());
  ASSERT_TRUE(recent);
  ASSERT_EQ(recent->size(), 3u);
  EXPECT_EQ((*recent)[0].holder, "h4");
  EXPECT_EQ((*recent)[1].holder, "h3");
  EXPECT_EQ((*recent)[2].holder, "h2");
  EXPECT_EQ((*recent)[0].block, (Block{41, 1, 10}));
  EXPECT_EQ(e.log.recent_now("S", 100)->size(), 5u);
  EXPECT_EQ(e.log.recent_now("S2", 100)->size(), 0u);
}

TEST(LeaseLog, OnlyTicketSequencesLeaseBlocks) {
  Leases e;
  auto unknown = e.lease(10, "h", "Nope");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, TicketErrc::kUnknownSequence);
  ASSERT_TRUE(e.tickets.add_uuidv7("U", std::make_shared<UuidV7Generator>(e.clock)));
  auto uuid = e.lease(10, "h", "U");
  ASSERT_FALSE(uuid);
  EXPECT_EQ(uuid.error().code, TicketErrc::kWrongKind);
  EXPECT_TRUE(e.store.scan(kLeasePrefix)->empty());
}

TEST(LeaseLog, PrunesLeasesPastTheirAgeOldestFirstInBoundedBatches) {
  Leases e;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(e.lease(3));
  e.clock.advance(31LL * 86'400'000);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(e.lease(3));
  const LeaseRetention thirty_days{};
  // Two per call: the batch bounds each sweep.
  auto pruned = e.log.prune(thirty_days, 2);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(*pruned, 2u);
  EXPECT_EQ(*e.log.prune(thirty_days, 100), 3u);
  EXPECT_EQ(*e.log.prune(thirty_days, 100), 0u);
  auto left = e.log.recent_now("S", 100);
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 2u);
  for (const auto& l : *left) EXPECT_EQ(l.granted_at_ms, e.clock.now_unix_ms());
}

TEST(LeaseLog, ALeaseYoungerThanTheRetentionIsNeverPruned) {
  Leases e;
  ASSERT_TRUE(e.lease(3));
  e.clock.advance(30LL * 86'400'000 - 1);
  EXPECT_EQ(*e.log.prune(LeaseRetention{}, 100), 0u);
  e.clock.advance(1);
  EXPECT_EQ(*e.log.prune(LeaseRetention{}, 100), 0u);  // exactly 30 days old: kept
  e.clock.advance(1);
  EXPECT_EQ(*e.log.prune(LeaseRetention{}, 100), 1u);
}

TEST(LeaseLog, PrunesByCountKeepingTheNewest) {
  Leases e;
  std::vector<Lease> taken;
  for (int i = 0; i < 8; ++i) {
    auto l = e.lease(2);
    ASSERT_TRUE(l);
    taken.push_back(*l);
  }
  const LeaseRetention keep3{.max_age_ms = 0, .keep_count = 3};
  EXPECT_EQ(*e.log.prune(keep3, 2), 2u);
  EXPECT_EQ(*e.log.prune(keep3, 100), 3u);
  EXPECT_EQ(*e.log.prune(keep3, 100), 0u);
  auto left = e.log.recent_now("S", 100);
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 3u);
  EXPECT_EQ((*left)[0], taken[7]);
  EXPECT_EQ((*left)[2], taken[5]);
}

}  // namespace
}  // namespace ticketd
