#include "server/core/uuidv7_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <thread>
#include <vector>

#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using testing::FakeClock;

constexpr std::int64_t kT0 = FakeClock::kDefaultStartUnixMs;

std::uint32_t counter_of(const Uuid& u) { return (u[6] & 0x0Fu) << 8 | u[7]; }

TEST(UuidV7Generator, AMillionIdsStrictlyIncreaseAsBytesAndAsStrings) {
  FakeClock clock;
  UuidV7Generator gen(clock);
  Uuid prev = gen.next();
  std::string prev_text = to_string(prev);
  for (int i = 1; i < 1'000'000; ++i) {
    if (i % 1000 == 0) clock.advance(1);
    if (i == 500'000) clock.advance(-50);  // a step back in the middle
    const Uuid cur = gen.next();
    ASSERT_LT(prev, cur) << "at " << i << ": " << to_string(prev) << " then " << to_string(cur);
    std::string text = to_string(cur);
    ASSERT_LT(prev_text, text) << "at " << i;
    prev = cur;
    prev_text = std::move(text);
  }
  EXPECT_EQ(gen.stats().issued, 1'000'000u);
  EXPECT_EQ(gen.stats().clock_backward_events, 1u);
}

TEST(UuidV7Generator, SetsVersion7AndVariant10) {
  FakeClock clock;
  UuidV7Generator gen(clock);
  for (int i = 0; i < 10'000; ++i) {
    const Uuid u = gen.next();
    ASSERT_EQ(u[6] >> 4, 7) << to_string(u);
    ASSERT_EQ(u[8] >> 6, 0b10) << to_string(u);
    const std::string s = to_string(u);
    ASSERT_EQ(s[14], '7');
    ASSERT_TRUE(s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b') << s;
  }
}

TEST(UuidV7Generator, TimestampFieldIsTheClocksMillisecond) {
  FakeClock clock(kT0 + 123);
  UuidV7Generator gen(clock);
  const Uuid u = gen.next();
  EXPECT_EQ(uuidv7_unix_ms(u), kT0 + 123);
  // 1767225600123 = 0x019b76daa87b: the first 48 bits, big-endian.
  EXPECT_EQ(to_string(u).substr(0, 13), "019b76da-a87b");
  clock.advance(1);
  EXPECT_EQ(uuidv7_unix_ms(gen.next()), kT0 + 124);
}

TEST(UuidV7Generator, AClockStepBackKeepsTheLastMillisecondAndCountsOn) {
  FakeClock clock;
  UuidV7Generator gen(clock);
  const Uuid a = gen.next();
  clock.advance(-1000);
  const Uuid b = gen.next();
  const Uuid c = gen.next();
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(uuidv7_unix_ms(b), kT0);
  EXPECT_EQ(counter_of(b), counter_of(a) + 1);
  EXPECT_EQ(gen.stats().clock_backward_events, 1u);
  clock.set(kT0 + 1);  // the clock passes the last ms: timestamps follow it again
  EXPECT_EQ(uuidv7_unix_ms(gen.next()), kT0 + 1);
}

TEST(UuidV7Generator, CounterOverflowMovesTheTimestampOneMillisecondAhead) {
  FakeClock clock;
  UuidV7Generator gen(clock);
  std::vector<Uuid> ids;
  for (int i = 0; i < 4097; ++i) ids.push_back(gen.next());
  EXPECT_TRUE(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end());
  // The counter starts below the guard bit, so each ms holds 2,049 to 4,096 IDs.
  EXPECT_LT(counter_of(ids[0]), 2048u);
  const auto in_first_ms =
      std::count_if(ids.begin(), ids.end(), [](const Uuid& u) { return uuidv7_unix_ms(u) == kT0; });
  EXPECT_GE(in_first_ms, 2049);
  EXPECT_LE(in_first_ms, 4096);
  EXPECT_EQ(uuidv7_unix_ms(ids[in_first_ms]), kT0 + 1);
  EXPECT_LT(counter_of(ids[in_first_ms]), 2048u);
  EXPECT_EQ(uuidv7_unix_ms(ids.back()), kT0 + 1);
  EXPECT_EQ(gen.stats().counter_overflows, 1u);
}

TEST(UuidV7Generator, FormatsTheCanonicalLowercaseString) {
  const Uuid u{0x01, 0x9b, 0x77, 0x24, 0x5e, 0x7b, 0x7a, 0xbc,
               0x8d, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab};
  EXPECT_EQ(to_string(u), "019b7724-5e7b-7abc-8def-0123456789ab");
  EXPECT_EQ(to_string(Uuid{}), "00000000-0000-0000-0000-000000000000");
}

TEST(UuidV7Generator, GeneratorsDrawDifferentRandomBits) {
  FakeClock clock;
  UuidV7Generator a(clock);
  UuidV7Generator b(clock);
  const Uuid x = a.next();
  const Uuid y = b.next();
  EXPECT_FALSE(std::equal(x.begin() + 8, x.end(), y.begin() + 8));
  UuidV7Generator c(clock, 42);
  UuidV7Generator d(clock, 42);
  EXPECT_EQ(c.next(), d.next());  // a fixed seed reproduces
}

TEST(UuidV7Generator, ConcurrentCallersGetDistinctIdsIncreasingPerThread) {
  FakeClock clock;
  UuidV7Generator gen(clock);
  constexpr std::size_t kPerThread = 100'000;
  std::vector<std::vector<Uuid>> got(2);
  auto worker = [&](std::vector<Uuid>& out) {
    for (std::size_t i = 0; i < kPerThread; ++i) {
      if (i % 500 == 0) clock.advance(1);
      out.push_back(gen.next());
    }
  };
  std::thread t0(worker, std::ref(got[0]));
  std::thread t1(worker, std::ref(got[1]));
  t0.join();
  t1.join();
  std::vector<Uuid> all;
  for (const auto& v : got) {
    EXPECT_TRUE(std::adjacent_find(v.begin(), v.end(), std::greater_equal<>()) == v.end());
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

}  // namespace
}  // namespace ticketd

// docs/clocks.md: slews, leap-second smears and leap-second steps. A UUIDv7 generator has no
// clock policy: whatever the clock does, callers get a UUID at once.
namespace ticketd {
namespace {

// 2017-01-01T00:00:00Z, right after the last leap second so far (2016-12-31T23:59:60Z).
constexpr std::int64_t kLeap = 1483228800000;

// A wall clock that NTP corrects by slewing: `real_us` microseconds after `start_ms` of real
// time it reads start_ms plus the real time, except that from `from_us` on, for `for_us`, it
// runs at `rate` times the real rate. It never reads less than before.
std::int64_t slewed_ms(std::int64_t start_ms, std::int64_t real_us, double rate,
                       std::int64_t from_us, std::int64_t for_us) {
  const auto before = static_cast<double>(std::min(real_us, from_us));
  const auto during = static_cast<double>(std::clamp<std::int64_t>(real_us - from_us, 0, for_us));
  const auto after = static_cast<double>(std::max<std::int64_t>(real_us - from_us - for_us, 0));
  return start_ms + static_cast<std::int64_t>((before + during * rate + after) / 1000);
}

// One UUID every 250 µs of real time for `total_us` on that clock: each carries the clock's
// reading and sorts after the previous one.
void issue_on_a_slewed_clock(FakeClock& clock, UuidV7Generator& gen, double rate,
                             std::int64_t from_us, std::int64_t for_us, std::int64_t total_us) {
  const std::int64_t start = clock.now_unix_ms();
  Uuid previous{};
  for (std::int64_t real_us = 0; real_us <= total_us; real_us += 250) {
    clock.set(slewed_ms(start, real_us, rate, from_us, for_us));
    const Uuid u = gen.next();
    ASSERT_LT(previous, u) << "at " << real_us << " us";
    ASSERT_EQ(uuidv7_unix_ms(u), clock.now_unix_ms());
    previous = u;
  }
}

TEST(UuidV7Generator, ASlewedClockOnlyEverMovesTheTimestampForward) {
  // Slower and faster than any slew chrony makes (maxslewrate defaults to one twelfth).
  for (const double rate : {0.9, 1.0 - 1.0 / 12, 1.1}) {
    SCOPED_TRACE("x" + std::to_string(rate));
    FakeClock clock;
    UuidV7Generator gen(clock);
    issue_on_a_slewed_clock(clock, gen, rate, 0, 5'000'000, 5'000'000);
    if (HasFatalFailure()) return;
    EXPECT_EQ(gen.stats().issued, 20'001u);
    EXPECT_EQ(gen.stats().clock_backward_events, 0u);
    EXPECT_EQ(gen.stats().counter_overflows, 0u);
  }
}

TEST(UuidV7Generator, ALeapSecondSmearedBySlewingIsNeverAStepBack) {
  // chrony's `leapsecmode slew`: a second absorbed over 12 s at the default maxslewrate, the
  // steepest smear there is.
  FakeClock clock(kLeap - 2'000);
  UuidV7Generator gen(clock);
  issue_on_a_slewed_clock(clock, gen, 1.0 - 1.0 / 12, 2'000'000, 12'000'000, 16'000'000);
  if (HasFatalFailure()) return;
  EXPECT_EQ(clock.now_unix_ms(), kLeap - 2'000 + 15'000);
  EXPECT_EQ(gen.stats().clock_backward_events, 0u);
}

TEST(UuidV7Generator, ALeapSecondSteppedByTheKernelHoldsTheLastMillisecond) {
  // `leapsecmode system`: the kernel steps the clock back a second at 00:00:00 UTC. One UUID
  // per millisecond of the repeated second: all at once, in the last millisecond used.
  FakeClock clock(kLeap - 1);
  UuidV7Generator gen(clock);
  std::vector<Uuid> ids{gen.next()};
  for (std::int64_t now = kLeap - 1'000; now < kLeap - 1; ++now) {
    clock.set(now);
    ids.push_back(gen.next());
    ASSERT_EQ(uuidv7_unix_ms(ids.back()), kLeap - 1);
    ASSERT_EQ(counter_of(ids.back()), counter_of(ids[ids.size() - 2]) + 1);
  }
  clock.set(kLeap);
  ids.push_back(gen.next());
  EXPECT_EQ(uuidv7_unix_ms(ids.back()), kLeap);
  EXPECT_TRUE(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end());
  EXPECT_EQ(gen.stats().clock_backward_events, 1u);
  EXPECT_EQ(gen.stats().counter_overflows, 0u);
}

}  // namespace
}  // namespace ticketd
