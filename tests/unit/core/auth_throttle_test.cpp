#include "server/core/auth_throttle.h"

#include <gtest/gtest.h>

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

TEST(AuthThrottle, AttemptsWaitOnlyAfterTheFreeFailuresAndTheWaitDoublesUpToTheCap) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  const std::int64_t expected[] = {0, 0, 100, 200, 400, 800, 1000, 1000, 1000};
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_EQ(t.delay_ms("10.0.0.1"), i < 3 ? 0 : expected[i - 1]) << i;
    auto f = t.record_failure("10.0.0.1");
    EXPECT_EQ(f.failures, i + 1);
    EXPECT_EQ(f.next_delay_ms, expected[i]) << i;
    clock.advance(f.next_delay_ms);  // the next attempt comes right after its wait
  }
  EXPECT_EQ(t.delay_ms("10.0.0.1"), 1000);
}

TEST(AuthThrottle, AddressesAreCountedApart) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  for (int i = 0; i < 5; ++i) (void)t.record_failure("10.0.0.1");
  EXPECT_EQ(t.delay_ms("10.0.0.1"), 400);
  EXPECT_EQ(t.delay_ms("10.0.0.2"), 0);
}

TEST(AuthThrottle, ASuccessResetsTheAddress) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  for (int i = 0; i < 5; ++i) (void)t.record_failure("10.0.0.1");
  t.record_success("10.0.0.1");
  EXPECT_EQ(t.delay_ms("10.0.0.1"), 0);
  EXPECT_EQ(t.record_failure("10.0.0.1").failures, 1u);
}

TEST(AuthThrottle, FailuresAreForgottenAfterAQuietPeriod) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  for (int i = 0; i < 5; ++i) (void)t.record_failure("10.0.0.1");
  clock.advance(59999);
  EXPECT_EQ(t.delay_ms("10.0.0.1"), 400);
  clock.advance(1);
  EXPECT_EQ(t.delay_ms("10.0.0.1"), 0);
  EXPECT_EQ(t.record_failure("10.0.0.1").failures, 1u);
}

TEST(AuthThrottle, TheTableIsBoundedAndForgottenAddressesMakeRoom) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  for (int a = 0; a < 10; ++a) {
    for (int i = 0; i < 5; ++i) (void)t.record_failure("10.0.0." + std::to_string(a));
  }
  EXPECT_EQ(t.tracked(), 4u);
  EXPECT_EQ(t.delay_ms("10.0.0.3"), 400);  // the first four stay throttled
  EXPECT_EQ(t.delay_ms("10.0.0.9"), 0);
  clock.advance(60000);
  for (int i = 0; i < 5; ++i) (void)t.record_failure("10.0.0.9");
  EXPECT_EQ(t.tracked(), 1u);
  EXPECT_EQ(t.delay_ms("10.0.0.9"), 400);
}

TEST(AuthThrottle, FailureLogLinesAreRateLimitedWithACount) {
  FakeClock clock;
  AuthThrottle t(clock, options());
  int lines = 0;
  std::uint64_t suppressed = 0;
  for (int i = 0; i < 5000; ++i) {  // 5000 failures over 5 s from many addresses
    auto f = t.record_failure("10.1." + std::to_string(i % 3));
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
