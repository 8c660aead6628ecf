#include "server/base/log_rate_limiter.h"

#include <gtest/gtest.h>

namespace ticketd::log {
namespace {

TEST(RateLimiter, AdmitsOneEventPerIntervalAndCountsTheRest) {
  RateLimiter limiter(1000);
  EXPECT_EQ(limiter.admit(5000), 0u);  // the first event always goes through
  for (int i = 1; i < 1000; ++i) EXPECT_FALSE(limiter.admit(5000 + i));
  EXPECT_EQ(limiter.admit(6000), 999u);  // and says how many were left out
  EXPECT_FALSE(limiter.admit(6001));
  EXPECT_EQ(limiter.admit(9000), 1u);
  EXPECT_EQ(limiter.admit(10000), 0u);
}

TEST(RateLimiter, AFloodOfAMillionEventsOverTenSecondsLogsElevenLines) {
  RateLimiter limiter(1000);
  int lines = 0;
  std::uint64_t suppressed = 0;
  for (std::int64_t i = 0; i <= 1000000; ++i) {
    if (auto n = limiter.admit(i / 100)) {  // 100 events per ms, 0..10000 ms
      ++lines;
      suppressed += *n;
    }
  }
  EXPECT_EQ(lines, 11);
  EXPECT_EQ(suppressed + 11, 1000001u);
}

TEST(RateLimiter, ATimeBeforeTheLastAdmittedOneIsSuppressed) {
  RateLimiter limiter(1000);
  EXPECT_TRUE(limiter.admit(5000));
  EXPECT_FALSE(limiter.admit(4000));
}

}  // namespace
}  // namespace ticketd::log
