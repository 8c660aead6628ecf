#include "server/plan/capacity_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "server/core/sequence_spec.h"

namespace ticketd::plan {
namespace {

// u128 has no operator<< for gtest's messages: compare its digits.
std::string s(u128 v) { return digits(v); }

ReferenceFigure box_figure(std::uint64_t ids_per_second) {
  return ReferenceFigure{.measure = Measure::kIdsPerSecond,
                         .kind = SequenceKind::kTicket,
                         .front_end = FrontEnd::kMysql,
                         .engine = Engine::kRocksDb,
                         .value = ids_per_second,
                         .bound = Bound::kBox};
}

TEST(CapacityPlan, CeilDivRoundsUpAndZeroStaysZero) {
  EXPECT_EQ(s(ceil_div(7, 2)), "4");
  EXPECT_EQ(s(ceil_div(6, 2)), "3");
  EXPECT_EQ(s(ceil_div(0, 5)), "0");
  EXPECT_EQ(s(ceil_div(u128{1} << 100, 3)), "422550200076076467165567735126");
}

TEST(CapacityPlan, DigitsPrintEvery128BitValue) {
  EXPECT_EQ(digits(0), "0");
  EXPECT_EQ(digits(9), "9");
  EXPECT_EQ(digits(u128{1} << 64), "18446744073709551616");  // one past a 64-bit space
  EXPECT_EQ(digits(~u128{0}), "340282366920938463463374607431768211455");
}

TEST(CapacityPlan, DecimalsAreRoundedDown) {
  EXPECT_EQ(decimal(2, 3, 2), "0.66");
  EXPECT_EQ(decimal(10, 4, 1), "2.5");
  EXPECT_EQ(decimal(5, 1, 0), "5");
  EXPECT_EQ(decimal(999, 1000, 2), "0.99");
  EXPECT_EQ(decimal(750, 1000, 2), "0.75");
  EXPECT_EQ(decimal(u128{1} << 41, kMsPerYear, 2), "69.68");  // docs/snowflake.md: 69 years
}

TEST(CapacityPlan, AYearIsJulian) {
  EXPECT_EQ(kSecondsPerYear, 36525u * 864);  // 365.25 days of 86,400 s
  EXPECT_EQ(kMsPerYear, 31557600000u);
}

TEST(CapacityPlan, PerCoreIsTheBoxOverItsTwoCoresAndServersScaleLinearly) {
  const ReferenceFigure f = box_figure(62901);
  EXPECT_EQ(kReferenceCores, 2u);
  EXPECT_EQ(ids_per_core(f), 31450u);  // rounded down
  EXPECT_EQ(s(cpu_ids_per_server(f, 2)), "62901");
  EXPECT_EQ(s(cpu_ids_per_server(f, 8)), "251604");
  EXPECT_EQ(s(cpu_ids_per_server(f, 1)), "31450");
}

TEST(CapacityPlan, CommitsPerSecondAreOneSecondOverTheMeanWrite) {
  EXPECT_EQ(commits_per_second(750), 1333u);  // RocksDB, 0.75 ms
  EXPECT_EQ(commits_per_second(3190), 313u);  // etcd, 3.19 ms
  EXPECT_EQ(commits_per_second(1000), 1000u);
  EXPECT_EQ(commits_per_second(0), 1000000u);  // never a division by zero
  EXPECT_EQ(commits_per_second(5000000), 1u);  // a 5 s write still completes once
}

TEST(CapacityPlan, TheWriteBoundIsCacheTimesCommits) {
  EXPECT_EQ(s(write_bound(1000, 1333)), "1333000");
  EXPECT_EQ(s(write_bound(1, 1333)), "1333");
  EXPECT_EQ(s(write_bound(kMaxCache, 1000000)), "1000000000000000");
}

TEST(CapacityPlan, DurableWritesRaiseTheCeilingACacheAtATime) {
  EXPECT_EQ(s(durable_writes(33334, 1000)), "34");
  EXPECT_EQ(s(durable_writes(1000, 1000)), "1");
  EXPECT_EQ(s(durable_writes(1, 1000)), "1");
  EXPECT_EQ(s(durable_writes(0, 1000)), "0");
  EXPECT_EQ(s(durable_writes(1782, 1)), "1782");  // cache 1: one synced write per value
}

TEST(CapacityPlan, FsyncsAreOnePerWritePlusTheMarkAndTheExternalMark) {
  EXPECT_EQ(s(fsyncs(34, false)), "35");
  EXPECT_EQ(s(fsyncs(34, true)), "69");
  EXPECT_EQ(s(fsyncs(0, true)), "0");  // no write, no mark to sync
}

TEST(CapacityPlan, ServersCarryTheTargetWithOneSpare) {
  EXPECT_EQ(s(servers_for_load(100000, 62901)), "2");
  EXPECT_EQ(s(servers_for_load(62901, 62901)), "1");
  EXPECT_EQ(s(servers_for_load(62902, 62901)), "2");
  EXPECT_EQ(s(servers_for_load(10, 0)), "10");  // a zero capacity never divides by zero
  EXPECT_EQ(s(servers_with_spare(1)), "2");     // the odd/even pair
  EXPECT_EQ(s(servers_with_spare(2)), "3");
  EXPECT_EQ(s(share(100000, 3)), "33334");
  EXPECT_EQ(s(share(100000, 2)), "50000");
}

TEST(CapacityPlan, ValueSpacesReach2To64) {
  EXPECT_EQ(s(value_space(1, kDefaultMaxValue)), "9223372036854775807");
  EXPECT_EQ(s(value_space(1, 4294967295)), "4294967295");
  EXPECT_EQ(s(value_space(0, std::numeric_limits<std::uint64_t>::max())), "18446744073709551616");
  EXPECT_EQ(s(value_space(5, 4)), "0");
}

TEST(CapacityPlan, ValuesNeededDoNotWrapAt64Bits) {
  EXPECT_EQ(s(values_needed(100000, 50)), "157788000000000");
  EXPECT_EQ(s(values_needed(1000, 1)), "31557600000");
  EXPECT_EQ(s(values_needed(1000000000000, 1000000)), "31557600000000000000000000");
}

TEST(CapacityPlan, SnowflakeBudgetsOfTheNamedLayouts) {
  const auto twitter = snowflake_budget(SnowflakeLayout::twitter());
  EXPECT_EQ(s(twitter.ids_per_tick), "4096");
  EXPECT_EQ(s(twitter.ids_per_second), "4096000");
  EXPECT_EQ(s(twitter.workers), "1024");
  EXPECT_EQ(s(twitter.range_ms), "2199023255552");  // 2^41 ms
  EXPECT_EQ(decimal(twitter.range_ms, kMsPerYear, 2), "69.68");

  const auto instagram = snowflake_budget(SnowflakeLayout::instagram());
  EXPECT_EQ(s(instagram.ids_per_tick), "1024");
  EXPECT_EQ(s(instagram.workers), "8192");
  EXPECT_EQ(decimal(instagram.range_ms, kMsPerYear, 2), "34.84");

  const auto discord = snowflake_budget(SnowflakeLayout::discord());
  EXPECT_EQ(s(discord.workers), "512");
  EXPECT_EQ(decimal(discord.range_ms, kMsPerYear, 2), "139.36");

  const auto sonyflake = snowflake_budget(SnowflakeLayout::sonyflake());
  EXPECT_EQ(s(sonyflake.ids_per_tick), "256");
  EXPECT_EQ(s(sonyflake.ids_per_second), "25600");  // 256 per 10 ms tick
  EXPECT_EQ(s(sonyflake.workers), "65536");
  EXPECT_EQ(s(sonyflake.range_ms), "5497558138880");  // 2^39 ticks of 10 ms
  EXPECT_EQ(decimal(sonyflake.range_ms, kMsPerYear, 2), "174.20");
}

TEST(CapacityPlan, SnowflakeBudgetsOfOddLayouts) {
  SnowflakeLayout single{.time_bits = 51, .worker_bits = 0, .sequence_bits = 12};
  EXPECT_EQ(s(snowflake_budget(single).workers), "1");  // only worker 0 exists
  SnowflakeLayout thirds{
      .time_bits = 41, .worker_bits = 10, .sequence_bits = 12, .time_unit_ms = 3};
  EXPECT_EQ(s(snowflake_budget(thirds).ids_per_second), "1365333");  // 4096 per 3 ms, down
  SnowflakeLayout wide{.time_bits = 1, .worker_bits = 0, .sequence_bits = 62};
  EXPECT_EQ(s(snowflake_budget(wide).ids_per_second), "4611686018427387904000");  // 2^62 * 1000
}

TEST(CapacityPlan, ASnowflakeMarkIsWrittenEveryHalfMargin) {
  EXPECT_EQ(snowflake_mark_writes(2000), 1u);  // the generator's default margin
  EXPECT_EQ(snowflake_mark_writes(500), 4u);
  EXPECT_EQ(snowflake_mark_writes(3000), 1u);
  EXPECT_EQ(snowflake_mark_writes(1), 2000u);
}

TEST(CapacityPlan, TimeOrderedKindsCarry48BitsOfMilliseconds) {
  EXPECT_EQ(kUuidV7IdsPerMs, 2048u);
  EXPECT_EQ(decimal(u128{kLastUnixMs48} + 1, kMsPerYear, 2), "8919.40");
}

}  // namespace
}  // namespace ticketd::plan
