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

TEST(SequenceRecord, RestoreFloorRoundTripsByteForByte) {
  const RestoreFloor floor{.span_ms = 120000, .values = 7};
  const auto text = encode_restore_floor(floor);
  EXPECT_EQ(text, "v=1 span_ms=120000 values=7");
  EXPECT_EQ(decode_restore_floor(text), floor);
  for (const char* bad : {"", "v=1 span_ms=1", "v=1 values=1", "v=2 span_ms=1 values=1",
                          "span_ms=1 values=1", "v=1 span_ms=-1 values=1"}) {
    EXPECT_FALSE(decode_restore_floor(bad)) << bad;
  }
}

// What a name the backup did not hold can have issued: its max_rate over the span plus one
// rate window (as restore's auto skip counts), plus the stated values; saturating.
TEST(SequenceRecord, RestoreFloorSkipIsTheRateOverTheSpanAndWindow) {
  // 1000/s, cache 1000: a window of (1000 + 100000) / 1000 = 101 s; 120 s + 101 s = 221,000.
  const SequenceSpec spec{.cache = 1000, .max_rate = 1000};
  EXPECT_EQ(restore_floor_skip({.span_ms = 120000, .values = 0}, spec), 221000u);
  EXPECT_EQ(restore_floor_skip({.span_ms = 120000, .values = 5}, spec), 221005u);
  // The default rate and a small cache: a one-second window.
  EXPECT_EQ(restore_floor_skip({.span_ms = 1000, .values = 0}, SequenceSpec{.cache = 10}),
            2 * kDefaultMaxRate);
  EXPECT_EQ(restore_floor_skip({.span_ms = UINT64_MAX, .values = UINT64_MAX},
                               SequenceSpec{.max_rate = kMaxMaxRate}),
            UINT64_MAX);
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
