#include "server/core/sequence_record.h"

#include <gtest/gtest.h>

namespace ticketd {
namespace {

TEST(SequenceRecord, RoundTrips) {
  SequenceRecord r{SequenceSpec{"Tickets32", SequenceKind::kTicket, 5, 2, 1, 4294967295u, 7}, 41};
  const auto text = encode_record(r);
  EXPECT_EQ(text,
            "v=1 kind=ticket start=5 increment=2 offset=1 max_value=4294967295 cache=7 ceiling=41");
  auto back = decode_record("Tickets32", text);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, r);
}

TEST(SequenceRecord, FenceAndRestrideRoundTripAndAreLeftOutWhenUnset) {
  SequenceRecord r{SequenceSpec{"T", SequenceKind::kTicket, 101, 3, 2, 1000000, 10}, 100, 0, true};
  EXPECT_EQ(encode_record(r),
            "v=1 kind=ticket start=101 increment=3 offset=2 max_value=1000000 cache=10 ceiling=100 "
            "restrided=1");
  EXPECT_EQ(decode_record("T", encode_record(r)), r);
  r.fence = 5000;
  r.restrided = false;
  EXPECT_EQ(encode_record(r),
            "v=1 kind=ticket start=101 increment=3 offset=2 max_value=1000000 cache=10 ceiling=100 "
            "fence=5000");
  EXPECT_EQ(decode_record("T", encode_record(r)), r);
  const char* bad[] = {
      "v=1 kind=ticket start=1 increment=1 offset=1 max_value=9 cache=1 ceiling=0 fence=x",
      "v=1 kind=ticket start=1 increment=1 offset=1 max_value=9 cache=1 ceiling=0 restrided=2"};
  for (auto* t : bad) EXPECT_FALSE(decode_record("s", t)) << t;
}

TEST(SequenceRecord, MaxRateAndItsAllowanceRoundTripAndAreLeftOutWhenDefault) {
  SequenceRecord r{SequenceSpec{"T", SequenceKind::kTicket, 1, 1, 1, 1000, 10}, 7};
  EXPECT_EQ(encode_record(r),
            "v=1 kind=ticket start=1 increment=1 offset=1 max_value=1000 cache=10 ceiling=7");
  EXPECT_EQ(decode_record("T", encode_record(r))->spec.max_rate, kDefaultMaxRate);
  r.spec.max_rate = 250;
  r.rate_tat_us = 1796169600123456;
  EXPECT_EQ(encode_record(r),
            "v=1 kind=ticket start=1 increment=1 offset=1 max_value=1000 cache=10 ceiling=7 "
            "max_rate=250 rate_tat_us=1796169600123456");
  EXPECT_EQ(decode_record("T", encode_record(r)), r);
  EXPECT_FALSE(decode_record(
      "T",
      "v=1 kind=ticket start=1 increment=1 offset=1 max_value=9 cache=1 ceiling=0 max_rate=x"));
}

TEST(SequenceRecord, RejectsDamagedText) {
  const char* bad[] = {"",
                       "v=2 kind=ticket",
                       "v=1 kind=nope start=1 increment=1 offset=1 "
                       "max_value=9 cache=1 ceiling=0",
                       "v=1 kind=ticket start=x increment=1 offset=1 max_value=9 cache=1 ceiling=0",
                       "v=1 kind=ticket start=1 increment=1 offset=1 max_value=9 cache=1",
                       "garbage"};
  for (auto* t : bad) EXPECT_FALSE(decode_record("s", t)) << t;
}

TEST(SequenceRecord, TombstoneRoundTrips) {
  EXPECT_EQ(decode_tombstone(encode_tombstone(123)), 123u);
  EXPECT_FALSE(decode_tombstone("ceiling"));
}

TEST(SequenceSpec, ValidateNamesTheProblem) {
  EXPECT_EQ(validate(SequenceSpec{.name = "a"}), "");
  EXPECT_NE(validate(SequenceSpec{.name = "a", .increment = 2, .offset = 3}).find("offset"),
            std::string::npos);
  EXPECT_NE(validate(SequenceSpec{.name = "a", .start = 10, .max_value = 5}).find("max_value"),
            std::string::npos);
  EXPECT_NE(validate(SequenceSpec{.name = ""}).find("empty"), std::string::npos);
  EXPECT_NE(validate(SequenceSpec{.name = "a/b"}).find("'/'"), std::string::npos);
  EXPECT_NE(validate(SequenceSpec{.name = "a", .cache = 0}).find("cache"), std::string::npos);
}

}  // namespace
}  // namespace ticketd
