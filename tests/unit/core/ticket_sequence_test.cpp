#include "server/core/ticket_sequence.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/core/ticket_errc.h"
#include "server/core/ticket_service.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::ScriptedStore;

struct Fixture {
  ScriptedStore store;
  GroupCommitter committer{store};
  std::shared_ptr<TicketSequence> make(SequenceSpec spec, std::uint64_t ceiling) {
    if (spec.name.empty()) spec.name = "s";
    return std::make_shared<TicketSequence>(SequenceRecord{spec, ceiling}, committer);
  }
};

std::uint64_t take1(TicketSequence& s) {
  auto r = take_and_wait(s, 1);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? r->first : 0;
}

TEST(AlignUp, FollowsMySqlIncrementOffsetSemantics) {
  struct Case {
    std::uint64_t v, inc, off, want;
  };
  const Case cases[] = {{1, 1, 1, 1},    {5, 1, 1, 5}, {1, 2, 1, 1},  {2, 2, 1, 3},
                        {1, 2, 2, 2},    {3, 2, 2, 4}, {1, 10, 5, 5}, {6, 10, 5, 15},
                        {15, 10, 5, 15}, {0, 3, 3, 0}, {1, 3, 3, 3},  {100, 7, 7, 105}};
  for (const auto& c : cases) {
    EXPECT_EQ(static_cast<std::uint64_t>(align_up(c.v, c.inc, c.off)), c.want)
        << c.v << " inc " << c.inc << " off " << c.off;
  }
  // Past 2^64-1 the result is still exact (128-bit), so callers can detect exhaustion.
  auto big = align_up(~std::uint64_t{0}, 2, 2);
  EXPECT_GT(big, static_cast<unsigned __int128>(~std::uint64_t{0}));
}

TEST(TicketSequence, IssuesConsecutiveValuesFromStart) {
  Fixture f;
  auto s = f.make(SequenceSpec{.start = 100}, 99);
  EXPECT_EQ(take1(*s), 100u);
  EXPECT_EQ(take1(*s), 101u);
  EXPECT_EQ(take1(*s), 102u);
}

TEST(TicketSequence, OddAndEvenServersNeverMeet) {
  Fixture f;
  auto odd = f.make(SequenceSpec{.increment = 2, .offset = 1}, 0);
  auto even = f.make(SequenceSpec{.increment = 2, .offset = 2}, 0);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 500; ++i) {
    auto a = take1(*odd);
    auto b = take1(*even);
    EXPECT_EQ(a % 2, 1u);
    EXPECT_EQ(b % 2, 0u);
    EXPECT_TRUE(seen.insert(a).second);
    EXPECT_TRUE(seen.insert(b).second);
  }
  EXPECT_EQ(*seen.begin(), 1u);
}

TEST(TicketSequence, NWayOffsetsPartitionTheValues) {
  Fixture f;
  std::set<std::uint64_t> seen;
  for (std::uint64_t off = 1; off <= 3; ++off) {
    auto s = f.make(SequenceSpec{.start = 10, .increment = 3, .offset = off}, 9);
    for (int i = 0; i < 100; ++i) {
      auto v = take1(*s);
      EXPECT_GE(v, 10u);
      EXPECT_EQ(v % 3, off % 3);
      EXPECT_TRUE(seen.insert(v).second) << v;
    }
  }
}

TEST(TicketSequence, BlockIsAnArithmeticProgression) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 2}, 0);
  auto b = take_and_wait(*s, 1000);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, (Block{2, 2, 1000}));
  EXPECT_EQ(b->last(), 2000u);
  EXPECT_EQ(take1(*s), 2002u);
}

TEST(TicketSequence, ExhaustionIsAnErrorNeverAWrap) {
  Fixture f;
  auto s = f.make(SequenceSpec{.start = 1, .increment = 2, .offset = 1, .max_value = 9}, 0);
  for (std::uint64_t want : {1, 3, 5, 7, 9}) EXPECT_EQ(take1(*s), want);
  auto r = take_and_wait(*s, 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kExhausted);
  EXPECT_TRUE(s->info().exhausted);
}

TEST(TicketSequence, BlockPastMaxValueIsRefusedWhole) {
  Fixture f;
  auto s = f.make(SequenceSpec{.max_value = 10}, 0);
  auto r = take_and_wait(*s, 11);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kExhausted);
  auto ok = take_and_wait(*s, 10);  // nothing was consumed by the refusal
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, (Block{1, 1, 10}));
}

TEST(TicketSequence, MaxValueAtTheTopOfUint64) {
  Fixture f;
  const std::uint64_t top = ~std::uint64_t{0};
  auto s = f.make(SequenceSpec{.start = top - 1, .max_value = top}, top - 2);
  EXPECT_EQ(take1(*s), top - 1);
  EXPECT_EQ(take1(*s), top);
  auto r = take_and_wait(*s, 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kExhausted);
}

TEST(TicketSequence, OneDurableWritePerCacheValues) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 100}, 0);
  for (int i = 0; i < 1000; ++i) take1(*s);
  f.committer.stop();  // let a prefetch in flight land
  // Ten writes cover the 1,000 values; an eleventh may have been prefetched at the low-water mark.
  EXPECT_GE(f.store.commit_count(), 10u);
  EXPECT_LE(f.store.commit_count(), 11u);
  EXPECT_EQ(s->info().durable_ceiling, 100u * f.store.commit_count());
}

TEST(TicketSequence, CacheOneMeansOneSyncedWritePerValue) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 1}, 0);
  for (int i = 0; i < 25; ++i) take1(*s);
  EXPECT_EQ(f.store.commit_count(), 25u);
  EXPECT_EQ(s->info().durable_ceiling, 25u);
}

TEST(TicketSequence, ResumesAboveTheCeilingAfterRestart) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);
  EXPECT_EQ(s->info().durable_ceiling, 19u);
  // A restart reads the record the write stored; the next value is above the ceiling.
  auto stored = f.store.get(sequence_key("s"));
  ASSERT_TRUE(stored && *stored);
  auto record = decode_record("s", **stored);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->ceiling, 19u);  // 10 values of step 2 from 1
  auto again = f.make(record->spec, record->ceiling);
  EXPECT_EQ(take1(*again), 21u);
}

TEST(TicketSequence, FailedWriteFailsWaitersAndLeaksNothing) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 1}, 0);  // no prefetch: each take needs its own write
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(take1(*s), static_cast<std::uint64_t>(i));
  f.store.fail_next(1);
  auto r = take_and_wait(*s, 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kStorageFailed);
  EXPECT_NE(r.error().message.find("no space"), std::string::npos);
  EXPECT_EQ(s->info().durable_ceiling, 5u);
  // The next write succeeds and issuance continues with the value that was never handed out.
  EXPECT_EQ(take1(*s), 6u);
}

TEST(TicketSequence, PrefetchRaisesTheCeilingBeforeItRunsOut) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);                // waits for the first write: ceiling 10
  for (int i = 2; i <= 6; ++i) take1(*s);  // 4 left < cache/2: a prefetch starts
  f.committer.stop();
  EXPECT_EQ(s->info().durable_ceiling, 20u);
  EXPECT_EQ(f.store.commit_count(), 2u);
}

TEST(TicketSequence, ConcurrentWaitersShareOneCommit) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 1}, 0);
  f.store.hold();
  std::vector<DetailedResult<Block>> results(50, Error{});
  std::atomic<int> done{0};
  for (int i = 0; i < 50; ++i) {
    s->take(1, [&, i](DetailedResult<Block> b) {
      results[static_cast<std::size_t>(i)] = std::move(b);
      done.fetch_add(1);
    });
  }
  f.store.wait_entered(1);
  f.store.release();
  while (done.load() < 50) std::this_thread::yield();
  // The first take started a write; the other 49 queued behind it and shared the second one.
  EXPECT_EQ(f.store.commit_count(), 2u);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(results[static_cast<std::size_t>(i)]);
    EXPECT_EQ(results[static_cast<std::size_t>(i)]->first, static_cast<std::uint64_t>(i + 1));
  }
}

TEST(TicketSequence, AdvanceMovesForwardDurablyAndNeverBack) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);
  auto a = [&](std::uint64_t v) {
    std::promise<DetailedResult<Block>> p;
    s->advance_to(v, [&](DetailedResult<Block> b) { p.set_value(std::move(b)); });
    return p.get_future().get();
  };
  ASSERT_TRUE(a(1000));
  EXPECT_GE(s->info().durable_ceiling, 999u);
  EXPECT_EQ(take1(*s), 1000u);
  ASSERT_TRUE(a(5));  // backwards: no-op
  EXPECT_EQ(take1(*s), 1001u);
  auto too_big = a(kDefaultMaxValue + 1);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, TicketErrc::kInvalidArgument);
}

// SETVAL(s, max_value) marks max_value itself used: the sequence is exhausted, not refused with
// "value max_value + 1 is above max_value" (the off-by-one of issue 11, item 17).
TEST(TicketSequence, AdvancePastMaxValueExhaustsTheSequenceDurably) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);
  auto past = [&](std::uint64_t v) {
    std::promise<DetailedResult<Block>> p;
    s->advance_past(v, [&](DetailedResult<Block> b) { p.set_value(std::move(b)); });
    return p.get_future().get();
  };
  ASSERT_TRUE(past(1000));
  EXPECT_EQ(take1(*s), 1001u);
  auto at_max = past(kDefaultMaxValue);
  ASSERT_TRUE(at_max) << at_max.error().message;
  EXPECT_TRUE(s->info().exhausted);
  EXPECT_EQ(s->info().durable_ceiling, kDefaultMaxValue);
  auto next = take_and_wait(*s, 1);
  ASSERT_FALSE(next);
  EXPECT_EQ(next.error().code, TicketErrc::kExhausted);
  auto above = past(kDefaultMaxValue + 1);
  ASSERT_FALSE(above);
  EXPECT_EQ(above.error().code, TicketErrc::kInvalidArgument);
  // A restart from the durable ceiling is still exhausted.
  auto reopened = f.make(SequenceSpec{.cache = 10}, s->info().durable_ceiling);
  EXPECT_TRUE(reopened->info().exhausted);
}

// A max_value off the increment's grid (values 1, 11, ..., 91; max 95): advancing past max
// aligns the next value to 101, yet completes instead of waiting forever for a ceiling of 100,
// which would be above max_value.
TEST(TicketSequence, AdvancePastAnUnalignedMaxCompletes) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 10, .offset = 1, .max_value = 95, .cache = 10}, 0);
  std::promise<DetailedResult<Block>> p;
  s->advance_past(95, [&](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  auto done = p.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_TRUE(done.get());
  EXPECT_TRUE(s->info().exhausted);
}

DetailedResult<Block> restride_and_wait(TicketSequence& s, Restride r) {
  std::promise<DetailedResult<Block>> p;
  s.restride(r, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  return p.get_future().get();
}

DetailedResult<Block> fence_and_wait(TicketSequence& s, std::uint64_t fence) {
  std::promise<DetailedResult<Block>> p;
  s.set_fence(fence, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  return p.get_future().get();
}

std::optional<SequenceRecord> stored(testing::ScriptedStore& store, const std::string& name) {
  auto v = store.inner().get(sequence_key(name));
  if (!v || !*v) return std::nullopt;
  return decode_record(name, **v);
}

TEST(TicketSequence, RestrideMovesOntoTheNewGridAboveTheFloorAndAbandonsTheCache) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);
  EXPECT_EQ(take1(*s), 3u);
  EXPECT_EQ(s->info().durable_ceiling, 19u);  // 5, 7, ..., 19 cached
  auto r = restride_and_wait(*s, Restride{.increment = 3, .offset = 2, .floor = 100});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->first, 101u);  // the first value ≡ 2 (mod 3) above 100
  EXPECT_EQ(r->step, 3u);
  EXPECT_EQ(take1(*s), 101u);
  EXPECT_EQ(take1(*s), 104u);
  const auto info = s->info();
  EXPECT_EQ(info.spec.increment, 3u);
  EXPECT_EQ(info.spec.offset, 2u);
  EXPECT_TRUE(info.restrided);
  EXPECT_EQ(info.fence, 0u);
  // The new grid is durable: a restart resumes on it, above everything issued.
  f.committer.stop();
  auto rec = stored(f.store, "s");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->spec.increment, 3u);
  EXPECT_EQ(rec->spec.offset, 2u);
  EXPECT_TRUE(rec->restrided);
  GroupCommitter again_committer{f.store};
  auto again = std::make_shared<TicketSequence>(*rec, again_committer);
  const auto v = take_and_wait(*again, 1);
  ASSERT_TRUE(v);
  EXPECT_GT(v->first, 104u);
  EXPECT_EQ(v->first % 3, 2u);
}

TEST(TicketSequence, RestrideRefusesAFloorBelowTheCeilingAndKeepsServing) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 19
  auto r = restride_and_wait(*s, Restride{.increment = 3, .offset = 1, .floor = 18});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kInvalidArgument);
  EXPECT_NE(r.error().message.find("below the durable ceiling 19"), std::string::npos)
      << r.error().message;
  r = restride_and_wait(*s, Restride{.increment = 3, .offset = 4, .floor = 100});
  ASSERT_FALSE(r);  // offset above the increment
  EXPECT_EQ(r.error().code, TicketErrc::kInvalidArgument);
  r = restride_and_wait(*s, Restride{.increment = 3, .offset = 1, .floor = kDefaultMaxValue});
  ASSERT_FALSE(r);           // nothing left under max_value
  EXPECT_EQ(take1(*s), 3u);  // the old grid and its cache are untouched
  EXPECT_EQ(s->info().spec.increment, 2u);
  // The floor may be exactly the ceiling: everything issued is at or below it.
  r = restride_and_wait(*s, Restride{.increment = 3, .offset = 1, .floor = 19});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(take1(*s), 22u);
}

TEST(TicketSequence, NothingIsIssuedWhileTheRestrideCommits) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 2, .cache = 100}, 0);
  EXPECT_EQ(take1(*s), 2u);  // ceiling 200: 99 more values cached
  f.store.hold();
  std::promise<DetailedResult<Block>> restrided;
  s->restride(Restride{.increment = 4, .offset = 2, .floor = 1000},
              [&](DetailedResult<Block> b) { restrided.set_value(std::move(b)); });
  f.store.wait_entered(2);  // the restride's write is in the store, held
  // Neither the cached path nor a queued take hands out a value now, old grid or new.
  EXPECT_FALSE(s->try_take(1));
  constexpr int kTakes = 20;
  std::vector<DetailedResult<Block>> results(kTakes, Error{});
  std::atomic<int> done{0};
  for (int i = 0; i < kTakes; ++i) {
    s->take(1, [&, i](DetailedResult<Block> b) {
      results[static_cast<std::size_t>(i)] = std::move(b);
      done.fetch_add(1);
    });
  }
  EXPECT_EQ(done.load(), 0);  // the fast path would have answered inline, from the old cache
  f.store.release();
  auto r = restrided.get_future().get();
  ASSERT_TRUE(r) << r.error().message;
  while (done.load() < kTakes) std::this_thread::yield();
  std::uint64_t last = 0;
  for (const auto& b : results) {
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_GT(b->first, 1000u);
    EXPECT_EQ(b->first % 4, 2u);
    EXPECT_GT(b->first, last);  // in queue order
    last = b->first;
  }
}

TEST(TicketSequence, RestrideWaitsForAPrefetchInFlightAndStaysAboveIt) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 10
  f.store.hold();
  for (int i = 2; i <= 6; ++i) EXPECT_EQ(take1(*s), static_cast<std::uint64_t>(i));
  f.store.wait_entered(2);  // a prefetch to ceiling 20 is in flight, held
  // The in-flight ceiling counts: a floor of 15 is below it.
  auto low = restride_and_wait(*s, Restride{.increment = 2, .offset = 1, .floor = 15});
  ASSERT_FALSE(low);
  EXPECT_NE(low.error().message.find("ceiling 20"), std::string::npos) << low.error().message;
  std::promise<DetailedResult<Block>> restrided;
  s->restride(Restride{.increment = 2, .offset = 2, .floor = 20},
              [&](DetailedResult<Block> b) { restrided.set_value(std::move(b)); });
  EXPECT_FALSE(s->try_take(1));
  f.store.release();
  auto r = restrided.get_future().get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(take1(*s), 22u);
  f.committer.stop();
  auto rec = stored(f.store, "s");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->spec.offset, 2u);  // the prefetch's record (old grid) did not land last
}

TEST(TicketSequence, FailedRestrideLeavesTheOldGridIntact) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 19
  f.store.fail_next(1);
  auto r = restride_and_wait(*s, Restride{.increment = 3, .offset = 3, .floor = 100});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kStorageFailed);
  const auto info = s->info();
  EXPECT_EQ(info.spec.increment, 2u);
  EXPECT_EQ(info.spec.offset, 1u);
  EXPECT_FALSE(info.restrided);
  EXPECT_EQ(take1(*s), 3u);  // its cached values are still served
  // Later writes keep writing the old grid: the failed restride never takes effect.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(take1(*s) % 2, 1u);
  f.committer.stop();
  auto rec = stored(f.store, "s");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->spec.increment, 2u);
  EXPECT_FALSE(rec->restrided);
}

TEST(TicketSequence, FenceCapsTheOldGridDurablyUntilTheRestride) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 10
  auto low = fence_and_wait(*s, 9);
  ASSERT_FALSE(low);
  EXPECT_EQ(low.error().code, TicketErrc::kInvalidArgument);
  ASSERT_TRUE(fence_and_wait(*s, 15));
  for (std::uint64_t v = 2; v <= 15; ++v) EXPECT_EQ(take1(*s), v);
  auto over = take_and_wait(*s, 1);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, TicketErrc::kExhausted);
  EXPECT_NE(over.error().message.find("fenced at 15"), std::string::npos);
  EXPECT_EQ(s->info().durable_ceiling, 15u);  // no ceiling above the fence was written
  auto rec = stored(f.store, "s");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->fence, 15u);
  // A restart keeps the fence.
  {
    GroupCommitter c2{f.store};
    auto again = std::make_shared<TicketSequence>(*rec, c2);
    EXPECT_FALSE(take_and_wait(*again, 1));
  }
  // The restride lifts it.
  auto r = restride_and_wait(*s, Restride{.increment = 2, .offset = 2, .floor = 15});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(take1(*s), 16u);
  EXPECT_EQ(take1(*s), 18u);
  EXPECT_EQ(s->info().fence, 0u);
}

TEST(TicketSequence, AGridChangeInFlightRefusesAnother) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);
  f.store.hold();
  std::promise<DetailedResult<Block>> first;
  s->set_fence(100, [&](DetailedResult<Block> b) { first.set_value(std::move(b)); });
  auto second = restride_and_wait(*s, Restride{.increment = 2, .offset = 1, .floor = 100});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, TicketErrc::kRetryLater);
  f.store.release();
  ASSERT_TRUE(first.get_future().get());
  EXPECT_TRUE(restride_and_wait(*s, Restride{.increment = 2, .offset = 1, .floor = 100}));
}

DetailedResult<ConfigOutcome> configure_and_wait(TicketSequence& s, const SequenceSpec& spec,
                                                 ConfigForce force = {}) {
  std::promise<DetailedResult<ConfigOutcome>> p;
  s.apply_config(spec, force, [&p](DetailedResult<ConfigOutcome> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

TEST(TicketSequenceConfig, AForcedGridChangeAppliesAboveEveryCeiling) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling now 10
  auto r = configure_and_wait(*s, SequenceSpec{.increment = 2, .offset = 2, .cache = 10},
                              ConfigForce{.grid = true});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->grid_forced);
  auto v = take1(*s);
  EXPECT_EQ(v % 2, 0u);
  EXPECT_GT(v, 10u);
}

// The hole left open in issue 27: a restore bounds what was issued since a backup by the
// max_rate the backup recorded, so a config may lower the rate but raise it only when the
// operator says so (and is told that older backups need an explicit skip).
TEST(TicketSequenceConfig, AHigherMaxRateNeedsForceALowerOneApplies) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10, .max_rate = 2000}, 0);
  EXPECT_EQ(take1(*s), 1u);
  const SequenceSpec raised{.cache = 10, .max_rate = 100000000};
  EXPECT_TRUE(s->check_config(raised));
  auto refused = configure_and_wait(*s, raised);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, make_error_code(TicketErrc::kInvalidArgument));
  EXPECT_NE(refused.error().message.find("--force-rate-raise"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(s->info().spec.max_rate, 2000u);
  ASSERT_TRUE(stored(f.store, "s"));
  EXPECT_EQ(stored(f.store, "s")->spec.max_rate, 2000u);

  auto lowered = configure_and_wait(*s, SequenceSpec{.cache = 10, .max_rate = 1000});
  ASSERT_TRUE(lowered) << lowered.error().message;
  EXPECT_FALSE(lowered->rate_raised);
  EXPECT_EQ(stored(f.store, "s")->spec.max_rate, 1000u);

  auto forced = configure_and_wait(*s, raised, ConfigForce{.rate_raise = true});
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_TRUE(forced->rate_raised);
  EXPECT_EQ(stored(f.store, "s")->spec.max_rate, 100000000u);
  EXPECT_EQ(take1(*s), 2u);
}

TEST(TicketSequenceConfig, AConfigNeverMovesTheGridWithoutForce) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);
  auto r = configure_and_wait(*s, SequenceSpec{.increment = 3, .offset = 1, .cache = 10});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("ticketd restride"), std::string::npos) << r.error().message;
  EXPECT_TRUE(s->check_config(SequenceSpec{.increment = 3, .offset = 1, .cache = 10}));
  EXPECT_FALSE(s->check_config(SequenceSpec{.increment = 2, .offset = 1, .cache = 20}));
  EXPECT_EQ(take1(*s), 3u);
}

TEST(TicketSequenceConfig, AFencedGridIsNotMovedEvenByForce) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 19
  ASSERT_TRUE(fence_and_wait(*s, 100));
  auto r = configure_and_wait(*s, SequenceSpec{.increment = 3, .offset = 1, .cache = 10},
                              ConfigForce{.grid = true});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("fenced at 100"), std::string::npos) << r.error().message;
  EXPECT_EQ(s->info().spec.increment, 2u);
}

// The race of issue 27.1: a config read before a restride commits must not undo it. The
// restride's write is held in the store; the config change asked meanwhile is refused (it
// would be decided on the grid the restride is replacing), and once the restride is durable
// the same config keeps the restrided grid.
TEST(TicketSequenceConfig, AConfigChangeDuringARestrideIsRefusedAndNeverUndoesIt) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 19
  f.store.hold();
  std::promise<DetailedResult<Block>> restrided;
  s->restride(Restride{.increment = 3, .offset = 1, .floor = 100},
              [&](DetailedResult<Block> b) { restrided.set_value(std::move(b)); });
  f.store.wait_entered(2);
  const SequenceSpec old_config{.increment = 2, .offset = 1, .cache = 20};
  auto during = configure_and_wait(*s, old_config);
  ASSERT_FALSE(during);
  EXPECT_EQ(during.error().code, make_error_code(TicketErrc::kRetryLater));
  f.store.release();
  ASSERT_TRUE(restrided.get_future().get());
  auto after = configure_and_wait(*s, old_config);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_TRUE(after->grid_kept);
  const auto info = s->info();
  EXPECT_EQ(info.spec.increment, 3u);
  EXPECT_EQ(info.spec.cache, 20u);  // the other settings still apply
  EXPECT_TRUE(info.restrided);
  const auto v = take1(*s);
  EXPECT_GT(v, 100u);
  EXPECT_EQ(v % 3, 1u);
}

// The converse order: a restride asked while a config change's write is held waits for no
// one: it is refused (kRetryLater), and the change lands alone.
TEST(TicketSequenceConfig, ARestrideDuringAConfigChangeIsRefused) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);
  f.store.hold();
  std::promise<DetailedResult<ConfigOutcome>> configured;
  s->apply_config(SequenceSpec{.start = 1001, .increment = 2, .offset = 1, .cache = 10}, {},
                  [&](DetailedResult<ConfigOutcome> r) { configured.set_value(std::move(r)); });
  f.store.wait_entered(2);
  EXPECT_FALSE(s->try_take(1));  // nothing is issued before the change is durable
  auto r = restride_and_wait(*s, Restride{.increment = 3, .offset = 1, .floor = 2000});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, make_error_code(TicketErrc::kRetryLater));
  f.store.release();
  ASSERT_TRUE(configured.get_future().get());
  EXPECT_EQ(take1(*s), 1001u);
  EXPECT_FALSE(s->info().restrided);
}

// A change queued behind a write already in flight is answered by the write that carries it,
// never by the earlier one: when its callback runs, the store holds the new settings.
TEST(TicketSequenceConfig, AChangeIsAnsweredOnlyOnceItsOwnWriteIsDurable) {
  Fixture f;
  auto s = f.make(SequenceSpec{.cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 10
  f.store.hold();
  for (int i = 2; i <= 6; ++i) EXPECT_EQ(take1(*s), static_cast<std::uint64_t>(i));
  f.store.wait_entered(2);  // a prefetch to 20 is in flight, held
  std::promise<std::uint64_t> stored_cache;
  s->apply_config(SequenceSpec{.cache = 30}, {}, [&](DetailedResult<ConfigOutcome> r) {
    EXPECT_TRUE(r);
    auto rec = stored(f.store, "s");
    stored_cache.set_value(rec ? rec->spec.cache : 0);
  });
  f.store.release();
  EXPECT_EQ(stored_cache.get_future().get(), 30u);
}

// Issue 27.2: a change whose write fails is not kept in memory, so a later write cannot carry
// it to disk, and nothing is issued under it.
TEST(TicketSequenceConfig, AFailedChangeLeavesTheOldSettingsAndCache) {
  Fixture f;
  auto s = f.make(SequenceSpec{.increment = 2, .offset = 1, .cache = 10}, 0);
  EXPECT_EQ(take1(*s), 1u);  // ceiling 19
  f.store.fail_next(1);
  auto r = configure_and_wait(*s, SequenceSpec{.increment = 2, .offset = 2, .cache = 10},
                              ConfigForce{.grid = true});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, make_error_code(TicketErrc::kStorageFailed));
  EXPECT_EQ(s->info().spec.offset, 1u);
  EXPECT_EQ(take1(*s), 3u);                // the old grid's cached value
  for (int i = 0; i < 20; ++i) take1(*s);  // a later ceiling raise carries the record again
  f.committer.stop();
  auto rec = stored(f.store, "s");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->spec.offset, 1u);
}

// Issue 27.4: max_rate is enforced on every ceiling raise, so a restore can bound what a
// sequence issued since a backup. 1000 values/s with cache 100: a window of
// (100 + 100000) / 1000 = 100.1 s, so a full allowance of 100100 values.
TEST(TicketSequenceRate, TakesPastMaxRateAreRefusedUntilTimeRefillsTheAllowance) {
  testing::FakeClock clock;
  Fixture f;
  const SequenceSpec spec{.name = "s", .cache = 100, .max_rate = 1000};
  auto s = std::make_shared<TicketSequence>(SequenceRecord{spec, 0}, f.committer, clock);
  std::uint64_t issued = 0;
  DetailedResult<Block> last = Error{};
  for (int i = 0; i < 200; ++i) {
    last = take_and_wait(*s, 1000);
    if (!last) break;
    issued += 1000;
  }
  ASSERT_FALSE(last);
  EXPECT_EQ(last.error().code, make_error_code(TicketErrc::kRetryLater));
  EXPECT_NE(last.error().message.find("max_rate of 1000"), std::string::npos);
  EXPECT_LE(issued, 100100u);
  EXPECT_GE(issued, 100100u - 1000u - 100u);
  // The ceiling never ran ahead of the allowance either.
  EXPECT_LE(s->info().highest_ceiling, 100100u);
  // A second refills 1000 values: one more block, then refused again.
  clock.advance(1000);
  ASSERT_TRUE(take_and_wait(*s, 1000));
  EXPECT_FALSE(take_and_wait(*s, 1000));
  // Over the whole run: at most the window's burst plus the rate times the time.
  EXPECT_LE(s->info().highest_ceiling, 100100u + 1000u);
}

TEST(TicketSequenceRate, ARestartDoesNotRefillTheAllowance) {
  testing::FakeClock clock;
  Fixture f;
  const SequenceSpec spec{.name = "s", .cache = 100, .max_rate = 1000};
  {
    auto s = std::make_shared<TicketSequence>(SequenceRecord{spec, 0}, f.committer, clock);
    while (take_and_wait(*s, 1000)) {
    }
  }
  auto rec = stored(f.store, "s");
  ASSERT_TRUE(rec);
  EXPECT_GT(rec->rate_tat_us,
            static_cast<std::uint64_t>(testing::FakeClock::kDefaultStartUnixMs) * 1000);
  auto restarted = std::make_shared<TicketSequence>(*rec, f.committer, clock);
  auto r = take_and_wait(*restarted, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, make_error_code(TicketErrc::kRetryLater));
}

// A recorded block (a hi-lo lease) rides a write even when the ceiling already covers it; that
// write reached `cache` values ahead and was charged them all, so with cache 1,000,000 a
// client got 503 retry_later after about 100 leases a second at the default rate (bench/
// allocs.sh). Only what the ceiling actually grows counts.
TEST(TicketSequenceRate, LeasesUnderTheCeilingCostNoAllowance) {
  testing::FakeClock clock;  // frozen: no refill at all
  Fixture f;
  // 1,000/s and cache 10,000: a window of (10,000 + 100,000) / 1,000 = 110 s, 110,000 values.
  const SequenceSpec spec{.name = "s", .cache = 10000, .max_rate = 1000};
  auto s = std::make_shared<TicketSequence>(SequenceRecord{spec, 0}, f.committer, clock);
  std::uint64_t leased = 0;
  for (int i = 0; i < 1000; ++i) {
    std::promise<DetailedResult<Block>> p;
    s->take_recorded(
        100,
        [](const Block& b) {
          return Mutation{"lease/" + std::to_string(b.first), "x"};
        },
        [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
    auto b = p.get_future().get();
    ASSERT_TRUE(b) << "after " << leased << " values: " << b.error().message;
    leased += b->count;
  }
  // 100,000 values leased within the 110,000 the window allows, and the ceiling stayed within
  // the allowance too.
  EXPECT_EQ(leased, 100000u);
  EXPECT_LE(s->info().highest_ceiling, 110000u);
}

// Issue 29 (the nemesis): the allowance ran on the wall clock, and every write leaves its
// arrival time at or after "now", so a clock stepped back 30 s read 30 s before that time and
// every take answered retry_later for as long as the step. It runs on the monotonic clock now.
TEST(TicketSequenceRate, AWallClockSteppedBackDoesNotStallIssuance) {
  testing::FakeClock clock;
  Fixture f;
  const SequenceSpec spec{.name = "s", .cache = 100, .max_rate = 1000};  // window 100.1 s
  auto s = std::make_shared<TicketSequence>(SequenceRecord{spec, 0}, f.committer, clock);
  ASSERT_TRUE(take_and_wait(*s, 1000));
  clock.jump(-300000);  // five minutes back: three windows
  auto r = take_and_wait(*s, 1000);
  ASSERT_TRUE(r) << r.error().message;
}

// Stepped forward, the wall clock must not refill the allowance: only time passing does.
TEST(TicketSequenceRate, AWallClockSteppedForwardDoesNotRefillTheAllowance) {
  testing::FakeClock clock;
  Fixture f;
  const SequenceSpec spec{.name = "s", .cache = 100, .max_rate = 1000};
  auto s = std::make_shared<TicketSequence>(SequenceRecord{spec, 0}, f.committer, clock);
  while (take_and_wait(*s, 1000)) {
  }
  clock.jump(3600 * 1000);
  EXPECT_FALSE(take_and_wait(*s, 1000));
  clock.advance(1000);  // a second passes: 1,000 values
  EXPECT_TRUE(take_and_wait(*s, 1000));
  EXPECT_FALSE(take_and_wait(*s, 1000));
}

// The record keeps the arrival time as wall-clock time for the next start. A start whose wall
// clock reads earlier than the one that wrote it (stepped back while ticketd was down) holds
// the allowance for at most one window, as if a full burst had just been spent, not for the
// length of the step; and the record it writes is in the new clock's terms.
TEST(TicketSequenceRate, ARecordFromAClockSinceSteppedBackHoldsAtMostOneWindow) {
  testing::FakeClock clock;
  Fixture f;
  const SequenceSpec spec{.name = "s", .cache = 100, .max_rate = 1000};
  const std::uint64_t window_ms = rate_window_us(spec) / 1000;  // 100,100 ms
  const auto wall_us = static_cast<std::uint64_t>(clock.now_unix_ms()) * 1000;
  const std::uint64_t hour_ahead = wall_us + std::uint64_t{3600} * 1000000;
  auto s = std::make_shared<TicketSequence>(SequenceRecord{spec, 0, 0, false, hour_ahead},
                                            f.committer, clock);
  EXPECT_FALSE(take_and_wait(*s, 1000));  // a burst's worth spent: nothing yet
  EXPECT_LE(s->info().rate_tat_us, wall_us + rate_window_us(spec));
  clock.advance(static_cast<std::int64_t>(window_ms) + 1000);
  auto r = take_and_wait(*s, 1000);
  ASSERT_TRUE(r) << r.error().message;
  auto rec = stored(f.store, "s");
  ASSERT_TRUE(rec);
  EXPECT_LT(rec->rate_tat_us, hour_ahead);
}

TEST(TicketSequenceRate, TheDefaultRateNeverGetsInTheWayOfOrdinaryTraffic) {
  testing::FakeClock clock;  // frozen: no refill at all
  Fixture f;
  auto s = std::make_shared<TicketSequence>(SequenceRecord{SequenceSpec{.name = "s"}, 0},
                                            f.committer, clock);
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(take_and_wait(*s, kMaxIdsPerCall));
}

}  // namespace
}  // namespace ticketd
