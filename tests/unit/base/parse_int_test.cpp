#include "server/base/parse_int.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace ticketd {
namespace {

TEST(ParseInt, ReadsWholeDecimalStrings) {
  EXPECT_EQ(parse_u64("0"), 0u);
  EXPECT_EQ(parse_u64("42"), 42u);
  EXPECT_EQ(parse_u64("00000000000000000017"), 17u);  // zero-padded store keys
  EXPECT_EQ(parse_u64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_i64("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_i64("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_i64("-1"), -1);
  EXPECT_EQ(parse_int<std::uint16_t>("65535"), 65535);
  EXPECT_EQ(parse_int<std::uint32_t>("4294967295"), 4294967295u);
}

TEST(ParseInt, RefusesEverythingThatIsNotExactlyANumber) {
  struct Case {
    std::string_view text;
    std::string_view why;
  };
  const Case kBad[] = {{"", "empty"},
                       {" 1", "leading space"},
                       {"1 ", "trailing space"},
                       {"+1", "plus sign"},
                       {"-1", "minus sign on an unsigned type"},
                       {"-0", "minus sign on an unsigned type, even for zero"},
                       {"1x", "trailing byte"},
                       {"0x10", "hex prefix"},
                       {"1.0", "fraction"},
                       {"1e3", "exponent"},
                       {"18446744073709551616", "one above 2^64-1"},
                       {"99999999999999999999999", "far above 2^64-1"},
                       {std::string_view("1\0", 2), "embedded NUL"}};
  for (const auto& c : kBad) EXPECT_EQ(parse_u64(c.text), std::nullopt) << c.why;
}

TEST(ParseInt, SignedRefusesPlusSpacesAndOverflow) {
  for (std::string_view bad :
       {"", "+5", " -5", "-", "--5", "9223372036854775808", "-9223372036854775809", "5-"}) {
    EXPECT_EQ(parse_i64(bad), std::nullopt) << bad;
  }
}

TEST(ParseInt, NarrowTypesRefuseWhatDoesNotFitInsteadOfWrapping) {
  EXPECT_EQ(parse_int<std::uint16_t>("65536"), std::nullopt);
  EXPECT_EQ(parse_int<std::uint32_t>("4294967296"), std::nullopt);
  EXPECT_EQ(parse_int<std::int32_t>("-2147483649"), std::nullopt);
  EXPECT_EQ(parse_int<std::int32_t>("-2147483648"), INT32_MIN);
}

}  // namespace
}  // namespace ticketd
