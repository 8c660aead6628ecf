#include "server/core/clock.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using testing::FakeClock;

TEST(Clock, FormatsUtcWithMilliseconds) {
  // format_utc_ms lives in server/base; clock.h keeps it in reach of whoever reads a Clock.
  EXPECT_EQ(format_utc_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_ms(1767225600123), "2026-01-01T00:00:00.123Z");
  EXPECT_EQ(format_utc_ms(951825599999), "2000-02-29T11:59:59.999Z");
}

TEST(FakeClock, StartsAtNewYear2026UnlessToldOtherwise) {
  EXPECT_EQ(FakeClock().now_unix_ms(), 1767225600000);
  EXPECT_EQ(format_utc_ms(FakeClock().now_unix_ms()), "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(FakeClock(42).now_unix_ms(), 42);
}

TEST(FakeClock, MovesOnlyWhenTold) {
  FakeClock clock(1000);
  EXPECT_EQ(clock.now_unix_ms(), 1000);
  EXPECT_EQ(clock.now_unix_ms(), 1000);
  clock.advance(5);
  EXPECT_EQ(clock.now_unix_ms(), 1005);
  clock.advance(-10);  // a clock stepped back
  EXPECT_EQ(clock.now_unix_ms(), 995);
  clock.set(7);
  EXPECT_EQ(clock.now_unix_ms(), 7);
}

TEST(FakeClock, AdvanceToNeverMovesBackwards) {
  FakeClock clock(1000);
  clock.advance_to(1500);
  EXPECT_EQ(clock.now_unix_ms(), 1500);
  clock.advance_to(1200);
  EXPECT_EQ(clock.now_unix_ms(), 1500);
}

TEST(FakeClock, ConcurrentAdvancesAllLand) {
  FakeClock clock(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < 10000; ++i) clock.advance(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(clock.now_unix_ms(), 40000);
}

}  // namespace
}  // namespace ticketd
