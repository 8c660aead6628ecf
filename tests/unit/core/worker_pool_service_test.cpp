#include "server/core/worker_pool_service.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::FakeClock;
using testing::ScriptedStore;

constexpr std::int64_t kT0 = FakeClock::kDefaultStartUnixMs;

WorkerPoolSpec pool_spec(std::uint32_t size = 8) {
  return WorkerPoolSpec{.name = "orders",
                        .size = size,
                        .min_ttl_ms = 1000,
                        .max_ttl_ms = 60000,
                        .default_ttl_ms = 10000};
}

// A service over a store that outlives it, so tests can restart it on the same data.
struct Workers {
  Workers(CounterStore& store, const Clock& clock, WorkerPoolSpec spec = pool_spec())
      : committer(store), service(store, committer, clock) {
    auto r = service.add_pool(spec);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
  }
  ~Workers() { committer.stop(); }

  PoolLease acquire(std::string holder = "orders-7f9c",
                    std::optional<std::int64_t> ttl = std::nullopt) {
    auto r = acquire_and_wait(service, "orders", std::move(holder), ttl);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : PoolLease{};
  }

  GroupCommitter committer;
  WorkerPoolService service;
};

ErrorCode error_of(const DetailedResult<PoolLease>& r) { return r ? ErrorCode{} : r.error().code; }

TEST(WorkerPoolService, GrantsTheLowestFreeWorkerId) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  EXPECT_EQ(w.acquire("a").worker_id, 0u);
  const auto b = w.acquire("b");
  EXPECT_EQ(b.worker_id, 1u);
  EXPECT_EQ(w.acquire("c").worker_id, 2u);
  ASSERT_TRUE(release_and_wait(w.service, "orders", b.lease_id));
  EXPECT_EQ(w.acquire("d").worker_id, 1u);
  EXPECT_EQ(w.acquire("e").worker_id, 3u);
}

TEST(WorkerPoolService, ALeaseCarriesItsTimesAndAnIdThatNamesWorkerAndGeneration) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  const auto lease = w.acquire("orders-7f9c", 5000);
  EXPECT_EQ(lease.pool, "orders");
  EXPECT_EQ(lease.lease_id, "0-1");
  EXPECT_EQ(lease.holder, "orders-7f9c");
  EXPECT_EQ(lease.granted_at_ms, kT0);
  EXPECT_EQ(lease.ttl_ms, 5000);
  EXPECT_EQ(lease.expires_at_ms, kT0 + 5000);
  EXPECT_EQ(lease.not_before_ms, 0);                     // a never-used ID: nothing to wait for
  EXPECT_EQ(w.acquire("x").expires_at_ms, kT0 + 10000);  // the pool's default TTL
}

TEST(WorkerPoolService, ALeaseExpiresExactlyAtItsTtl) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  const auto first = w.acquire("a", 10000);
  clock.advance(9999);
  EXPECT_EQ(w.acquire("b").worker_id, 1u);  // 0 is still live 1 ms before the end
  ASSERT_EQ(w.service.status("orders")->live.size(), 2u);
  clock.advance(1);  // now == expires_at_ms
  EXPECT_EQ(error_of(keepalive_and_wait(w.service, "orders", first.lease_id)),
            ErrorCode(WorkerErrc::kLeaseExpired));
  const auto again = w.acquire("c");
  EXPECT_EQ(again.worker_id, 0u);
  EXPECT_EQ(again.lease_id, "0-2");
  EXPECT_EQ(again.not_before_ms, kT0 + 10000);  // the previous holder's expiry
}

TEST(WorkerPoolService, KeepaliveExtendsFromNowByTheLeaseTtl) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  const auto lease = w.acquire("a", 10000);
  clock.advance(6000);
  auto kept = keepalive_and_wait(w.service, "orders", lease.lease_id);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->expires_at_ms, kT0 + 16000);
  EXPECT_EQ(kept->lease_id, lease.lease_id);
  clock.advance(9999);  // past the original expiry, 1 ms before the extended one
  EXPECT_EQ(w.acquire("b").worker_id, 1u);
  EXPECT_TRUE(keepalive_and_wait(w.service, "orders", lease.lease_id));
}

TEST(WorkerPoolService, NotBeforeCarriesTheHighestReportedHighWaterMark) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock, pool_spec(1));
  const auto lease = w.acquire("a", 10000);
  // A generator with a logical clock may run ahead: its mark passes the lease's expiry.
  ASSERT_TRUE(keepalive_and_wait(w.service, "orders", lease.lease_id, kT0 + 30000));
  auto lower = keepalive_and_wait(w.service, "orders", lease.lease_id, kT0 + 5);
  ASSERT_TRUE(lower);
  EXPECT_EQ(lower->high_water_ms, kT0 + 30000);  // a lower report never lowers the mark
  clock.advance(10000);
  const auto next = w.acquire("b");
  EXPECT_EQ(next.worker_id, 0u);
  EXPECT_EQ(next.not_before_ms, kT0 + 30000);
  // The mark is carried on even if the next holder reports nothing and releases early.
  clock.advance(100);
  ASSERT_TRUE(release_and_wait(w.service, "orders", next.lease_id));
  EXPECT_EQ(w.acquire("c").not_before_ms, kT0 + 30000);
}

TEST(WorkerPoolService, ReleaseFreesTheIdAtOnceAndHandsOnItsMarkAndReleaseTime) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock, pool_spec(1));
  const auto lease = w.acquire("a", 60000);
  clock.advance(2000);
  auto released = release_and_wait(w.service, "orders", lease.lease_id, kT0 + 1500);
  ASSERT_TRUE(released);
  EXPECT_TRUE(released->released);
  EXPECT_EQ(released->high_water_ms, kT0 + 1500);
  const auto next = w.acquire("b");
  EXPECT_EQ(next.worker_id, 0u);
  EXPECT_EQ(next.not_before_ms, kT0 + 2000);  // release time: later than the reported mark
  EXPECT_EQ(error_of(keepalive_and_wait(w.service, "orders", lease.lease_id)),
            ErrorCode(WorkerErrc::kUnknownLease));  // its ID now belongs to lease 0-2
}

TEST(WorkerPoolService, AReleasedLeaseCannotBeKeptAliveOrReleasedAgain) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  const auto lease = w.acquire("a");
  ASSERT_TRUE(release_and_wait(w.service, "orders", lease.lease_id));
  const auto commits = store.commit_count();
  EXPECT_EQ(error_of(keepalive_and_wait(w.service, "orders", lease.lease_id)),
            ErrorCode(WorkerErrc::kLeaseReleased));
  EXPECT_EQ(error_of(release_and_wait(w.service, "orders", lease.lease_id)),
            ErrorCode(WorkerErrc::kLeaseReleased));
  EXPECT_EQ(store.commit_count(), commits);
}

TEST(WorkerPoolService, UnknownPoolsAndLeasesAreRefused) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  EXPECT_EQ(error_of(acquire_and_wait(w.service, "nope", "a", std::nullopt)),
            ErrorCode(WorkerErrc::kUnknownPool));
  EXPECT_EQ(error_of(keepalive_and_wait(w.service, "nope", "0-1")),
            ErrorCode(WorkerErrc::kUnknownPool));
  (void)w.acquire("a");
  for (const char* id : {"", "0", "0-0", "0-2", "1-1", "99999-1", "x-1", "0-1-1", "-1-1"}) {
    EXPECT_EQ(error_of(keepalive_and_wait(w.service, "orders", id)),
              ErrorCode(WorkerErrc::kUnknownLease))
        << id;
    EXPECT_EQ(error_of(release_and_wait(w.service, "orders", id)),
              ErrorCode(WorkerErrc::kUnknownLease))
        << id;
  }
}

TEST(WorkerPoolService, AFullPoolRefusesWithoutWriting) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock, pool_spec(2));
  (void)w.acquire("a");
  (void)w.acquire("b");
  const auto commits = store.commit_count();
  auto r = acquire_and_wait(w.service, "orders", "c", std::nullopt);
  ASSERT_EQ(error_of(r), ErrorCode(WorkerErrc::kPoolFull));
  EXPECT_NE(r.error().message.find("all 2 worker IDs are leased"), std::string::npos);
  EXPECT_EQ(store.commit_count(), commits);
}

TEST(WorkerPoolService, TtlsOutsideThePoolLimitsAreRefused) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  for (std::int64_t ttl : {0, 999, 60001}) {
    EXPECT_EQ(error_of(acquire_and_wait(w.service, "orders", "a", ttl)),
              ErrorCode(TicketErrc::kInvalidArgument))
        << ttl;
  }
  EXPECT_EQ(error_of(acquire_and_wait(w.service, "orders", "", std::nullopt)),
            ErrorCode(TicketErrc::kInvalidArgument));
  EXPECT_EQ(w.acquire("a", 1000).ttl_ms, 1000);
  EXPECT_EQ(w.acquire("a", 60000).ttl_ms, 60000);
}

TEST(WorkerPoolService, AHighWaterMarkMoreThanADayAheadIsRefusedAndChangesNothing) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  const auto lease = w.acquire("a");
  clock.advance(10);
  EXPECT_EQ(error_of(keepalive_and_wait(w.service, "orders", lease.lease_id,
                                        kT0 + 10 + kMaxHighWaterAheadMs + 1)),
            ErrorCode(TicketErrc::kInvalidArgument));
  EXPECT_EQ(error_of(keepalive_and_wait(w.service, "orders", lease.lease_id, -1)),
            ErrorCode(TicketErrc::kInvalidArgument));
  const auto live = w.service.status("orders")->live;
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].high_water_ms, 0);
  EXPECT_EQ(live[0].expires_at_ms, lease.expires_at_ms);
}

TEST(WorkerPoolService, RestartReloadsLeasesFromTheStore) {
  ScriptedStore store;
  FakeClock clock;
  PoolLease a;
  PoolLease b;
  {
    Workers w(store, clock);
    a = w.acquire("a", 20000);
    b = w.acquire("b", 20000);
    (void)w.acquire("c", 20000);
    ASSERT_TRUE(keepalive_and_wait(w.service, "orders", a.lease_id, kT0 + 42));
    clock.advance(100);
    ASSERT_TRUE(release_and_wait(w.service, "orders", b.lease_id, kT0 + 77));
  }
  clock.advance(100);
  Workers w(store, clock);
  auto live = w.service.status("orders")->live;
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].lease_id, a.lease_id);
  EXPECT_EQ(live[0].high_water_ms, kT0 + 42);
  EXPECT_EQ(live[0].expires_at_ms, kT0 + 20000);
  EXPECT_EQ(live[1].lease_id, "2-1");
  // The surviving lease can be kept alive; the released ID is granted again, to generation 2,
  // with the release time as its not_before.
  EXPECT_TRUE(keepalive_and_wait(w.service, "orders", a.lease_id));
  const auto again = w.acquire("d");
  EXPECT_EQ(again.lease_id, "1-2");
  EXPECT_EQ(again.not_before_ms, kT0 + 100);
  EXPECT_EQ(error_of(release_and_wait(w.service, "orders", b.lease_id)),
            ErrorCode(WorkerErrc::kUnknownLease));
}

// A lease read from the store is judged on this process's clock: held for one full TTL after
// the read, whatever expiry time another clock wrote into it; then free as usual.
TEST(WorkerPoolService, StoredLeasesAreHeldForOneTtlAfterARestartWhateverTheirExpiry) {
  ScriptedStore store;
  FakeClock clock;
  {
    Workers w(store, clock);
    (void)w.acquire("a", 5000);
  }
  clock.advance(5000);  // its stored expiry has passed on this clock
  Workers w(store, clock);
  EXPECT_EQ(w.service.status("orders")->live.size(), 1u);
  EXPECT_EQ(w.acquire("b").worker_id, 1u);
  clock.advance(4999);
  EXPECT_EQ(w.acquire("c").worker_id, 2u);
  clock.advance(1);  // one TTL after the restart read it
  const auto next = w.acquire("d");
  EXPECT_EQ(next.lease_id, "0-2");
  EXPECT_EQ(next.not_before_ms, kT0 + 5000);
}

// Issue 27.9: a new leader whose clock runs 30 s ahead read a lease that, on its clock, expired
// 10 s ago, while the holder (on the old leader's clock) still had 20 s left. The ID is not
// granted again, and the holder's keepalive still succeeds.
TEST(WorkerPoolService, ANewLeaderWithAClockAheadNeverGrantsALiveLeaseAgain) {
  ScriptedStore store;
  FakeClock old_leader;
  PoolLease a;
  {
    Workers w(store, old_leader);
    a = w.acquire("a", 20000);  // expires at kT0 + 20000 on the old leader's clock
  }
  FakeClock new_leader;
  new_leader.advance(30000);  // the same instant, read 30 s ahead
  Workers w(store, new_leader);
  EXPECT_EQ(w.acquire("b").worker_id, 1u);
  auto kept = keepalive_and_wait(w.service, "orders", a.lease_id);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->expires_at_ms, kT0 + 30000 + 20000);
  // With the holder gone, the ID is free one TTL after its last keepalive, on this clock.
  new_leader.advance(20000);
  EXPECT_EQ(w.acquire("c").lease_id, "0-2");
}

// The converse skew: a new leader whose clock runs behind keeps the stored expiry, the later of
// the two.
TEST(WorkerPoolService, ANewLeaderWithAClockBehindKeepsTheStoredExpiry) {
  ScriptedStore store;
  FakeClock old_leader;
  old_leader.advance(30000);
  {
    Workers w(store, old_leader);
    (void)w.acquire("a", 10000);  // expires at kT0 + 40000
  }
  FakeClock new_leader;  // 30 s behind
  Workers w(store, new_leader);
  new_leader.advance(39999);
  EXPECT_EQ(w.acquire("b").worker_id, 1u);
  new_leader.advance(1);
  EXPECT_EQ(w.acquire("c").worker_id, 0u);
}

// Found by the nemesis suite (tests/nemesis, a clock stepped 30 s on a running server): the
// wall clock stepped forward here made every lease expire at once, and its worker ID was granted
// to the next holder while the first, told a TTL, still held it. A lease now ends only once one
// TTL has also passed on the monotonic clock; a step back only holds it longer.
TEST(WorkerPoolService, AWallClockSteppedForwardEndsNoLeaseEarly) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock, pool_spec(1));
  const auto a = w.acquire("a", 10000);
  clock.jump(30000);  // NTP or an operator steps the clock: no time passed
  EXPECT_EQ(error_of(acquire_and_wait(w.service, "orders", "b", std::nullopt)),
            ErrorCode(WorkerErrc::kPoolFull));
  EXPECT_EQ(w.service.status("orders")->live.size(), 1u);
  auto kept = keepalive_and_wait(w.service, "orders", a.lease_id);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->expires_at_ms, kT0 + 30000 + 10000);  // from the clock's reading now
  clock.advance(9999);
  EXPECT_EQ(error_of(acquire_and_wait(w.service, "orders", "b", std::nullopt)),
            ErrorCode(WorkerErrc::kPoolFull));
  clock.advance(1);  // one TTL since the keepalive on both clocks
  EXPECT_EQ(w.acquire("b").lease_id, "0-2");
}

TEST(WorkerPoolService, AWallClockSteppedBackHoldsALeaseLongerNeverShorter) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock, pool_spec(1));
  (void)w.acquire("a", 10000);  // expires at kT0 + 10000
  clock.jump(-30000);
  clock.advance(10000);  // one TTL passed; the wall clock reads kT0 - 20000
  EXPECT_EQ(error_of(acquire_and_wait(w.service, "orders", "b", std::nullopt)),
            ErrorCode(WorkerErrc::kPoolFull));
  clock.advance(30000);  // the stored expiry passes on the wall clock too
  EXPECT_EQ(w.acquire("b").lease_id, "0-2");
}

TEST(WorkerPoolService, AFailedWriteLeavesTheSlotAsItWas) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock);
  store.fail_next(1);
  auto failed = acquire_and_wait(w.service, "orders", "a", std::nullopt);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode(StorageErrc::kNoSpace));
  const auto lease = w.acquire("a");
  EXPECT_EQ(lease.lease_id, "0-1");  // the failed grant left no trace
  clock.advance(3000);
  store.fail_next(1);
  EXPECT_FALSE(keepalive_and_wait(w.service, "orders", lease.lease_id, kT0 + 2000));
  store.fail_next(1);
  EXPECT_FALSE(release_and_wait(w.service, "orders", lease.lease_id));
  const auto live = w.service.status("orders")->live;
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0], lease);
}

TEST(WorkerPoolService, ASlotRecordRoundTripsThroughItsEncoding) {
  WorkerSlotRecord r{.generation = 7,
                     .released = true,
                     .holder = "orders 7f9c=x",
                     .granted_at_ms = -5,
                     .ttl_ms = 10000,
                     .expires_at_ms = 1767225610000,
                     .not_before_ms = 1767225600000,
                     .high_water_ms = 1767225605000,
                     .released_at_ms = 1767225606000};
  EXPECT_EQ(decode_worker_slot(encode_worker_slot(r)), r);
  EXPECT_EQ(worker_slot_key("orders", 17), "worker/orders/00017");
  EXPECT_FALSE(decode_worker_slot("v=2 gen=1"));
  EXPECT_FALSE(decode_worker_slot("v=1 gen=1 state=gone"));
  auto text = encode_worker_slot(r);
  for (std::size_t n = 0; n < text.find(" holder="); ++n) {
    EXPECT_FALSE(decode_worker_slot(text.substr(0, n))) << n;
  }
}

TEST(WorkerPoolService, ConcurrentHoldersGetDistinctIdsUntilThePoolIsFull) {
  ScriptedStore store;
  FakeClock clock;
  Workers w(store, clock, pool_spec(100));
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20;
  std::vector<std::vector<DetailedResult<PoolLease>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        results[t].push_back(acquire_and_wait(w.service, "orders", "h" + std::to_string(t), {}));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::uint32_t> ids;
  int full = 0;
  for (const auto& per : results) {
    for (const auto& r : per) {
      if (r) {
        EXPECT_TRUE(ids.insert(r->worker_id).second) << r->worker_id;
      } else {
        EXPECT_EQ(r.error().code, ErrorCode(WorkerErrc::kPoolFull));
        ++full;
      }
    }
  }
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(*ids.rbegin(), 99u);
  EXPECT_EQ(full, kThreads * kPerThread - 100);
}

TEST(WorkerPoolService, ConcurrentAcquireAndReleaseNeverGiveOneIdToTwoLiveHolders) {
  ScriptedStore store;
  FakeClock clock;
  constexpr std::uint32_t kSize = 4;
  Workers w(store, clock, pool_spec(kSize));
  std::array<std::atomic<bool>, kSize> held{};
  std::atomic<int> doubles{0};
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        auto r = acquire_and_wait(w.service, "orders", "h" + std::to_string(t), {});
        if (!r) continue;  // full: another thread holds every ID
        ++granted;
        if (held[r->worker_id].exchange(true)) ++doubles;
        // Widen the window in which a second grant of this ID would be seen.
        for (int y = 0; y < 20; ++y) std::this_thread::yield();
        held[r->worker_id].store(false);
        // Cleared before the release: the ID may be granted again only after this.
        auto released = release_and_wait(w.service, "orders", r->lease_id);
        EXPECT_TRUE(released);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(doubles.load(), 0);
  EXPECT_GT(granted.load(), 300);
}

}  // namespace
}  // namespace ticketd
