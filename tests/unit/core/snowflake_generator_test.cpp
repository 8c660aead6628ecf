#include "server/core/snowflake_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/core/ticket_errc.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_worker_lease.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::FakeClock;
using testing::FakeWorkerLease;
using testing::ScriptedStore;

constexpr std::int64_t kT0 = FakeClock::kDefaultStartUnixMs;

// 41 bits of time since a day before kT0, `sequence_bits` of sequence, the rest worker.
SnowflakeLayout test_layout(int sequence_bits = 12, std::int64_t time_unit_ms = 1) {
  return SnowflakeLayout{.epoch_unix_ms = kT0 - 86'400'000,
                         .time_bits = 41,
                         .worker_bits = 63 - 41 - sequence_bits,
                         .sequence_bits = sequence_bits,
                         .time_unit_ms = time_unit_ms};
}

struct Fixture {
  FakeClock clock;
  ScriptedStore store;
  GroupCommitter committer{store};
  std::mutex events_mutex;
  std::vector<ClockEvent> events;

  SnowflakeOptions options(ClockPolicy policy, SnowflakeLayout layout = test_layout()) {
    return SnowflakeOptions{.name = "flakes",
                            .layout = layout,
                            .worker_id = 7,
                            .policy = policy,
                            .max_backward_ms = 5,
                            .on_clock_event = [this](const ClockEvent& e) {
                              std::lock_guard lock(events_mutex);
                              events.push_back(e);
                            }};
  }
  std::shared_ptr<SnowflakeGenerator> open(SnowflakeOptions o) {
    auto g = SnowflakeGenerator::open(std::move(o), store, committer, clock);
    EXPECT_TRUE(g) << (g ? "" : g.error().message);
    return g ? *g : nullptr;
  }
  std::size_t event_count() {
    std::lock_guard lock(events_mutex);
    return events.size();
  }
  // Waits until every completion submitted so far has run. The barrier's own result is
  // ignored on purpose: it may share a commit that a test made fail.
  void barrier() { (void)commit_and_wait(committer, {}); }
  std::optional<SnowflakeHwmRecord> stored_hwm() {
    auto v = store.inner().get(snowflake_hwm_key("flakes"));
    if (!v || !v->has_value()) return std::nullopt;
    return decode_hwm(**v);
  }
};

std::uint64_t must_issue(SnowflakeGenerator& g) {
  auto r = g.try_next();
  EXPECT_TRUE(r.ok()) << r.error.code.message() << ": " << r.error.message;
  return r.id;
}

SnowflakeParts parts(const SnowflakeGenerator& g, std::uint64_t id) {
  auto p = g.layout().decode(id);
  EXPECT_TRUE(p);
  return p ? *p : SnowflakeParts{};
}

// Collects `n` IDs, doing what a front end does on kRetryLater (await retry_at: here the fake
// clock jumps there) and stepping the clock by `error_step_ms` after a refusal.
std::vector<std::uint64_t> drain(Fixture& f, SnowflakeGenerator& g, std::size_t n,
                                 std::int64_t error_step_ms = 100) {
  std::vector<std::uint64_t> ids;
  for (int guard = 0; ids.size() < n && guard < 10'000'000; ++guard) {
    auto r = g.try_next();
    if (r.ok()) {
      ids.push_back(r.id);
    } else if (r.retry_later()) {
      f.barrier();
      f.clock.advance_to(r.retry_at_unix_ms);
    } else {
      f.clock.advance(error_step_ms);
    }
  }
  EXPECT_EQ(ids.size(), n);
  return ids;
}

TEST(SnowflakeGenerator, IssuesIncreasingIdsThatDecodeToTheClockWorkerAndSequence) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kWait));
  const auto a = must_issue(*g);
  const auto b = must_issue(*g);
  f.clock.advance(1);
  const auto c = must_issue(*g);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(parts(*g, a), (SnowflakeParts{kT0, 7, 0, 86'400'000}));
  EXPECT_EQ(parts(*g, b), (SnowflakeParts{kT0, 7, 1, 86'400'000}));
  EXPECT_EQ(parts(*g, c), (SnowflakeParts{kT0 + 1, 7, 0, 86'400'001}));
  EXPECT_EQ(g->stats().issued, 3u);
}

TEST(SnowflakeGenerator, ReturnsRetryLaterAtTheNextTickWhenTheSequenceIsExhausted) {
  Fixture f;
  // 2 sequence bits (4 IDs per tick) in 10 ms ticks; the clock is 3 ms into a tick.
  auto g = f.open(f.options(ClockPolicy::kWait, test_layout(2, 10)));
  f.clock.advance(3);
  std::uint64_t last = 0;
  for (std::uint64_t seq = 0; seq < 4; ++seq) {
    const auto id = must_issue(*g);
    EXPECT_EQ(parts(*g, id).sequence, seq);
    last = id;
  }
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later());
  EXPECT_EQ(r.error.code, TicketErrc::kRetryLater);
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 10);  // the start of the next tick, not "now + 1"
  EXPECT_FALSE(g->try_next().ok());         // still full until the clock gets there
  EXPECT_EQ(g->stats().sequence_exhausted, 2u);
  f.clock.advance_to(r.retry_at_unix_ms);
  const auto next = must_issue(*g);
  EXPECT_GT(next, last);
  EXPECT_EQ(parts(*g, next), (SnowflakeParts{kT0 + 10, 7, 0, 8'640'001}));
}

TEST(SnowflakeGenerator, FailPolicyRefusesUntilTheClockPassesTheLastTick) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kFail));
  f.clock.advance(10);
  const auto before = must_issue(*g);
  f.clock.advance(-1);
  for (int i = 0; i < 3; ++i) {
    auto r = g->try_next();
    ASSERT_FALSE(r.ok());
    EXPECT_FALSE(r.retry_later()) << "kFail answers with an error, not a wait";
    EXPECT_EQ(r.error.code, SnowflakeErrc::kClockMovedBackwards);
    EXPECT_NE(r.error.message.find("1 ms behind the last ID; policy fail refuses until"),
              std::string::npos)
        << r.error.message;
  }
  f.clock.advance(1);  // back at the last tick: its sequence continues
  const auto after = must_issue(*g);
  EXPECT_GT(after, before);
  EXPECT_EQ(parts(*g, after).sequence, 1u);
  const auto s = g->stats();
  EXPECT_EQ(s.clock_backward_events, 1u);
  EXPECT_EQ(s.clock_backward_refusals, 3u);
  ASSERT_EQ(f.event_count(), 1u);
  EXPECT_EQ(f.events[0].backward_ms, 1);
  EXPECT_TRUE(f.events[0].refused);
  EXPECT_EQ(f.events[0].policy, ClockPolicy::kFail);
}

TEST(SnowflakeGenerator, WaitPolicyRetriesAtTheLastTickWhenTheClockIsSlightlyBehind) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kWait));
  f.clock.advance(10);
  const auto before = must_issue(*g);
  f.clock.advance(-3);
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later());
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 10);
  EXPECT_EQ(g->stats().clock_backward_waits, 1u);
  f.clock.advance_to(r.retry_at_unix_ms);
  EXPECT_GT(must_issue(*g), before);
  ASSERT_EQ(f.event_count(), 1u);
  EXPECT_FALSE(f.events[0].refused);
  EXPECT_EQ(f.events[0].resume_at_unix_ms, kT0 + 10);
}

TEST(SnowflakeGenerator, WaitPolicyFailsWhenTheClockIsFurtherBehindThanMaxBackward) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kWait));
  f.clock.advance(100);
  const auto before = must_issue(*g);
  f.clock.advance(-50);
  auto r = g->try_next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code, SnowflakeErrc::kClockMovedBackwards);
  EXPECT_NE(r.error.message.find("policy wait (max_backward_ms 5)"), std::string::npos)
      << r.error.message;
  // Once the remaining wait is within max_backward_ms, callers are told to wait instead.
  f.clock.advance(45);
  r = g->try_next();
  ASSERT_TRUE(r.retry_later());
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 100);
  f.clock.advance_to(r.retry_at_unix_ms);
  EXPECT_GT(must_issue(*g), before);
  const auto s = g->stats();
  EXPECT_EQ(s.clock_backward_events, 1u);
  EXPECT_EQ(s.clock_backward_refusals, 1u);
  EXPECT_EQ(s.clock_backward_waits, 1u);
}

TEST(SnowflakeGenerator, LogicalPolicyKeepsCountingAheadOfAClockThatSteppedBackThenCatchesUp) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kLogical, test_layout(2)));  // 4 IDs per tick
  f.clock.advance(10);
  std::vector<std::uint64_t> ids{must_issue(*g)};
  f.clock.advance(-100);
  for (int i = 0; i < 7; ++i) ids.push_back(must_issue(*g));
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
  // Three more in the last tick, then the next tick is borrowed ahead of the clock.
  EXPECT_EQ(parts(*g, ids[3]), (SnowflakeParts{kT0 + 10, 7, 3, 86'400'010}));
  EXPECT_EQ(parts(*g, ids[4]), (SnowflakeParts{kT0 + 11, 7, 0, 86'400'011}));
  auto s = g->stats();
  EXPECT_EQ(s.logical_ids, 7u);
  EXPECT_EQ(s.logical_borrows, 1u);
  EXPECT_EQ(s.logical_ahead_ms, 101);  // newest ID at kT0+11, the clock at kT0-90
  EXPECT_EQ(s.clock_backward_events, 1u);
  ASSERT_EQ(f.event_count(), 1u);
  EXPECT_FALSE(f.events[0].refused);
  // The clock catches up: IDs follow it again.
  f.clock.set(kT0 + 50);
  ids.push_back(must_issue(*g));
  EXPECT_EQ(parts(*g, ids.back()).unix_ms, kT0 + 50);
  EXPECT_GT(ids.back(), ids[ids.size() - 2]);
  s = g->stats();
  EXPECT_EQ(s.logical_ahead_ms, 0);
  EXPECT_EQ(s.logical_ids, 7u);
}

TEST(SnowflakeGenerator, LogicalPolicyStillWaitsForTheNextTickWhenTheClockIsOnTime) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kLogical, test_layout(2)));
  for (int i = 0; i < 4; ++i) (void)must_issue(*g);
  // Load alone never pushes IDs ahead of the clock; only a clock behind them does.
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later());
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 1);
  EXPECT_EQ(g->stats().logical_borrows, 0u);
}

TEST(SnowflakeGenerator, ReportsEachClockStepBackOnce) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kWait));
  f.clock.advance(10);
  (void)must_issue(*g);
  f.clock.advance(-2);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(g->try_next().retry_later());
  EXPECT_EQ(f.event_count(), 1u);
  f.clock.advance(1);  // moving forward while still behind is not a new event
  EXPECT_TRUE(g->try_next().retry_later());
  EXPECT_EQ(f.event_count(), 1u);
  f.clock.advance(-2);  // a second step back is
  EXPECT_TRUE(g->try_next().retry_later());
  ASSERT_EQ(f.event_count(), 2u);
  EXPECT_EQ(f.events[1].previous_unix_ms, kT0 + 9);
  EXPECT_EQ(f.events[1].now_unix_ms, kT0 + 7);
  EXPECT_EQ(f.events[1].backward_ms, 2);
  EXPECT_EQ(g->stats().clock_backward_events, 2u);
}

TEST(SnowflakeGenerator, AStepBackWithinTheLastTickChangesNothing) {
  Fixture f;
  auto g = f.open(f.options(ClockPolicy::kFail, test_layout(12, 10)));
  f.clock.advance(7);
  const auto a = must_issue(*g);
  f.clock.advance(-5);  // still in the same 10 ms tick
  const auto b = must_issue(*g);
  EXPECT_GT(b, a);
  EXPECT_EQ(f.event_count(), 0u);
}

TEST(SnowflakeGenerator, OpenRefusesAnEpochInTheFuture) {
  Fixture f;
  auto layout = test_layout();
  layout.epoch_unix_ms = kT0 + 60'000;
  auto g = SnowflakeGenerator::open(f.options(ClockPolicy::kWait, layout), f.store, f.committer,
                                    f.clock);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, TicketErrc::kInvalidArgument);
  EXPECT_EQ(g.error().message,
            "snowflake 'flakes': epoch: epoch 2026-01-01T00:01:00.000Z is in the future (the "
            "clock says 2026-01-01T00:00:00.000Z)");
  EXPECT_EQ(f.store.commit_count(), 0u);
}

TEST(SnowflakeGenerator, OpenReportsEveryInvalidOptionInOneMessage) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait, test_layout());
  o.name = "a/b";
  o.layout.sequence_bits = 13;
  o.worker_id = 1 << 20;
  o.hwm_margin_ms = 1;
  auto g = SnowflakeGenerator::open(o, f.store, f.committer, f.clock);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, TicketErrc::kInvalidArgument);
  const std::string& m = g.error().message;
  for (const char* part :
       {"snowflake 'a/b':", "it must be 63", "worker_id: worker_id 1048576 does not fit",
        "name: the name must be non-empty", "hwm_margin_ms: hwm_margin_ms must cover"}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << " in: " << m;
  }
}

TEST(SnowflakeGenerator, TheEndOfTheTimeRangeIsAnErrorNotAWrap) {
  Fixture f;
  // 20 bits of 1 ms ticks that end 2 ms from now.
  SnowflakeLayout layout{.epoch_unix_ms = kT0 - (1 << 20) + 3,
                         .time_bits = 20,
                         .worker_bits = 10,
                         .sequence_bits = 33};
  auto g = f.open(f.options(ClockPolicy::kWait, layout));
  f.clock.advance(2);
  (void)must_issue(*g);
  f.clock.advance(1);
  auto r = g->try_next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code, TicketErrc::kExhausted);
  EXPECT_NE(r.error.message.find("time range ended at 2026-01-01T00:00:00.002Z"), std::string::npos)
      << r.error.message;
}

TEST(SnowflakeGenerator, OpenDurablyWritesAHighWaterMarkAMarginAhead) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait);
  o.hwm_margin_ms = 2000;
  auto g = f.open(o);
  EXPECT_EQ(f.stored_hwm(), (SnowflakeHwmRecord{kT0 + 2000, kT0}));
  EXPECT_EQ(g->stats().hwm_unix_ms, kT0 + 2000);
}

TEST(SnowflakeGenerator, IdsPastTheHighWaterMarkWaitForTheRefresh) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait);
  o.hwm_margin_ms = 100;
  auto g = f.open(o);
  f.store.hold();
  // Within half the margin of the mark: the ID is issued and a refresh starts (held).
  f.clock.advance(60);
  (void)must_issue(*g);
  f.store.wait_entered(2);
  f.clock.advance_to(kT0 + 100);
  EXPECT_TRUE(g->try_next().ok());  // the last tick the old mark covers
  f.clock.advance(1);
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later());
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 102);
  EXPECT_EQ(g->stats().hwm_waits, 1u);
  EXPECT_EQ(g->stats().issued, 2u);
  f.store.release();
  f.barrier();
  EXPECT_EQ(g->stats().hwm_unix_ms, kT0 + 160);
  EXPECT_EQ(f.stored_hwm(), (SnowflakeHwmRecord{kT0 + 160, kT0 + 60}));
  const auto id = must_issue(*g);
  EXPECT_EQ(parts(*g, id).unix_ms, kT0 + 101);
}

TEST(SnowflakeGenerator, AFailedHighWaterMarkWriteIssuesNothingPastTheOldMark) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait);
  o.hwm_margin_ms = 100;
  o.hwm_failure_backoff_ms = 100;
  auto g = f.open(o);
  f.store.fail_next(1);
  f.clock.advance(60);
  (void)must_issue(*g);  // starts the refresh, which fails
  f.barrier();
  EXPECT_EQ(g->stats().hwm_write_failures, 1u);
  EXPECT_EQ(g->stats().hwm_unix_ms, kT0 + 100);
  // Below the old mark IDs still flow; past it, nothing while the backoff runs.
  f.clock.advance_to(kT0 + 100);
  (void)must_issue(*g);
  f.clock.advance(1);
  auto r = g->try_next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code, TicketErrc::kStorageFailed);
  EXPECT_NE(r.error.message.find("high-water mark write failed: injected: no space left"),
            std::string::npos)
      << r.error.message;
  EXPECT_NE(r.error.message.find("no ID past 2026-01-01T00:00:00.100Z"), std::string::npos);
  EXPECT_EQ(g->stats().hwm_refusals, 1u);
  // After the backoff a caller starts the write again and waits for it.
  f.clock.advance_to(kT0 + 160);
  r = g->try_next();
  ASSERT_TRUE(r.retry_later());
  f.barrier();
  const auto id = must_issue(*g);
  EXPECT_EQ(parts(*g, id).unix_ms, kT0 + 160);
  EXPECT_EQ(g->stats().hwm_unix_ms, kT0 + 260);
  EXPECT_EQ(g->stats().issued, 3u);
}

TEST(SnowflakeGenerator, RefreshKeepsAnIdleGeneratorsMarkAhead) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait);
  o.hwm_margin_ms = 100;
  auto g = f.open(o);
  f.clock.advance(40);
  EXPECT_FALSE(g->refresh());  // 60 ms left: more than half the margin
  f.clock.advance(20);
  EXPECT_TRUE(g->refresh());
  EXPECT_FALSE(g->refresh());  // one write at a time
  f.barrier();
  EXPECT_EQ(g->stats().hwm_unix_ms, kT0 + 160);
  f.clock.advance_to(kT0 + 150);
  (void)must_issue(*g);
  EXPECT_EQ(g->stats().hwm_waits, 0u);
}

TEST(SnowflakeGenerator, RestartAfterACrashWaitsUntilTheClockPassesTheMark) {
  for (auto policy : {ClockPolicy::kFail, ClockPolicy::kWait}) {
    Fixture f;
    std::vector<std::uint64_t> first;
    {
      auto a = f.open(f.options(policy));
      first = drain(f, *a, 5000);
      f.barrier();
    }  // "crash": no close()
    auto b = f.open(f.options(policy));
    auto r = b->try_next();
    ASSERT_TRUE(r.retry_later()) << "a restart within the margin waits: " << r.error.message;
    EXPECT_EQ(r.retry_at_unix_ms, kT0 + 2001);
    EXPECT_EQ(b->stats().restart_waits, 1u);
    EXPECT_EQ(f.event_count(), 0u);
    f.clock.advance_to(r.retry_at_unix_ms);
    const auto id = must_issue(*b);
    EXPECT_GT(id, first.back());
  }
}

TEST(SnowflakeGenerator, RestartUnderAClockSteppedBack10SecondsNeverRepeatsAnId) {
  for (auto policy : {ClockPolicy::kFail, ClockPolicy::kWait, ClockPolicy::kLogical}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    Fixture f;
    std::vector<std::uint64_t> ids;
    {
      auto a = f.open(f.options(policy));
      // 30,000 IDs over about 5 s of clock (several mark refreshes), then a crash.
      for (int i = 0; i < 30; ++i) {
        auto some = drain(f, *a, 1000);
        ids.insert(ids.end(), some.begin(), some.end());
        f.clock.advance(170);
      }
      f.barrier();
    }
    const std::uint64_t last_of_first_run = ids.back();
    f.clock.advance(-10'000);
    auto b = f.open(f.options(policy));
    ASSERT_EQ(f.event_count(), 1u);
    EXPECT_EQ(f.events[0].refused, policy != ClockPolicy::kLogical);
    EXPECT_GE(f.events[0].backward_ms, 10'000 - 2000);
    auto first = b->try_next();
    if (policy == ClockPolicy::kLogical) {
      ASSERT_TRUE(first.ok());
      EXPECT_GT(first.id, last_of_first_run);
      ids.push_back(first.id);
    } else {
      ASSERT_FALSE(first.ok());
      EXPECT_FALSE(first.retry_later());
      EXPECT_EQ(first.error.code, SnowflakeErrc::kClockMovedBackwards);
      EXPECT_NE(first.error.message.find("behind the previous run"), std::string::npos);
    }
    auto more = drain(f, *b, 20'000);
    EXPECT_GT(more.front(), last_of_first_run);
    ids.insert(ids.end(), more.begin(), more.end());
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    EXPECT_EQ(std::set<std::uint64_t>(ids.begin(), ids.end()).size(), ids.size());
  }
}

TEST(SnowflakeGenerator, CloseLowersTheMarkSoACleanRestartIssuesAtOnce) {
  Fixture f;
  std::uint64_t last = 0;
  {
    auto a = f.open(f.options(ClockPolicy::kWait));
    f.clock.advance(5);
    last = must_issue(*a);
    ASSERT_TRUE(a->close());
    EXPECT_EQ(f.stored_hwm(), (SnowflakeHwmRecord{kT0 + 5, kT0 + 5}));
    auto r = a->try_next();
    EXPECT_EQ(r.error.code, TicketErrc::kShuttingDown);
  }
  f.clock.advance(1);
  auto b = f.open(f.options(ClockPolicy::kWait));
  const auto id = must_issue(*b);
  EXPECT_GT(id, last);
  EXPECT_EQ(parts(*b, id).unix_ms, kT0 + 6);
}

TEST(SnowflakeGenerator, NotBeforeDelaysTheFirstIdPastAPreviousHoldersMark) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait);
  o.not_before_unix_ms = kT0 + 500;
  auto g = f.open(o);
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later());
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 501);
  f.clock.advance_to(r.retry_at_unix_ms);
  EXPECT_EQ(parts(*g, must_issue(*g)).unix_ms, kT0 + 501);
}

// A lease as the etcd keeper publishes it: renewed at `renewed_at`, TTL 10 s, margin 2.5 s, the
// holder's mark a full TTL ahead.
WorkerLeaseState lease_state(std::uint64_t generation, std::uint64_t worker,
                             std::int64_t renewed_at, std::int64_t not_before = 0) {
  return WorkerLeaseState{.held = true,
                          .generation = generation,
                          .worker_id = worker,
                          .renewed_at_unix_ms = renewed_at,
                          .valid_until_unix_ms = renewed_at + 10'000 - 2'500,
                          .not_before_unix_ms = not_before,
                          .issue_until_unix_ms = renewed_at + 10'000};
}

TEST(SnowflakeGeneratorLease, TakesItsWorkerIdAndThePreviousHoldersMarkFromTheLease) {
  Fixture f;
  auto lease = std::make_shared<FakeWorkerLease>(lease_state(1, 5, kT0, kT0 + 300));
  auto o = f.options(ClockPolicy::kWait);
  o.lease = lease;
  auto g = f.open(o);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->worker_id(), 5u);
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later()) << r.error.message;
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 301);
  f.clock.advance_to(r.retry_at_unix_ms);
  const auto p = parts(*g, must_issue(*g));
  EXPECT_EQ(p.worker, 5u);
  EXPECT_EQ(p.unix_ms, kT0 + 301);
}

TEST(SnowflakeGeneratorLease, StopsIssuingAtTtlMinusMarginAfterTheLastRenewal) {
  Fixture f;
  auto lease = std::make_shared<FakeWorkerLease>(lease_state(1, 5, kT0));
  auto o = f.options(ClockPolicy::kWait);
  o.lease = lease;
  auto g = f.open(o);
  ASSERT_TRUE(g);
  // No renewal arrives (etcd partitioned, or the process was paused): IDs flow until the
  // window ends at renewal + TTL - margin, and not one millisecond longer.
  f.clock.set(kT0 + 7'499);
  (void)g->refresh();  // what the daemon's timer does: the local mark is ready
  f.barrier();
  EXPECT_EQ(parts(*g, must_issue(*g)).unix_ms, kT0 + 7'499);
  f.clock.set(kT0 + 7'500);
  auto r = g->try_next();
  EXPECT_EQ(r.error.code, SnowflakeErrc::kWorkerLeaseLost);
  EXPECT_NE(r.error.message.find("worker ID 5"), std::string::npos) << r.error.message;
  f.clock.set(kT0 + 60'000);
  EXPECT_EQ(g->try_next().error.code, SnowflakeErrc::kWorkerLeaseLost);
  EXPECT_EQ(g->stats().lease_refusals, 2u);
  // A renewal (same generation) opens the window again.
  lease->set(lease_state(1, 5, kT0 + 59'990));
  (void)g->refresh();
  f.barrier();
  EXPECT_EQ(parts(*g, must_issue(*g)).worker, 5u);
}

TEST(SnowflakeGeneratorLease, AReleasedLeaseStopsIdsAtOnce) {
  Fixture f;
  auto lease = std::make_shared<FakeWorkerLease>(lease_state(1, 5, kT0));
  auto o = f.options(ClockPolicy::kWait);
  o.lease = lease;
  auto g = f.open(o);
  ASSERT_TRUE(g);
  (void)must_issue(*g);
  auto lost = lease_state(1, 5, kT0);
  lost.held = false;  // keepalive said the lease expired
  lease->set(lost);
  EXPECT_EQ(g->try_next().error.code, SnowflakeErrc::kWorkerLeaseLost);
}

TEST(SnowflakeGeneratorLease, AClockSteppedBackBeforeTheLastRenewalStopsIds) {
  Fixture f;
  auto lease = std::make_shared<FakeWorkerLease>(lease_state(1, 5, kT0));
  auto o = f.options(ClockPolicy::kLogical);  // the policy that would otherwise keep going
  o.lease = lease;
  auto g = f.open(o);
  ASSERT_TRUE(g);
  f.clock.set(kT0 + 100);
  (void)must_issue(*g);
  lease->set(lease_state(1, 5, kT0 + 100));
  // Stepped back 50 ms: readings before the renewal would stretch the window.
  f.clock.set(kT0 + 50);
  EXPECT_EQ(g->try_next().error.code, SnowflakeErrc::kWorkerLeaseLost);
}

TEST(SnowflakeGeneratorLease, OpenRefusesWhenNoLeaseIsHeld) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait);
  o.lease = std::make_shared<FakeWorkerLease>();
  auto g = SnowflakeGenerator::open(std::move(o), f.store, f.committer, f.clock);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, SnowflakeErrc::kWorkerLeaseLost);
}

TEST(SnowflakeGeneratorLease, AReclaimRebindsToTheNewWorkerIdAfterItsPreviousHoldersMark) {
  Fixture f;
  auto lease = std::make_shared<FakeWorkerLease>(lease_state(1, 5, kT0));
  auto o = f.options(ClockPolicy::kWait);
  o.lease = lease;
  auto g = f.open(o);
  ASSERT_TRUE(g);
  std::vector<std::uint64_t> ids = drain(f, *g, 100);
  // Paused past the TTL: the lease is gone, nothing is issued.
  f.clock.set(kT0 + 20'000);
  auto lost = lease_state(1, 5, kT0);
  lost.held = false;
  lease->set(lost);
  EXPECT_EQ(g->try_next().error.code, SnowflakeErrc::kWorkerLeaseLost);
  // Re-claimed worker 9, whose previous holder's mark is 800 ms ahead of this clock.
  lease->set(lease_state(2, 9, kT0 + 20'000, kT0 + 20'800));
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later()) << r.error.message;
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 20'801);
  auto after = drain(f, *g, 100);
  for (auto id : after) {
    EXPECT_EQ(parts(*g, id).worker, 9u);
    EXPECT_GT(parts(*g, id).unix_ms, kT0 + 20'800);
  }
  EXPECT_EQ(g->worker_id(), 9u);
  EXPECT_EQ(g->stats().lease_rebinds, 1u);
  ids.insert(ids.end(), after.begin(), after.end());
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<std::uint64_t>(ids.begin(), ids.end()).size(), ids.size());
}

TEST(SnowflakeGeneratorLease, ReclaimingTheSameIdStillResumesAfterTheMarkInBetween) {
  Fixture f;
  auto lease = std::make_shared<FakeWorkerLease>(lease_state(1, 5, kT0));
  auto o = f.options(ClockPolicy::kFail);
  o.lease = lease;
  auto g = f.open(o);
  ASSERT_TRUE(g);
  f.clock.set(kT0 + 1'000);
  (void)must_issue(*g);
  // Someone else held worker 5 in between, with a clock 3 s ahead of ours: its mark is later
  // than our clock, and kFail must wait for it rather than call it a regression.
  lease->set(lease_state(2, 5, kT0 + 1'000, kT0 + 4'000));
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later()) << r.error.message;
  EXPECT_EQ(r.retry_at_unix_ms, kT0 + 4'001);
}

TEST(SnowflakeGeneratorLease, LogicalIdsNeverPassTheHoldersDurableMark) {
  Fixture f;
  auto state = lease_state(1, 5, kT0);
  state.issue_until_unix_ms = kT0 + 3;  // the keeper's mark: the next holder starts after it
  auto lease = std::make_shared<FakeWorkerLease>(state);
  auto o = f.options(ClockPolicy::kLogical, test_layout(/*sequence_bits=*/1));
  o.lease = lease;
  auto g = f.open(o);
  ASSERT_TRUE(g);
  // Two IDs per tick; the clock steps back 3 ms after the mark's tick is reached, so kLogical
  // runs ahead of it and would borrow tick kT0+4: past the mark, it must wait for the keeper.
  f.clock.set(kT0 + 3);
  EXPECT_EQ(parts(*g, must_issue(*g)).unix_ms, kT0 + 3);
  f.clock.set(kT0);
  EXPECT_EQ(parts(*g, must_issue(*g)).unix_ms, kT0 + 3);
  auto r = g->try_next();
  ASSERT_TRUE(r.retry_later()) << r.error.message;
  EXPECT_EQ(g->stats().lease_waits, 1u);
  state.issue_until_unix_ms = kT0 + 10'000;
  lease->set(state);
  EXPECT_EQ(parts(*g, must_issue(*g)).unix_ms, kT0 + 4);
}

TEST(SnowflakeGenerator, OpenRefusesAMarkThatDoesNotDecode) {
  Fixture f;
  std::vector<Mutation> m;
  m.push_back(Mutation{snowflake_hwm_key("flakes"), "v=1 hwm_unix_ms=soon"});
  ASSERT_TRUE(f.store.commit(m));
  auto g = SnowflakeGenerator::open(f.options(ClockPolicy::kWait), f.store, f.committer, f.clock);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, StorageErrc::kCorruption);
}

TEST(SnowflakeGenerator, HighWaterMarkRecordRoundTrips) {
  const SnowflakeHwmRecord r{kT0 + 2000, kT0};
  EXPECT_EQ(encode_hwm(r), "v=1 hwm_unix_ms=1767225602000 written_at_unix_ms=1767225600000");
  EXPECT_EQ(decode_hwm(encode_hwm(r)), r);
  EXPECT_EQ(decode_hwm(encode_hwm(r) + " future_field=1"), r);
  EXPECT_EQ(decode_hwm("v=2 hwm_unix_ms=1 written_at_unix_ms=1"), std::nullopt);
  EXPECT_EQ(decode_hwm("v=1 hwm_unix_ms=1"), std::nullopt);
  EXPECT_EQ(decode_hwm("garbage"), std::nullopt);
  EXPECT_EQ(snowflake_hwm_key("Snowflake64"), "snowflake/Snowflake64/hwm");
}

TEST(SnowflakeGenerator, ConcurrentCallersGetDistinctIdsIncreasingPerThread) {
  Fixture f;
  auto o = f.options(ClockPolicy::kWait);
  o.hwm_margin_ms = 20;  // a refresh every ~10 ms of fake time: writes race with callers
  auto g = f.open(o);
  constexpr std::size_t kPerThread = 200'000;
  std::vector<std::vector<std::uint64_t>> got(2);
  auto worker = [&](std::vector<std::uint64_t>& out) {
    out.reserve(kPerThread);
    while (out.size() < kPerThread) {
      auto r = g->try_next();
      if (r.ok()) {
        out.push_back(r.id);
      } else if (r.retry_later()) {
        if (r.retry_at_unix_ms > f.clock.now_unix_ms()) {
          f.clock.advance_to(r.retry_at_unix_ms);
        } else {
          std::this_thread::yield();  // a mark write is in flight
        }
      } else {
        ADD_FAILURE() << r.error.message;
        return;
      }
    }
  };
  std::thread t0(worker, std::ref(got[0]));
  std::thread t1(worker, std::ref(got[1]));
  t0.join();
  t1.join();
  std::vector<std::uint64_t> all;
  for (const auto& v : got) {
    ASSERT_EQ(v.size(), kPerThread);
    EXPECT_TRUE(std::adjacent_find(v.begin(), v.end(), std::greater_equal<>()) == v.end())
        << "each thread's IDs strictly increase";
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(g->stats().issued, 2 * kPerThread);
  EXPECT_GT(g->stats().sequence_exhausted, 0u);
}

}  // namespace
}  // namespace ticketd

// docs/clocks.md: slews, leap-second smears and leap-second steps, per clock policy.
namespace ticketd {
namespace {

// 2017-01-01T00:00:00Z, right after the last leap second so far (2016-12-31T23:59:60Z).
constexpr std::int64_t kLeap = 1483228800000;

// A wall clock that NTP corrects by slewing: `real_us` microseconds after `start_ms` of real
// time it reads start_ms plus the real time, except that from `from_us` on, for `for_us`, it
// runs at `rate` times the real rate. It never reads less than before.
std::int64_t slewed_ms(std::int64_t start_ms, std::int64_t real_us, double rate,
                       std::int64_t from_us, std::int64_t for_us) {
  const auto before = static_cast<double>(std::min(real_us, from_us));
  const auto during = static_cast<double>(std::clamp<std::int64_t>(real_us - from_us, 0, for_us));
  const auto after = static_cast<double>(std::max<std::int64_t>(real_us - from_us - for_us, 0));
  return start_ms + static_cast<std::int64_t>((before + during * rate + after) / 1000);
}

// One ID every 250 µs of real time for `total_us` on that clock, with the mark refreshed every
// 250 ms as the daemon's timer does: each comes at once, carries the clock's reading and sorts
// after the previous one.
void issue_on_a_slewed_clock(Fixture& f, SnowflakeGenerator& g, double rate, std::int64_t from_us,
                             std::int64_t for_us, std::int64_t total_us) {
  const std::int64_t start = f.clock.now_unix_ms();
  std::uint64_t previous = 0;
  for (std::int64_t real_us = 0; real_us <= total_us; real_us += 250) {
    f.clock.set(slewed_ms(start, real_us, rate, from_us, for_us));
    if (real_us % 250'000 == 0) {
      (void)g.refresh();
      f.barrier();
    }
    const SnowflakeNext r = g.try_next();
    ASSERT_TRUE(r.ok()) << "at " << real_us << " us: " << r.error.message;
    ASSERT_GT(r.id, previous);
    ASSERT_EQ(parts(g, r.id).unix_ms, f.clock.now_unix_ms());
    previous = r.id;
  }
}

void expect_no_clock_trouble(Fixture& f, const SnowflakeGenerator& g) {
  const SnowflakeStats s = g.stats();
  EXPECT_EQ(s.clock_backward_events, 0u);
  EXPECT_EQ(s.clock_backward_waits, 0u);
  EXPECT_EQ(s.clock_backward_refusals, 0u);
  EXPECT_EQ(s.logical_ids, 0u);
  EXPECT_EQ(s.hwm_waits, 0u);
  EXPECT_EQ(s.logical_ahead_ms, 0);
  EXPECT_EQ(f.event_count(), 0u);
}

TEST(SnowflakeGenerator, ASlewedClockNeverTriggersThePolicy) {
  // 0.9 and 1.1: slower and faster than any slew chrony makes (its maxslewrate defaults to
  // 83,333 ppm, one twelfth); the generator only ever sees readings that do not go back.
  for (const double rate : {0.9, 1.0 - 1.0 / 12, 1.1}) {
    for (const auto policy : {ClockPolicy::kFail, ClockPolicy::kWait, ClockPolicy::kLogical}) {
      SCOPED_TRACE(std::string(policy_name(policy)) + " at x" + std::to_string(rate));
      Fixture f;
      auto g = f.open(f.options(policy));
      issue_on_a_slewed_clock(f, *g, rate, 0, 5'000'000, 5'000'000);
      if (HasFatalFailure()) return;
      EXPECT_EQ(g->stats().issued, 20'001u);
      expect_no_clock_trouble(f, *g);
    }
  }
}

TEST(SnowflakeGenerator, ALeapSecondSmearedBySlewingNeverTriggersThePolicy) {
  // chrony's `leapsecmode slew`: at 00:00:00 UTC the clock is a second ahead and slews back at
  // the default maxslewrate (1/12) for 12 s. A smearing server (`smoothtime`) slews its
  // clients far more gently (at most tens of ppm), so this is the steepest smear there is.
  for (const auto policy : {ClockPolicy::kFail, ClockPolicy::kWait, ClockPolicy::kLogical}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    Fixture f;
    f.clock.set(kLeap - 2'000);
    auto layout = test_layout();
    layout.epoch_unix_ms = kLeap - 86'400'000;
    auto g = f.open(f.options(policy, layout));
    issue_on_a_slewed_clock(f, *g, 1.0 - 1.0 / 12, 2'000'000, 12'000'000, 16'000'000);
    if (HasFatalFailure()) return;
    // 16 s of real time, of which the clock absorbed one second.
    EXPECT_EQ(f.clock.now_unix_ms(), kLeap - 2'000 + 15'000);
    expect_no_clock_trouble(f, *g);
  }
}

TEST(SnowflakeGenerator, ALeapSecondSteppedByTheKernelIsAOneSecondStepBack) {
  // `leapsecmode system` (chrony's default on Linux): the kernel steps the clock back a second
  // when it reaches 00:00:00 UTC, so 23:59:59 runs twice. One call per millisecond of it.
  for (const auto policy : {ClockPolicy::kFail, ClockPolicy::kWait, ClockPolicy::kLogical}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    Fixture f;
    f.clock.set(kLeap - 2'000);
    auto layout = test_layout();
    layout.epoch_unix_ms = kLeap - 86'400'000;
    auto g = f.open(f.options(policy, layout));
    f.clock.set(kLeap - 1);
    std::vector<std::uint64_t> ids{must_issue(*g)};
    (void)g->refresh();  // the daemon's timer: the mark is 2 s ahead when the step comes
    f.barrier();
    f.clock.set(kLeap - 1'000);
    std::int64_t first_ok_at = -1;
    int refused = 0;
    int waited = 0;
    for (std::int64_t now = kLeap - 1'000; now <= kLeap + 10; ++now) {
      f.clock.set(now);
      const SnowflakeNext r = g->try_next();
      if (r.ok()) {
        ids.push_back(r.id);
        if (first_ok_at < 0) first_ok_at = now;
      } else if (r.retry_later()) {
        EXPECT_EQ(r.retry_at_unix_ms, kLeap - 1);
        ++waited;
      } else {
        EXPECT_EQ(r.error.code, SnowflakeErrc::kClockMovedBackwards);
        ++refused;
      }
    }
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    EXPECT_EQ(std::set<std::uint64_t>(ids.begin(), ids.end()).size(), ids.size());
    ASSERT_EQ(f.event_count(), 1u);
    EXPECT_EQ(f.events[0].backward_ms, 999);
    const SnowflakeStats s = g->stats();
    if (policy == ClockPolicy::kLogical) {
      // At once: the second 23:59:59 is spent in the last tick used (4,096 IDs per ms).
      EXPECT_EQ(first_ok_at, kLeap - 1'000);
      EXPECT_EQ(parts(*g, ids[1]).unix_ms, kLeap - 1);
      EXPECT_EQ(parts(*g, ids[999]).unix_ms, kLeap - 1);
      EXPECT_EQ(s.logical_ids, 999u);  // every reading of the repeated second but its last ms
      EXPECT_FALSE(f.events[0].refused);
    } else {
      // Refused until the clock is back at the last ID: wait stops refusing 5 ms
      // (max_backward_ms) early and holds callers for those.
      EXPECT_EQ(first_ok_at, kLeap - 1);
      EXPECT_EQ(refused, policy == ClockPolicy::kWait ? 994 : 999);
      EXPECT_EQ(waited, policy == ClockPolicy::kWait ? 5 : 0);
      EXPECT_EQ(s.clock_backward_refusals, static_cast<std::uint64_t>(refused));
      EXPECT_TRUE(f.events[0].refused);
    }
  }
}

}  // namespace
}  // namespace ticketd
