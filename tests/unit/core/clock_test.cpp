#include "server/core/clock.h"

#include <gtest/gtest.h>

namespace ticketd {
namespace {

TEST(Clock, FormatsUtcWithMilliseconds) {
  EXPECT_EQ(format_utc_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_ms(1767225600123), "2026-01-01T00:00:00.123Z");
  EXPECT_EQ(format_utc_ms(951825599999), "2000-02-29T11:59:59.999Z");
}

}  // namespace
}  // namespace ticketd
