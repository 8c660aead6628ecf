#include "server/core/ulid_sequence.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/core/ticket_errc.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::FakeClock;
using testing::ScriptedStore;

constexpr std::int64_t kT0 = FakeClock::kDefaultStartUnixMs;

struct Fixture {
  FakeClock clock;
  ScriptedStore store;
  GroupCommitter committer{store};

  static UlidSequenceOptions options(ClockPolicy policy, std::int64_t margin_ms = 100) {
    return UlidSequenceOptions{.name = "u",
                               .policy = policy,
                               .max_backward_ms = 5,
                               .mark_margin_ms = margin_ms,
                               .failure_backoff_ms = 100};
  }
  std::shared_ptr<UlidSequence> open(UlidSequenceOptions o) {
    auto s = UlidSequence::open(std::move(o), store, committer, clock);
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? *s : nullptr;
  }
  // Waits until every completion submitted so far has run (its own result is ignored: it may
  // share a commit a test made fail).
  void barrier() { (void)commit_and_wait(committer, {}); }
  std::optional<SnowflakeHwmRecord> stored_mark() {
    auto v = store.inner().get(ulid_mark_key("u"));
    if (!v || !v->has_value()) return std::nullopt;
    return decode_hwm(**v);
  }
};

Ulid must_issue(UlidSequence& s) {
  auto r = s.try_next();
  EXPECT_TRUE(r.ok()) << r.error.code.message() << ": " << r.error.message;
  return r.id;
}

TEST(UlidSequence, OpenDurablyWritesAMarkAMarginAhead) {
  Fixture f;
  auto s = f.open(Fixture::options(ClockPolicy::kWait, 2000));
  EXPECT_EQ(f.stored_mark(), (SnowflakeHwmRecord{kT0 + 2000, kT0}));
  EXPECT_EQ(s->mark_stats().mark_unix_ms, kT0 + 2000);
  EXPECT_EQ(ulid_unix_ms(must_issue(*s)), kT0);
}

TEST(UlidSequence, IdsPastTheMarkWaitForItsWrite) {
  Fixture f;
  auto s = f.open(Fixture::options(ClockPolicy::kWait));
  f.store.hold();
  f.clock.advance(60);  // within half the margin of the mark: issued, and a write starts (held)
  (void)must_issue(*s);
  f.store.wait_entered(2);
  f.clock.advance_to(kT0 + 100);
  EXPECT_TRUE(s->try_next().ok());  // the last millisecond the old mark covers
  f.clock.advance(1);
  auto r = s->try_next();
  ASSERT_TRUE(r.retry_later());
  EXPECT_EQ(r.error.message, "mark pending");
  EXPECT_EQ(r.over_ceiling_ms, kT0 + 101);
  EXPECT_EQ(s->generator().stats().ceiling_waits, 1u);
  EXPECT_EQ(s->generator().stats().issued, 2u);
  f.store.release();
  f.barrier();
  EXPECT_EQ(f.stored_mark(), (SnowflakeHwmRecord{kT0 + 160, kT0 + 60}));
  EXPECT_EQ(ulid_unix_ms(must_issue(*s)), kT0 + 101);
}

TEST(UlidSequence, AFailedMarkWriteIssuesNothingPastTheOldMark) {
  Fixture f;
  auto s = f.open(Fixture::options(ClockPolicy::kWait));
  f.store.fail_next(1);
  f.clock.advance(60);
  (void)must_issue(*s);  // starts the write, which fails
  f.barrier();
  EXPECT_EQ(s->mark_stats().mark_write_failures, 1u);
  f.clock.advance_to(kT0 + 100);
  (void)must_issue(*s);  // below the old mark IDs still flow
  f.clock.advance(1);
  auto r = s->try_next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code, TicketErrc::kStorageFailed);
  EXPECT_NE(r.error.message.find("mark write failed: injected"), std::string::npos)
      << r.error.message;
  // After the backoff a caller starts the write again and waits for it.
  f.clock.advance_to(kT0 + 160);
  ASSERT_TRUE(s->try_next().retry_later());
  f.barrier();
  EXPECT_EQ(ulid_unix_ms(must_issue(*s)), kT0 + 160);
  EXPECT_EQ(s->mark_stats().mark_unix_ms, kT0 + 260);
}

TEST(UlidSequence, ACrashedRunsSuccessorResumesAboveItsMarkUnderEveryPolicy) {
  for (auto policy : {ClockPolicy::kWait, ClockPolicy::kFail, ClockPolicy::kLogical}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    Fixture f;
    Ulid last{};
    {
      auto s = f.open(Fixture::options(policy));
      last = must_issue(*s);
      // Killed: no close(), the mark stays a margin ahead of the clock.
    }
    auto s = f.open(Fixture::options(policy));
    auto r = s->try_next();
    if (policy == ClockPolicy::kLogical) {
      // Counts on past the old mark, ahead of the clock.
      ASSERT_TRUE(r.ok()) << r.error.message;
      EXPECT_EQ(ulid_unix_ms(r.id), kT0 + 101);
    } else {
      // Waiting out the margin is the normal cost of a crash: not a clock regression.
      ASSERT_TRUE(r.retry_later()) << r.error.message;
      EXPECT_EQ(r.retry_at_unix_ms, kT0 + 101);
      f.clock.advance_to(r.retry_at_unix_ms);
      r = s->try_next();
      ASSERT_TRUE(r.ok()) << r.error.message;
    }
    EXPECT_GT(r.id, last);
    EXPECT_GT(ulid_unix_ms(r.id), kT0 + 100);
  }
}

TEST(UlidSequence, CloseLowersTheMarkSoACleanRestartDoesNotWait) {
  Fixture f;
  Ulid last{};
  {
    auto s = f.open(Fixture::options(ClockPolicy::kWait));
    f.clock.advance(10);
    last = must_issue(*s);
    ASSERT_TRUE(s->close());
    EXPECT_EQ(f.stored_mark(), (SnowflakeHwmRecord{kT0 + 10, kT0 + 10}));
    auto r = s->try_next();
    EXPECT_EQ(r.error.code, TicketErrc::kShuttingDown);
  }
  f.clock.advance(1);
  auto s = f.open(Fixture::options(ClockPolicy::kWait));
  const Ulid next = must_issue(*s);
  EXPECT_GT(next, last);
  EXPECT_EQ(ulid_unix_ms(next), kT0 + 11);
}

TEST(UlidSequence, AClockBehindThePreviousRunsReadingIsARegressionForThePolicy) {
  for (auto policy : {ClockPolicy::kWait, ClockPolicy::kFail}) {
    Fixture f;
    f.clock.advance(1000);
    (void)f.open(Fixture::options(policy));  // its mark was written at kT0 + 1000
    f.clock.set(kT0);                        // the clock stepped back a second across the restart
    auto s = f.open(Fixture::options(policy));
    auto r = s->try_next();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error.code, SnowflakeErrc::kClockMovedBackwards);
    EXPECT_NE(r.error.message.find("behind the previous run"), std::string::npos)
        << r.error.message;
  }
}

TEST(UlidSequence, RefreshKeepsAnIdleSequencesMarkAhead) {
  Fixture f;
  auto s = f.open(Fixture::options(ClockPolicy::kWait));
  f.clock.advance(40);
  EXPECT_FALSE(s->refresh());  // 60 ms left: more than half the margin
  f.clock.advance(20);
  EXPECT_TRUE(s->refresh());
  EXPECT_FALSE(s->refresh());  // one write at a time
  f.barrier();
  EXPECT_EQ(s->mark_stats().mark_unix_ms, kT0 + 160);
  f.clock.advance_to(kT0 + 150);
  (void)must_issue(*s);
  EXPECT_EQ(s->generator().stats().ceiling_waits, 0u);
}

TEST(UlidSequence, AMarkThatDoesNotDecodeIsRefused) {
  Fixture f;
  std::vector<Mutation> m{{ulid_mark_key("u"), "v=1 garbage"}};
  ASSERT_TRUE(f.store.inner().commit(m));
  auto s = UlidSequence::open(Fixture::options(ClockPolicy::kWait), f.store, f.committer, f.clock);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, StorageErrc::kCorruption);
}

TEST(UlidSequence, TheFloorOfAMarkIsThatMillisecondWithItsRandomPartUsedUp) {
  const Ulid floor = ulid_floor_of_mark(0x0123456789AB);
  EXPECT_EQ(ulid_to_hex(floor), "0123456789abffffffffffffffffffff");
  EXPECT_EQ(ulid_unix_ms(floor), 0x0123456789AB);
}

}  // namespace
}  // namespace ticketd
