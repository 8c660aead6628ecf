// Snowflake waits stepped on a FakeClock: the engine retries "retry later" answers on a
// TimerQueue driven by the generator's clock, so the tests step the clock and watch calls
// complete, with no thread sleeping and nothing depending on the machine's speed.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_service.h"
#include "server/core/timer_queue.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_worker_lease.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::FakeClock;
using testing::FakeWorkerLease;
using testing::ScriptedStore;

constexpr std::int64_t kT0 = FakeClock::kDefaultStartUnixMs;

// 1 ms ticks since a day before kT0, `sequence_bits` of sequence, the rest worker.
SnowflakeLayout test_layout(int sequence_bits) {
  return SnowflakeLayout{.epoch_unix_ms = kT0 - 86'400'000,
                         .time_bits = 41,
                         .worker_bits = 63 - 41 - sequence_bits,
                         .sequence_bits = sequence_bits,
                         .time_unit_ms = 1};
}

// One completed call: which one (the order it was made in), and its ID or error.
struct Completion {
  int call = 0;
  std::uint64_t id = 0;
  boost::system::error_code error;
};

struct Fixture {
  // Declared first: the scheduler observes the clock and must go before it.
  FakeClock clock;
  ScriptedStore store;
  GroupCommitter committer{store};
  TicketService service{store, committer};
  TimerQueue retries{clock};
  std::shared_ptr<SnowflakeGenerator> generator;
  std::vector<Completion> completions;  // written inline or inside a clock step: one thread
  int calls = 0;

  explicit Fixture(int sequence_bits = 12, ClockPolicy policy = ClockPolicy::kWait,
                   std::shared_ptr<const WorkerLease> lease = nullptr) {
    auto g = SnowflakeGenerator::open(SnowflakeOptions{.name = "flakes",
                                                       .layout = test_layout(sequence_bits),
                                                       .worker_id = 7,
                                                       .policy = policy,
                                                       .max_backward_ms = 5,
                                                       .lease = std::move(lease)},
                                      store, committer, clock);
    EXPECT_TRUE(g) << (g ? "" : g.error().message);
    generator = *g;
    EXPECT_TRUE(service.add_snowflake(generator, retries, clock));
  }
  ~Fixture() {
    (void)generator->close();  // its result is the close tests' business, not the fixture's
    retries.stop();
    committer.stop();
  }

  // Asks for one ID, as a front end does; returns the number of the call.
  int call() {
    const int n = ++calls;
    service.next("flakes", 1, [this, n](DetailedResult<Block> r) {
      completions.push_back(r ? Completion{n, r->first, {}} : Completion{n, 0, r.error().code});
    });
    return n;
  }
  [[nodiscard]] std::vector<int> completed_calls() const {
    std::vector<int> out;
    for (const auto& c : completions) out.push_back(c.call);
    return out;
  }
  [[nodiscard]] SnowflakeParts parts(std::uint64_t id) const {
    auto p = generator->layout().decode(id);
    EXPECT_TRUE(p);
    return p ? *p : SnowflakeParts{};
  }
  // (ms since kT0, sequence) of each completed ID, in completion order.
  [[nodiscard]] std::vector<std::pair<std::int64_t, std::uint64_t>> ticks_and_sequences() const {
    std::vector<std::pair<std::int64_t, std::uint64_t>> out;
    for (const auto& c : completions) {
      EXPECT_FALSE(c.error) << "call " << c.call << ": " << c.error.message();
      const auto p = parts(c.id);
      out.emplace_back(p.unix_ms - kT0, p.sequence);
    }
    return out;
  }
};

using TickSeq = std::vector<std::pair<std::int64_t, std::uint64_t>>;

TEST(SnowflakeWaits, AClockSteppedBackThreeMsCompletesWaitingCallsWhenItReachesTheLastIdAgain) {
  Fixture f;
  f.clock.advance(10);
  f.call();  // kT0 + 10, sequence 0
  ASSERT_EQ(f.completed_calls(), (std::vector<int>{1}));

  f.clock.advance(-3);  // kT0 + 7: behind the last ID by 3 ms, within max_backward_ms 5
  f.call();
  f.call();
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1}));  // both wait on the clock
  EXPECT_EQ(f.generator->stats().clock_backward_waits, 2u);
  EXPECT_EQ(f.generator->stats().clock_backward_events, 1u);

  f.clock.advance(1);  // kT0 + 8
  f.clock.advance(1);  // kT0 + 9
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1}));
  f.clock.advance(1);  // kT0 + 10: the tick of the last ID, which still has room
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(f.ticks_and_sequences(), (TickSeq{{10, 0}, {10, 1}, {10, 2}}));
  EXPECT_EQ(f.parts(f.completions.back().id).worker, 7u);
  EXPECT_LT(f.completions[0].id, f.completions[1].id);
  EXPECT_LT(f.completions[1].id, f.completions[2].id);
}

TEST(SnowflakeWaits, OneStepPastTheLastIdCompletesEveryWaitingCallInOrder) {
  Fixture f;
  f.clock.advance(10);
  f.call();
  f.clock.set(kT0 + 6);  // 4 ms back
  for (int i = 0; i < 3; ++i) f.call();
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1}));
  f.clock.set(kT0 + 12);  // one step well past the wait
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3, 4}));
  // The retries ran at kT0 + 12, a newer tick than the last ID: they start it afresh.
  EXPECT_EQ(f.ticks_and_sequences(), (TickSeq{{10, 0}, {12, 0}, {12, 1}, {12, 2}}));
}

TEST(SnowflakeWaits, AClockSteppedBackFurtherThanAllowedFailsAtOnceAndWaitsForNothing) {
  Fixture f;
  f.clock.advance(10);
  f.call();
  f.clock.advance(-6);  // beyond max_backward_ms 5
  f.call();
  ASSERT_EQ(f.completed_calls(), (std::vector<int>{1, 2}));
  EXPECT_EQ(f.completions[1].error, SnowflakeErrc::kClockMovedBackwards);
  f.clock.advance(6);
  EXPECT_EQ(f.completions.size(), 2u);
}

TEST(SnowflakeWaits, AClockSteppedBackAgainWhileCallsWaitKeepsThemWaiting) {
  Fixture f;
  f.clock.advance(10);
  f.call();
  f.clock.set(kT0 + 8);  // 2 ms back: the call waits for kT0 + 10
  f.call();
  f.clock.set(kT0 + 6);  // further back, still within 5 ms of the last ID
  f.clock.set(kT0 + 9);
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1}));
  f.clock.set(kT0 + 10);
  EXPECT_EQ(f.ticks_and_sequences(), (TickSeq{{10, 0}, {10, 1}}));
}

TEST(SnowflakeWaits, AnExhaustedMillisecondCompletesTheWaitingCallsAtTheNextOneInOrder) {
  Fixture f(2);  // 4 IDs per 1 ms tick
  for (int i = 0; i < 6; ++i) f.call();
  // Four complete at once, the other two wait for the next millisecond.
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(f.generator->stats().sequence_exhausted, 2u);
  f.clock.advance(1);
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.ticks_and_sequences(), (TickSeq{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}}));
}

TEST(SnowflakeWaits, CallsThatFindTheNextMillisecondFullTooWaitForTheOneAfter) {
  Fixture f(2);
  for (int i = 0; i < 10; ++i) f.call();
  EXPECT_EQ(f.completions.size(), 4u);
  f.clock.advance(1);  // calls 5-8 take kT0 + 1; 9 and 10 are told to come back at kT0 + 2
  EXPECT_EQ(f.completions.size(), 8u);
  f.clock.advance(0);  // a step that reaches nothing new
  EXPECT_EQ(f.completions.size(), 8u);
  f.clock.advance(1);
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(
      f.ticks_and_sequences(),
      (TickSeq{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}, {1, 2}, {1, 3}, {2, 0}, {2, 1}}));
  EXPECT_EQ(f.generator->stats().sequence_exhausted, 8u);  // 6 at kT0, 2 at kT0 + 1
}

TEST(SnowflakeWaits, ANewCallInTheSameMillisecondAsWaitingOnesGetsInLine) {
  Fixture f(1);  // 2 IDs per tick
  for (int i = 0; i < 3; ++i) f.call();
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2}));
  f.call();  // still kT0: also waits, behind call 3
  f.clock.advance(1);
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(f.ticks_and_sequences(), (TickSeq{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
}

TEST(SnowflakeWaits, ALeasedWorkersMarkWaitRetriesEachMillisecondUntilTheKeeperRaisesIt) {
  WorkerLeaseState state{.held = true,
                         .generation = 1,
                         .worker_id = 5,
                         .renewed_at_unix_ms = kT0,
                         .valid_until_unix_ms = kT0 + 7'500,
                         .not_before_unix_ms = 0,
                         .issue_until_unix_ms = kT0 + 3};  // the keeper's mark
  auto lease = std::make_shared<FakeWorkerLease>(state);
  Fixture f(1, ClockPolicy::kLogical, lease);  // 2 IDs per tick
  f.clock.set(kT0 + 3);
  f.call();
  f.clock.set(kT0);  // kLogical keeps counting in tick kT0 + 3, then would borrow kT0 + 4
  f.call();
  f.call();  // past the mark: waits, retried every hwm_retry_ms (1 ms)
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2}));
  EXPECT_EQ(f.generator->stats().lease_waits, 1u);
  f.clock.advance(1);
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2}));
  EXPECT_EQ(f.generator->stats().lease_waits, 2u);
  state.issue_until_unix_ms = kT0 + 10'000;  // a renewal raised the mark
  lease->set(state);
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2}));  // nothing runs until a step
  f.clock.advance(1);
  EXPECT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(f.ticks_and_sequences(), (TickSeq{{3, 0}, {3, 1}, {4, 0}}));
  EXPECT_EQ(f.parts(f.completions.back().id).worker, 5u);
}

TEST(SnowflakeWaits, ClosingTheGeneratorAndStoppingTheSchedulerAnswersWaitingCallsShuttingDown) {
  Fixture f(1);
  for (int i = 0; i < 3; ++i) f.call();
  ASSERT_EQ(f.completions.size(), 2u);
  ASSERT_TRUE(f.generator->close());
  f.retries.stop();  // what Engine::stop() does: pending retries run now and see the close
  ASSERT_EQ(f.completed_calls(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(f.completions[2].error, TicketErrc::kShuttingDown);
}

}  // namespace
}  // namespace ticketd
