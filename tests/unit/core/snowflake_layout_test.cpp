#include "server/core/snowflake_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/ticket_errc.h"
#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

constexpr std::int64_t kNow = testing::FakeClock::kDefaultStartUnixMs;  // 2026-01-01

struct Preset {
  std::string_view name;
  SnowflakeLayout layout;
  int time_bits, worker_bits, sequence_bits;
  std::int64_t time_unit_ms;
};

const Preset kPresets[] = {
    {"twitter", SnowflakeLayout::twitter(), 41, 10, 12, 1},
    {"instagram", SnowflakeLayout::instagram(), 40, 13, 10, 1},
    {"discord", SnowflakeLayout::discord(), 42, 9, 12, 1},
    {"sonyflake", SnowflakeLayout::sonyflake(), 39, 16, 8, 10},
};

std::vector<std::string> fields(const std::vector<LayoutProblem>& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems) out.push_back(p.field);
  return out;
}

bool mentions(const std::vector<LayoutProblem>& problems, std::string_view field,
              std::string_view text) {
  return std::any_of(problems.begin(), problems.end(), [&](const LayoutProblem& p) {
    return p.field == field && p.message.find(text) != std::string::npos;
  });
}

TEST(SnowflakeLayout, PresetsHaveTheirPublishedWidthsAndAreValid) {
  for (const auto& p : kPresets) {
    EXPECT_EQ(p.layout.time_bits, p.time_bits) << p.name;
    EXPECT_EQ(p.layout.worker_bits, p.worker_bits) << p.name;
    EXPECT_EQ(p.layout.sequence_bits, p.sequence_bits) << p.name;
    EXPECT_EQ(p.layout.time_unit_ms, p.time_unit_ms) << p.name;
    EXPECT_EQ(p.layout.time_bits + p.layout.worker_bits + p.layout.sequence_bits, 63) << p.name;
    EXPECT_TRUE(p.layout.validate(kNow, p.layout.max_worker()).empty()) << p.name;
  }
}

TEST(SnowflakeLayout, EveryPresetRoundTripsComposeAndDecode) {
  for (const auto& p : kPresets) {
    const auto& l = p.layout;
    const auto now_tick = static_cast<std::uint64_t>(l.tick_of(kNow));
    const SnowflakeParts cases[] = {
        {0, 0, 0, 0},
        {0, l.max_worker(), l.max_sequence(), 0},
        {0, 1, 2, now_tick},
        {0, l.max_worker() / 3, l.max_sequence() / 5, now_tick + 12345},
        {0, l.max_worker(), l.max_sequence(), l.max_ticks()},
    };
    for (auto want : cases) {
      want.unix_ms = l.unix_ms_of(static_cast<std::int64_t>(want.tick));
      const std::uint64_t id = l.compose(want.tick, want.worker, want.sequence);
      EXPECT_EQ(id >> 63, 0u) << p.name;
      auto got = l.decode(id);
      ASSERT_TRUE(got) << p.name;
      EXPECT_EQ(*got, want) << p.name << " tick " << want.tick;
    }
    // The largest ID of the layout is exactly 2^63 - 1: every bit but the sign bit is used.
    EXPECT_EQ(l.compose(l.max_ticks(), l.max_worker(), l.max_sequence()),
              (std::uint64_t{1} << 63) - 1)
        << p.name;
  }
}

TEST(SnowflakeLayout, TwitterLayoutMatchesTwittersFormula) {
  const auto l = SnowflakeLayout::twitter();
  const std::int64_t ms = 1767225600123;
  const auto tick = static_cast<std::uint64_t>(ms - 1288834974657);
  EXPECT_EQ(l.compose(tick, 7, 9), tick << 22 | 7u << 12 | 9u);
  auto parts = l.decode(tick << 22 | 7u << 12 | 9u);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->unix_ms, ms);
  EXPECT_EQ(format_utc_ms(parts->unix_ms), "2026-01-01T00:00:00.123Z");
}

TEST(SnowflakeLayout, InstagramLayoutDecodesInstagramsBlogExample) {
  // "Sharding & IDs at Instagram": 1387263000 ms after the epoch, shard 1341, 5001 % 1024.
  const std::uint64_t id = std::uint64_t{1387263000} << 23 | 1341u << 10 | 777u;
  auto parts = SnowflakeLayout::instagram().decode(id);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->unix_ms, 1314220021721 + 1387263000);
  EXPECT_EQ(parts->worker, 1341u);
  EXPECT_EQ(parts->sequence, 777u);
}

TEST(SnowflakeLayout, DiscordIdsDecodeWithTwitterWidthsAtDiscordsEpoch) {
  // Discord's documentation: 175928847299117063 is 2016-04-30T11:18:25.796Z, internal worker
  // 1, process 0, increment 7.
  SnowflakeLayout l = SnowflakeLayout::twitter();
  l.epoch_unix_ms = SnowflakeLayout::discord().epoch_unix_ms;
  auto parts = l.decode(175928847299117063);
  ASSERT_TRUE(parts);
  EXPECT_EQ(format_utc_ms(parts->unix_ms), "2016-04-30T11:18:25.796Z");
  EXPECT_EQ(parts->worker, 1u << 5 | 0u);
  EXPECT_EQ(parts->sequence, 7u);
}

TEST(SnowflakeLayout, SonyflakePutsTheSequenceAboveTheMachineId) {
  // sonyflake.go: elapsed(10 ms units) << 24 | sequence << 16 | machineID.
  const auto l = SnowflakeLayout::sonyflake();
  const std::int64_t ms = 1767225600129;
  const auto elapsed = static_cast<std::uint64_t>((ms - 1409529600000) / 10);
  const std::uint64_t id = elapsed << 24 | 5u << 16 | 0xBEEFu;
  EXPECT_EQ(l.compose(elapsed, 0xBEEF, 5), id);
  auto parts = l.decode(id);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->worker, 0xBEEFu);
  EXPECT_EQ(parts->sequence, 5u);
  EXPECT_EQ(parts->unix_ms, 1767225600120);  // the start of its 10 ms tick
}

TEST(SnowflakeLayout, ValidateReportsEveryProblemAtOnce) {
  SnowflakeLayout l{.epoch_unix_ms = kNow + 1000,
                    .time_bits = 0,
                    .worker_bits = 70,
                    .sequence_bits = 12,
                    .time_unit_ms = 0};
  auto problems = l.validate(kNow, 5);
  EXPECT_EQ(fields(problems),
            (std::vector<std::string>{"time_bits", "worker_bits", "time_unit_ms", "epoch"}));
  EXPECT_TRUE(mentions(problems, "time_bits", "time_bits is 0; it must be between 1 and 62"));
  EXPECT_TRUE(mentions(problems, "worker_bits", "between 0 and 61"));
  EXPECT_TRUE(mentions(problems, "time_unit_ms", "at least 1"));
  EXPECT_TRUE(mentions(problems, "epoch", "is in the future"));
}

TEST(SnowflakeLayout, WidthsMustSumTo63) {
  SnowflakeLayout l = SnowflakeLayout::twitter();
  l.sequence_bits = 10;
  auto problems = l.validate(kNow, 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "");
  EXPECT_EQ(problems[0].message,
            "time_bits + worker_bits + sequence_bits is 61; it must be 63 (the sign bit stays 0)");
}

TEST(SnowflakeLayout, RefusesAnEpochInTheFuture) {
  SnowflakeLayout l = SnowflakeLayout::twitter();
  l.epoch_unix_ms = kNow + 1;
  auto problems = l.validate(kNow, 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "epoch");
  EXPECT_EQ(problems[0].message,
            "epoch 2026-01-01T00:00:00.001Z is in the future (the clock says "
            "2026-01-01T00:00:00.000Z)");
  l.epoch_unix_ms = kNow;  // an epoch of right now is fine
  EXPECT_TRUE(l.validate(kNow, 0).empty());
}

TEST(SnowflakeLayout, RefusesAWorkerIdThatDoesNotFit) {
  auto problems = SnowflakeLayout::twitter().validate(kNow, 1024);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "worker_id");
  EXPECT_EQ(problems[0].message, "worker_id 1024 does not fit in 10 worker bits (max 1023)");
  EXPECT_TRUE(SnowflakeLayout::twitter().validate(kNow, 1023).empty());
}

TEST(SnowflakeLayout, ZeroWorkerBitsIsASingleWorkerLayout) {
  SnowflakeLayout l{.epoch_unix_ms = 0, .time_bits = 51, .worker_bits = 0, .sequence_bits = 12};
  EXPECT_TRUE(l.validate(kNow, 0).empty());
  EXPECT_EQ(l.max_worker(), 0u);
  EXPECT_TRUE(mentions(l.validate(kNow, 1), "worker_id", "does not fit in 0 worker bits"));
  auto parts = l.decode(l.compose(99, 0, 4095));
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->tick, 99u);
  EXPECT_EQ(parts->sequence, 4095u);
}

TEST(SnowflakeLayout, ZeroSequenceBitsIsRefused) {
  SnowflakeLayout l{.time_bits = 41, .worker_bits = 22, .sequence_bits = 0};
  EXPECT_TRUE(mentions(l.validate(kNow, 0), "sequence_bits", "between 1 and 62"));
}

TEST(SnowflakeLayout, RefusesATimeRangeTheClockHasAlreadyPassed) {
  // 20 bits of 1 ms ticks last 17.5 minutes.
  SnowflakeLayout l{
      .epoch_unix_ms = kNow - 3600000, .time_bits = 20, .worker_bits = 10, .sequence_bits = 33};
  auto problems = l.validate(kNow, 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "time_bits");
  EXPECT_EQ(problems[0].message,
            "the time range (20 bits of 1 ms from the epoch) ended at 2025-12-31T23:17:28.575Z");
  EXPECT_EQ(l.end_unix_ms(), kNow - 3600000 + (1 << 20) - 1);
}

TEST(SnowflakeLayout, TwitterTimeRangeLastsUntil2080) {
  EXPECT_EQ(format_utc_ms(SnowflakeLayout::twitter().end_unix_ms()), "2080-07-10T17:30:30.208Z");
  EXPECT_EQ(format_utc_ms(SnowflakeLayout::sonyflake().end_unix_ms()), "2188-11-16T03:28:58.879Z");
}

TEST(SnowflakeLayout, TicksFloorAndRoundTripThroughUnixMs) {
  const auto l = SnowflakeLayout::sonyflake();
  const std::int64_t e = l.epoch_unix_ms;
  EXPECT_EQ(l.tick_of(e), 0);
  EXPECT_EQ(l.tick_of(e + 9), 0);
  EXPECT_EQ(l.tick_of(e + 10), 1);
  EXPECT_EQ(l.tick_of(e - 1), -1);
  EXPECT_EQ(l.tick_of(e - 10), -1);
  EXPECT_EQ(l.tick_of(e - 11), -2);
  EXPECT_EQ(l.unix_ms_of(l.tick_of(e + 123)), e + 120);
}

TEST(SnowflakeLayout, DecodeRefusesTheSignBit) {
  auto r = SnowflakeLayout::twitter().decode(std::uint64_t{1} << 63);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), TicketErrc::kInvalidArgument);
}

TEST(SnowflakeLayout, FormatsUtcMilliseconds) {
  EXPECT_EQ(format_utc_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_ms(951782400999), "2000-02-29T00:00:00.999Z");
  EXPECT_EQ(format_utc_ms(-1), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace ticketd
