#include "server/base/utc_time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace ticketd {
namespace {

struct UtcCase {
  std::int64_t unix_ms;
  std::string_view iso;
  std::string_view datetime;
};

// Checked against Python's datetime.fromtimestamp(ms / 1000, timezone.utc).
constexpr UtcCase kUtcCases[] = {
    {0, "1970-01-01T00:00:00.000Z", "1970-01-01 00:00:00"},
    {1767225600123, "2026-01-01T00:00:00.123Z", "2026-01-01 00:00:00"},
    {951825599999, "2000-02-29T11:59:59.999Z", "2000-02-29 11:59:59"},
    {4107542399000, "2100-02-28T23:59:59.000Z", "2100-02-28 23:59:59"},
    {-1, "1969-12-31T23:59:59.999Z", "1969-12-31 23:59:59"},
    {-86400000, "1969-12-31T00:00:00.000Z", "1969-12-31 00:00:00"},
    {253402300799999, "9999-12-31T23:59:59.999Z", "9999-12-31 23:59:59"},
};

TEST(UtcTime, FormatsIso8601WithMilliseconds) {
  for (const auto& c : kUtcCases) EXPECT_EQ(format_utc_ms(c.unix_ms), c.iso) << c.unix_ms;
  // Past year 9999 (no digit-by-digit fast path): still every digit of the year.
  EXPECT_EQ(format_utc_ms(253402300800000), "10000-01-01T00:00:00.000Z");
}

TEST(UtcTime, FormatsMySqlDatetimeRoundingTowardsThePast) {
  for (const auto& c : kUtcCases)
    EXPECT_EQ(format_utc_datetime(c.unix_ms), c.datetime) << c.unix_ms;
}

TEST(UtcTime, ParsesWhatItFormats) {
  for (const auto& c : kUtcCases) EXPECT_EQ(parse_utc_ms(c.iso), c.unix_ms) << c.iso;
}

TEST(UtcTime, ParsesFractionsOfAnyLengthAndNone) {
  EXPECT_EQ(parse_utc_ms("2026-01-01T00:00:00Z"), 1767225600000);
  EXPECT_EQ(parse_utc_ms("2026-01-01T00:00:01.5Z"), 1767225601500);
  EXPECT_EQ(parse_utc_ms("2026-01-01T00:00:01.123456Z"), 1767225601123);
  EXPECT_EQ(parse_utc_ms("2026-01-01T23:59:60Z"), 1767312000000);  // leap second: next minute
}

TEST(UtcTime, RefusesWhatIsNotOneUtcInstant) {
  for (std::string_view bad :
       {"", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00+01:00",
        "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
        "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:61Z",
        "2026-1-01T00:00:00Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00ZZ",
        " 2026-01-01T00:00:00Z", "+026-01-01T00:00:00Z", "2026-01-01T00:00:00z"}) {
    EXPECT_EQ(parse_utc_ms(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace ticketd
