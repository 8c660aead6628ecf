#include "server/core/auth_throttle.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using testing::FakeClock;

AuthThrottleOptions options() {
  AuthThrottleOptions o;
  o.free_failures = 3;
  o.min_delay_ms = 100;
  o.max_delay_ms = 1000;
  o.forget_after_ms = 60000;
  o.max_addresses = 4;
  o.log_interval_ms = 1000;
  return o;
}

// One check that fails at once (its slot released when the answer is sent).
AuthThrottle::Failure fail(AuthThrottle& t, std::string_view address, std::string_view user) {
  auto slot = t.admit(address, user);
  EXPECT_TRUE(slot.admitted());
  return t.record_failure(slot);
}

TEST(AuthThrottle, FailuresWaitOnlyAfterTheFreeOnesAndTheWaitDoublesUpToTheCap) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  const std::int64_t expected[] = {0, 0, 0, 100, 200, 400, 800, 1000, 1000};
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    auto f = fail(t, "10.0.0.1", "app");
    EXPECT_EQ(f.failures, i + 1);
    EXPECT_EQ(f.delay_ms, expected[i]) << i;
    clock.advance(f.delay_ms);  // the next attempt comes right after the answer
  }
}

TEST(AuthThrottle, PairsAreCountedApartAndASuccessResetsNothing) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  for (int i = 0; i < 5; ++i) (void)fail(t, "10.0.0.1", "app");
  EXPECT_EQ(fail(t, "10.0.0.1", "app").delay_ms, 400);
  // Another user behind the same address, and the same user elsewhere, start free.
  EXPECT_EQ(fail(t, "10.0.0.1", "ops").delay_ms, 0);
  EXPECT_EQ(fail(t, "10.0.0.2", "app").delay_ms, 0);
  // A correct credential is admitted (never delayed) and changes nothing: its slot is simply
  // released; the guesser's count goes on.
  {
    auto good = t.admit("10.0.0.1", "app");
    EXPECT_TRUE(good.admitted());
  }
  EXPECT_EQ(fail(t, "10.0.0.1", "app").delay_ms, 800);
}

TEST(AuthThrottle, ParallelChecksOfAThrottledPairAreBoundedAndTheRestRefusedUnchecked) {
  FakeClock clock;
  AuthThrottle t(clock, options());  // free_failures 3, max_in_flight 2
  for (int i = 0; i < 3; ++i) (void)fail(t, "10.0.0.1", "app");
  // 300 parallel guesses: two are checked (their failures wait, holding their places), the
  // other 298 are refused without a check.
  std::vector<AuthThrottle::Slot> waiting;
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    auto slot = t.admit("10.0.0.1", "app");
    if (!slot.admitted()) {
      ++refused;
      continue;
    }
    EXPECT_GT(t.record_failure(slot).delay_ms, 0);
    waiting.push_back(std::move(slot));
  }
  EXPECT_EQ(waiting.size(), 2u);
  EXPECT_EQ(refused, 298);
  // Another user of the address is not affected.
  EXPECT_TRUE(t.admit("10.0.0.1", "ops").admitted());
  // Once one answer is out, one more check may run.
  waiting.front().release();
  EXPECT_TRUE(t.admit("10.0.0.1", "app").admitted());
  waiting.clear();
}

TEST(AuthThrottle, APairNotYetThrottledIsNotBounded) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  std::vector<AuthThrottle::Slot> held;
  for (int i = 0; i < 10; ++i) {
    held.push_back(t.admit("10.0.0.1", "app"));
    EXPECT_TRUE(held.back().admitted());
  }
}

TEST(AuthThrottle, FailuresAreForgottenAfterAQuietPeriod) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  for (int i = 0; i < 5; ++i) (void)fail(t, "10.0.0.1", "app");
  clock.advance(59999);
  EXPECT_EQ(fail(t, "10.0.0.1", "app").delay_ms, 400);
  clock.advance(60000);
  EXPECT_EQ(fail(t, "10.0.0.1", "app").failures, 1u);
}

TEST(AuthThrottle, TheTableIsBoundedAndForgottenPairsMakeRoom) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  for (int a = 0; a < 10; ++a) {
    for (int i = 0; i < 5; ++i) (void)fail(t, "10.0.0." + std::to_string(a), "app");
  }
  EXPECT_EQ(t.tracked(), 4u);
  EXPECT_EQ(fail(t, "10.0.0.3", "app").delay_ms, 400);  // the first four stay throttled
  EXPECT_EQ(fail(t, "10.0.0.9", "app").delay_ms, 0);
  clock.advance(60000);
  for (int i = 0; i < 5; ++i) (void)fail(t, "10.0.0.9", "app");
  EXPECT_EQ(t.tracked(), 1u);
  EXPECT_EQ(fail(t, "10.0.0.9", "app").delay_ms, 400);
}

TEST(AuthThrottle, MadeUpUserNamesFromOneAddressShareOneCount) {
  FakeClock clock;
  AuthThrottleOptions o = options();
  o.max_addresses = 1000;
  o.max_users_per_address = 3;
  AuthThrottle t(clock, o);
  // Names beyond the third count together: guessing a fourth account gets no free failures
  // from the many names tried before it.
  for (int i = 0; i < 20; ++i) (void)fail(t, "10.0.0.1", "user" + std::to_string(i));
  EXPECT_EQ(t.tracked(), 4u);
  EXPECT_GT(fail(t, "10.0.0.1", "root").delay_ms, 0);
  EXPECT_EQ(fail(t, "10.0.0.1", "user0").delay_ms, 0);  // its own count: 2 failures
}

TEST(AuthThrottle, FailureLogLinesAreRateLimitedWithACount) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  int lines = 0;
  std::uint64_t suppressed = 0;
  for (int i = 0; i < 5000; ++i) {  // 5000 failures over 5 s from many addresses
    auto f = fail(t, "10.1." + std::to_string(i % 3), "app");
    if (f.log) {
      ++lines;
      suppressed += *f.log;
    }
    clock.advance(1);
  }
  EXPECT_EQ(lines, 5);
  EXPECT_EQ(suppressed, 5000u - 5u - 999u);  // the last interval's count is still pending
}

TEST(AuthThrottle, PrintableEscapesWhatAClientMaySendAsAUserName) {
  EXPECT_EQ(printable("app"), "app");
  EXPECT_EQ(printable("a\nb'c\\"), "a\\x0ab\\x27c\\x5c");
  EXPECT_EQ(printable(std::string(100, 'x'), 4), "xxxx...");
}

}  // namespace
}  // namespace ticketd
