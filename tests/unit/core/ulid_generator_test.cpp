#include "server/core/ulid_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using testing::FakeClock;

constexpr std::int64_t kT0 = FakeClock::kDefaultStartUnixMs;

// Published examples. The spec README (github.com/ulid/spec) shows kSpecExample and the
// monotonic run from kMonotonicStart; the reference implementation's README
// (github.com/ulid/javascript) shows ulid(1469918176385) starting "01ARYZ6S41".
constexpr std::string_view kSpecExample = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
constexpr std::string_view kSpecExampleHex = "01563e3ab5d3d6764c61efb99302bd5b";
constexpr std::int64_t kSeedTimeMs = 1469918176385;
constexpr std::string_view kSeedTimePrefix = "01ARYZ6S41";
constexpr std::int64_t kMonotonicMs = 1508808576371;  // "01BX5ZZKBK"

using RandomPart = std::array<std::uint8_t, 10>;

RandomPart random_part(const Ulid& u) {
  RandomPart r{};
  std::copy(u.begin() + 6, u.end(), r.begin());
  return r;
}

// The test's own 80-bit increment, to check the generator's against.
Ulid plus_one(Ulid u) {
  for (int i = 15; i >= 6; --i) {
    if (++u[i] != 0) break;
  }
  return u;
}

UlidRandomSource constant_source(std::uint8_t byte) {
  return [byte](std::span<std::uint8_t> out) {
    std::fill(out.begin(), out.end(), byte);
    return ErrorCode{};
  };
}

Ulid must_parse(std::string_view text) {
  const std::optional<Ulid> u = parse_ulid(text);
  EXPECT_TRUE(u.has_value()) << text;
  return u.value_or(Ulid{});
}

Ulid issue(UlidGenerator& gen) {
  const UlidNext next = gen.try_next();
  EXPECT_TRUE(next.ok()) << next.error.code.message() << ": " << next.error.message;
  return next.id;
}

// A ULID at `unix_ms` whose random bytes are all `fill`.
Ulid ulid_at(std::int64_t unix_ms, std::uint8_t fill) {
  Ulid u{};
  for (int i = 0; i < 6; ++i) u[i] = static_cast<std::uint8_t>(unix_ms >> (8 * (5 - i)));
  std::fill(u.begin() + 6, u.end(), fill);
  return u;
}

TEST(UlidText, EncodesTheSeedTimeExampleAsItsTenCharacterPrefix) {
  FakeClock clock(kSeedTimeMs);
  UlidGenerator gen(clock, UlidOptions{.random = constant_source(0)});
  const Ulid u = issue(gen);
  EXPECT_EQ(ulid_to_string(u), std::string(kSeedTimePrefix) + "0000000000000000");
  EXPECT_EQ(ulid_unix_ms(u), kSeedTimeMs);
  EXPECT_EQ(ulid_unix_ms(must_parse("01ARYZ6S41TSV4RRFFQ69G5FAV")), kSeedTimeMs);
  // 1767225600000 (the FakeClock's default) = 0x019b76da_a800.
  FakeClock t0;
  UlidGenerator at_t0(t0, UlidOptions{.random = constant_source(0)});
  EXPECT_EQ(ulid_to_string(issue(at_t0)).substr(0, 10), "01KDVDNA00");
}

TEST(UlidText, TheSpecExampleRoundTripsThroughTextAndHex) {
  const Ulid u = must_parse(kSpecExample);
  EXPECT_EQ(ulid_to_string(u), kSpecExample);
  EXPECT_EQ(ulid_to_hex(u), kSpecExampleHex);
  EXPECT_EQ(parse_ulid_hex(kSpecExampleHex), u);
  EXPECT_EQ(parse_ulid_hex("01563E3AB5D3D6764C61EFB99302BD5B"), u);
  EXPECT_EQ(ulid_unix_ms(u), 1469922850259);
}

TEST(UlidText, EncodesTheExtremes) {
  EXPECT_EQ(ulid_to_string(Ulid{}), "00000000000000000000000000");
  Ulid max{};
  max.fill(0xFF);
  EXPECT_EQ(ulid_to_string(max), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  EXPECT_EQ(parse_ulid("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"), max);
  EXPECT_EQ(ulid_unix_ms(max), (std::int64_t{1} << 48) - 1);
  Ulid low_bit{};
  low_bit[15] = 1;
  EXPECT_EQ(ulid_to_string(low_bit), "00000000000000000000000001");
  Ulid high_bit{};
  high_bit[0] = 0x80;
  EXPECT_EQ(ulid_to_string(high_bit), "40000000000000000000000000");
  EXPECT_EQ(ulid_to_hex(high_bit), "80000000000000000000000000000000");
}

TEST(UlidText, ParsesLowercaseAndCrockfordAliases) {
  const Ulid u = must_parse(kSpecExample);
  EXPECT_EQ(parse_ulid("01arz3ndektsv4rrffq69g5fav"), u);
  EXPECT_EQ(parse_ulid("01aRz3NdEkTsV4rRfFq69G5fAv"), u);
  EXPECT_EQ(parse_ulid("OIARZ3NDEKTSV4RRFFQ69G5FAV"), u);
  EXPECT_EQ(parse_ulid("oLARZ3NDEKTSV4RRFFQ69G5FAV"), u);
  EXPECT_EQ(parse_ulid("0lARZ3NDEKTSV4RRFFQ69G5FAV"), u);
  EXPECT_EQ(parse_ulid("0iARZ3NDEKTSV4RRFFQ69G5FAV"), u);
}

TEST(UlidText, RefusesWrongLengthForeignCharactersAndOverflow) {
  const std::string good(kSpecExample);
  EXPECT_TRUE(parse_ulid(good).has_value());
  const std::string refused[] = {
      "",
      good.substr(0, 25),
      good + "0",
      "01ARZ3NDEKTSV4RRFFQ69G5FAU",  // U is not in the alphabet, nor an alias
      "01ARZ3NDEKTSV4RRFFQ69G5FAu",
      "81ARZ3NDEKTSV4RRFFQ69G5FAV",  // 8 sets a bit above the 128
      "ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
      "80000000000000000000000000",
      "01ARZ3NDEK-SV4RRFFQ69G5FAV",
      "01ARZ3NDEK SV4RRFFQ69G5FAV",
      "01ARZ3NDEKTSV4RRFFQ69G5FA\xC3",
      std::string("01ARZ3NDEKTSV4RRFFQ69G5FA\0", 26),
  };
  for (const std::string& text : refused) {
    EXPECT_FALSE(parse_ulid(text).has_value()) << text;
  }
  EXPECT_FALSE(parse_ulid_hex(kSpecExampleHex.substr(0, 31)).has_value());
  EXPECT_FALSE(parse_ulid_hex("01563e3ab5d3d6764c61efb99302bd5g").has_value());
}

TEST(UlidText, TextOrderIsByteOrder) {
  std::vector<Ulid> ids(2000);
  for (Ulid& u : ids) ASSERT_FALSE(getrandom_fill(u));
  ids.push_back(Ulid{});
  ids.push_back(must_parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"));
  for (std::size_t i = 1; i < ids.size(); ++i) {
    const std::string a = ulid_to_string(ids[i - 1]);
    const std::string b = ulid_to_string(ids[i]);
    ASSERT_EQ(ids[i - 1] < ids[i], a < b) << a << " " << b;
    ASSERT_EQ(parse_ulid(a), ids[i - 1]);
  }
}

TEST(UlidMonotonic, TenThousandIdsInOneMillisecondEachThePreviousPlusOne) {
  FakeClock clock;
  // 0xFE bytes: the second ID already carries, and the 10,000 run carries across two bytes.
  UlidGenerator gen(clock, UlidOptions{.random = constant_source(0xFE)});
  Ulid prev = issue(gen);
  RandomPart first{};
  first.fill(0xFE);
  EXPECT_EQ(random_part(prev), first);
  for (int i = 1; i < 10'000; ++i) {
    const Ulid cur = issue(gen);
    ASSERT_EQ(cur, plus_one(prev)) << "at " << i;
    ASSERT_LT(ulid_to_string(prev), ulid_to_string(cur));
    ASSERT_EQ(ulid_unix_ms(cur), kT0);
    prev = cur;
  }
  EXPECT_EQ(ulid_to_hex(prev), "019b76daa800fefefefefefefeff260d");
  EXPECT_EQ(gen.stats().issued, 10'000u);
  EXPECT_EQ(gen.stats().overflows, 0u);
  EXPECT_EQ(gen.last_issued(), prev);
}

TEST(UlidMonotonic, FollowsTheSpecsMonotonicExample) {
  FakeClock clock(kMonotonicMs);
  UlidGenerator gen(clock, UlidOptions{.last_issued = must_parse("01BX5ZZKBKACTAV9WEVGEMMVRY")});
  EXPECT_EQ(ulid_to_string(issue(gen)), "01BX5ZZKBKACTAV9WEVGEMMVRZ");
  EXPECT_EQ(ulid_to_string(issue(gen)), "01BX5ZZKBKACTAV9WEVGEMMVS0");
  EXPECT_EQ(ulid_to_string(issue(gen)), "01BX5ZZKBKACTAV9WEVGEMMVS1");
}

TEST(UlidMonotonic, ANewMillisecondTakesFreshRandomBits) {
  FakeClock clock;
  UlidGenerator gen(clock);
  const Ulid a = issue(gen);
  clock.advance(1);
  const Ulid b = issue(gen);
  EXPECT_EQ(ulid_unix_ms(b), kT0 + 1);
  EXPECT_LT(a, b);
  EXPECT_NE(random_part(b), random_part(plus_one(a)));
}

TEST(UlidOverflow, TheSpecsOverflowExampleWaitsForTheNextMillisecond) {
  FakeClock clock(kMonotonicMs);
  UlidGenerator gen(clock, UlidOptions{.last_issued = must_parse("01BX5ZZKBKZZZZZZZZZZZZZZZY")});
  EXPECT_EQ(ulid_to_string(issue(gen)), "01BX5ZZKBKZZZZZZZZZZZZZZZZ");
  const UlidNext next = gen.try_next();
  EXPECT_TRUE(next.retry_later());
  EXPECT_EQ(next.retry_at_unix_ms, kMonotonicMs + 1);
}

TEST(UlidOverflow, LogicalMovesToTheNextMillisecondWithFreshRandomBits) {
  FakeClock clock;
  UlidGenerator gen(clock,
                    UlidOptions{.policy = ClockPolicy::kLogical, .random = constant_source(0xFF)});
  const Ulid a = issue(gen);
  const Ulid b = issue(gen);  // a's random part is all ones: no + 1 in this millisecond
  const Ulid c = issue(gen);
  EXPECT_EQ(a, ulid_at(kT0, 0xFF));
  EXPECT_EQ(b, ulid_at(kT0 + 1, 0xFF));
  EXPECT_EQ(c, ulid_at(kT0 + 2, 0xFF));
  EXPECT_EQ(gen.stats().overflows, 2u);
  EXPECT_EQ(gen.stats().issued, 3u);
  clock.advance(5);  // the clock passes the borrowed milliseconds: IDs follow it again
  EXPECT_EQ(issue(gen), ulid_at(kT0 + 5, 0xFF));
}

TEST(UlidOverflow, WaitAndFailRetryAtTheNextMillisecond) {
  for (const ClockPolicy policy : {ClockPolicy::kWait, ClockPolicy::kFail}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    FakeClock clock;
    UlidGenerator gen(clock, UlidOptions{.policy = policy, .random = constant_source(0xFF)});
    EXPECT_EQ(issue(gen), ulid_at(kT0, 0xFF));
    const UlidNext next = gen.try_next();
    EXPECT_FALSE(next.ok());
    EXPECT_TRUE(next.retry_later());
    EXPECT_EQ(next.error.code, TicketErrc::kRetryLater);
    EXPECT_EQ(next.retry_at_unix_ms, kT0 + 1);
    EXPECT_EQ(gen.stats().overflows, 1u);
    clock.advance_to(next.retry_at_unix_ms);
    EXPECT_EQ(issue(gen), ulid_at(kT0 + 1, 0xFF));
    EXPECT_EQ(gen.stats().issued, 2u);
  }
}

TEST(UlidClock, FailRefusesAnyStepBackUntilTheClockReturns) {
  FakeClock clock;
  UlidGenerator gen(clock, UlidOptions{.name = "orders", .policy = ClockPolicy::kFail});
  const Ulid a = issue(gen);
  clock.advance(-3);
  const UlidNext next = gen.try_next();
  EXPECT_EQ(next.error.code, SnowflakeErrc::kClockMovedBackwards);
  EXPECT_FALSE(next.retry_later());
  EXPECT_NE(next.error.message.find("ulid 'orders'"), std::string::npos) << next.error.message;
  EXPECT_NE(next.error.message.find("3 ms behind"), std::string::npos) << next.error.message;
  EXPECT_EQ(gen.stats().clock_backward_events, 1u);
  clock.advance(3);
  EXPECT_EQ(issue(gen), plus_one(a));
  EXPECT_EQ(gen.stats().issued, 2u);
}

TEST(UlidClock, WaitRetriesWithinMaxBackwardAndRefusesBeyond) {
  FakeClock clock;
  UlidGenerator gen(clock, UlidOptions{.policy = ClockPolicy::kWait, .max_backward_ms = 5});
  const Ulid a = issue(gen);
  clock.advance(-5);
  const UlidNext wait = gen.try_next();
  EXPECT_TRUE(wait.retry_later());
  EXPECT_EQ(wait.retry_at_unix_ms, kT0);
  clock.advance(-1);
  const UlidNext refused = gen.try_next();
  EXPECT_EQ(refused.error.code, SnowflakeErrc::kClockMovedBackwards);
  EXPECT_FALSE(refused.retry_later());
  EXPECT_NE(refused.error.message.find("max_backward_ms 5"), std::string::npos);
  EXPECT_EQ(gen.stats().clock_backward_events, 2u);
  clock.advance_to(kT0);
  EXPECT_EQ(issue(gen), plus_one(a));
}

TEST(UlidClock, WaitBehindAFullMillisecondResumesAfterIt) {
  FakeClock clock;
  UlidGenerator gen(clock, UlidOptions{.policy = ClockPolicy::kWait,
                                       .max_backward_ms = 5,
                                       .random = constant_source(0xFF)});
  EXPECT_EQ(issue(gen), ulid_at(kT0, 0xFF));
  clock.advance(-2);
  const UlidNext wait = gen.try_next();
  EXPECT_TRUE(wait.retry_later());
  EXPECT_EQ(wait.retry_at_unix_ms, kT0 + 1);
  clock.advance(-4);  // a wait of 7 ms
  EXPECT_EQ(gen.try_next().error.code, SnowflakeErrc::kClockMovedBackwards);
}

TEST(UlidClock, LogicalKeepsCountingFromTheLastMillisecond) {
  FakeClock clock;
  UlidGenerator gen(clock, UlidOptions{.policy = ClockPolicy::kLogical});
  Ulid prev = issue(gen);
  clock.advance(-1000);
  for (int i = 0; i < 100; ++i) {
    const Ulid cur = issue(gen);
    ASSERT_EQ(cur, plus_one(prev));
    ASSERT_EQ(ulid_unix_ms(cur), kT0);
    prev = cur;
  }
  EXPECT_EQ(gen.stats().clock_backward_events, 1u);
  clock.set(kT0 + 1);
  const Ulid later = issue(gen);
  EXPECT_EQ(ulid_unix_ms(later), kT0 + 1);
  EXPECT_LT(prev, later);
}

TEST(UlidFloor, LastIssuedIsHonouredWithTheClockBehindIt) {
  const Ulid floor = ulid_at(kT0 + 100, 0x42);
  {
    FakeClock clock;
    UlidGenerator gen(clock, UlidOptions{.policy = ClockPolicy::kLogical, .last_issued = floor});
    EXPECT_EQ(gen.last_issued(), floor);
    EXPECT_EQ(issue(gen), plus_one(floor));
  }
  {
    FakeClock clock;
    UlidGenerator gen(clock, UlidOptions{.policy = ClockPolicy::kWait, .last_issued = floor});
    EXPECT_EQ(gen.try_next().error.code, SnowflakeErrc::kClockMovedBackwards);
    clock.set(kT0 + 97);
    const UlidNext wait = gen.try_next();
    EXPECT_TRUE(wait.retry_later());
    EXPECT_EQ(wait.retry_at_unix_ms, kT0 + 100);
    clock.advance_to(wait.retry_at_unix_ms);
    EXPECT_EQ(issue(gen), plus_one(floor));
  }
  {
    FakeClock clock(kT0 + 99);
    UlidGenerator gen(clock, UlidOptions{.policy = ClockPolicy::kFail, .last_issued = floor});
    EXPECT_EQ(gen.try_next().error.code, SnowflakeErrc::kClockMovedBackwards);
    clock.advance(2);
    const Ulid next = issue(gen);
    EXPECT_EQ(ulid_unix_ms(next), kT0 + 101);
    EXPECT_LT(floor, next);
  }
}

TEST(UlidFloor, ARestoredGeneratorIssuesAboveTheRecordedLastId) {
  FakeClock clock;
  Ulid recorded{};
  {
    UlidGenerator before(clock);
    EXPECT_EQ(before.last_issued(), Ulid{});
    for (int i = 0; i < 10; ++i) recorded = issue(before);
    EXPECT_EQ(before.last_issued(), recorded);
  }
  clock.advance(-60'000);  // restored on a machine whose clock is a minute behind
  UlidGenerator after(clock, UlidOptions{.policy = ClockPolicy::kLogical, .last_issued = recorded});
  EXPECT_EQ(issue(after), plus_one(recorded));
}

TEST(UlidFloor, RaiseFloorOnlyRaises) {
  FakeClock clock;
  UlidGenerator gen(clock, UlidOptions{.policy = ClockPolicy::kLogical});
  const Ulid a = issue(gen);
  gen.raise_floor(ulid_at(kT0 - 10, 0x00));  // below the last ID: no effect
  EXPECT_EQ(gen.last_issued(), a);
  EXPECT_EQ(issue(gen), plus_one(a));
  const Ulid floor = ulid_at(kT0 + 50, 0x10);
  gen.raise_floor(floor);
  EXPECT_EQ(gen.last_issued(), floor);
  EXPECT_EQ(issue(gen), plus_one(floor));
}

TEST(UlidRandom, DefaultGeneratorsDrawDifferentRandomParts) {
  FakeClock clock;
  UlidGenerator a(clock);
  UlidGenerator b(clock);
  const Ulid x = issue(a);
  const Ulid y = issue(b);
  EXPECT_EQ(ulid_unix_ms(x), ulid_unix_ms(y));
  EXPECT_NE(random_part(x), random_part(y));
}

TEST(UlidRandom, EveryMillisecondDrawsUnusedBytesAcrossPoolRefills) {
  FakeClock clock;
  UlidGenerator gen(clock);
  std::set<RandomPart> seen;
  constexpr int kMillis = 5'000;  // about twelve pools of 409 draws
  for (int i = 0; i < kMillis; ++i) {
    clock.advance(1);
    seen.insert(random_part(issue(gen)));
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kMillis));
}

TEST(UlidRandom, GetrandomFillsLargeBuffers) {
  std::vector<std::uint8_t> big(1 << 20);
  ASSERT_FALSE(getrandom_fill(big));
  EXPECT_GT(std::count(big.begin(), big.end(), std::uint8_t{0}), 0);
  EXPECT_LT(std::count(big.begin(), big.end(), std::uint8_t{0}), 1 << 13);
}

TEST(UlidRandom, AFailingSourceIssuesNothing) {
  FakeClock clock;
  ErrorCode answer = make_error_code(boost::system::errc::function_not_supported);
  UlidGenerator gen(clock, UlidOptions{.random = [&answer](std::span<std::uint8_t> out) {
                      std::fill(out.begin(), out.end(), std::uint8_t{7});
                      return answer;
                    }});
  const UlidNext refused = gen.try_next();
  EXPECT_FALSE(refused.ok());
  EXPECT_FALSE(refused.retry_later());
  EXPECT_EQ(refused.error.code, boost::system::errc::function_not_supported);
  EXPECT_NE(refused.error.message.find("no random bytes"), std::string::npos);

  answer = make_error_code(boost::system::errc::resource_unavailable_try_again);
  const UlidNext later = gen.try_next();
  EXPECT_TRUE(later.retry_later());
  EXPECT_EQ(later.retry_at_unix_ms, kT0 + 10);
  EXPECT_EQ(gen.stats().issued, 0u);
  EXPECT_EQ(gen.last_issued(), Ulid{});

  answer = {};
  EXPECT_EQ(issue(gen), ulid_at(kT0, 7));
}

TEST(UlidConcurrency, EightThreadsGetDistinctIdsIncreasingPerThread) {
  UlidGenerator gen(system_clock(), UlidOptions{.policy = ClockPolicy::kLogical});
  constexpr std::size_t kThreads = 8;
  constexpr std::size_t kPerThread = 20'000;
  std::vector<std::vector<Ulid>> got(kThreads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&gen, &out = got[t]] {
      out.reserve(kPerThread);
      for (std::size_t i = 0; i < kPerThread; ++i) {
        const UlidNext next = gen.try_next();
        if (!next.ok()) return;  // checked below by the count
        out.push_back(next.id);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<Ulid> all;
  for (const std::vector<Ulid>& ids : got) {
    ASSERT_EQ(ids.size(), kPerThread);
    EXPECT_TRUE(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end());
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(gen.stats().issued, kThreads * kPerThread);
}

}  // namespace
}  // namespace ticketd

// docs/clocks.md: slews, leap-second smears and leap-second steps, per clock policy.
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

// One ULID every 250 µs of real time for `total_us` on that clock: each comes at once, carries
// the clock's reading and sorts after the previous one.
void issue_on_a_slewed_clock(FakeClock& clock, UlidGenerator& gen, double rate,
                             std::int64_t from_us, std::int64_t for_us, std::int64_t total_us) {
  const std::int64_t start = clock.now_unix_ms();
  Ulid previous{};
  for (std::int64_t real_us = 0; real_us <= total_us; real_us += 250) {
    clock.set(slewed_ms(start, real_us, rate, from_us, for_us));
    const UlidNext next = gen.try_next();
    ASSERT_TRUE(next.ok()) << "at " << real_us << " us: " << next.error.message;
    ASSERT_LT(previous, next.id);
    ASSERT_EQ(ulid_unix_ms(next.id), clock.now_unix_ms());
    previous = next.id;
  }
}

TEST(UlidClock, ASlewedClockNeverTriggersThePolicy) {
  // Slower and faster than any slew chrony makes (maxslewrate defaults to one twelfth).
  for (const double rate : {0.9, 1.0 - 1.0 / 12, 1.1}) {
    for (const ClockPolicy policy :
         {ClockPolicy::kFail, ClockPolicy::kWait, ClockPolicy::kLogical}) {
      SCOPED_TRACE(std::string(policy_name(policy)) + " at x" + std::to_string(rate));
      FakeClock clock;
      UlidGenerator gen(clock, UlidOptions{.name = "events", .policy = policy});
      issue_on_a_slewed_clock(clock, gen, rate, 0, 5'000'000, 5'000'000);
      if (HasFatalFailure()) return;
      EXPECT_EQ(gen.stats().issued, 20'001u);
      EXPECT_EQ(gen.stats().clock_backward_events, 0u);
    }
  }
}

TEST(UlidClock, ALeapSecondSmearedBySlewingNeverTriggersThePolicy) {
  // chrony's `leapsecmode slew`: a second absorbed over 12 s at the default maxslewrate, the
  // steepest smear there is.
  for (const ClockPolicy policy : {ClockPolicy::kFail, ClockPolicy::kWait, ClockPolicy::kLogical}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    FakeClock clock(kLeap - 2'000);
    UlidGenerator gen(clock, UlidOptions{.name = "events", .policy = policy});
    issue_on_a_slewed_clock(clock, gen, 1.0 - 1.0 / 12, 2'000'000, 12'000'000, 16'000'000);
    if (HasFatalFailure()) return;
    EXPECT_EQ(clock.now_unix_ms(), kLeap - 2'000 + 15'000);
    EXPECT_EQ(gen.stats().clock_backward_events, 0u);
  }
}

TEST(UlidClock, ALeapSecondSteppedByTheKernelIsAOneSecondStepBack) {
  // `leapsecmode system`: the kernel steps the clock back a second at 00:00:00 UTC, so 23:59:59
  // runs twice. One call per millisecond of it.
  for (const ClockPolicy policy : {ClockPolicy::kFail, ClockPolicy::kWait, ClockPolicy::kLogical}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    FakeClock clock(kLeap - 1);
    UlidGenerator gen(clock, UlidOptions{.name = "events", .policy = policy, .max_backward_ms = 5});
    std::vector<Ulid> ids{issue(gen)};
    std::int64_t first_ok_at = -1;
    int refused = 0;
    int waited = 0;
    for (std::int64_t now = kLeap - 1'000; now <= kLeap + 10; ++now) {
      clock.set(now);
      const UlidNext next = gen.try_next();
      if (next.ok()) {
        ids.push_back(next.id);
        if (first_ok_at < 0) first_ok_at = now;
      } else if (next.retry_later()) {
        EXPECT_EQ(next.retry_at_unix_ms, kLeap - 1);
        ++waited;
      } else {
        EXPECT_EQ(next.error.code, SnowflakeErrc::kClockMovedBackwards);
        ++refused;
      }
    }
    EXPECT_TRUE(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end());
    EXPECT_EQ(gen.stats().clock_backward_events, 1u);
    if (policy == ClockPolicy::kLogical) {
      // At once: the repeated second is spent counting in the last millisecond used.
      EXPECT_EQ(first_ok_at, kLeap - 1'000);
      EXPECT_EQ(ulid_unix_ms(ids[999]), kLeap - 1);
      EXPECT_EQ(ids[999], plus_one(ids[998]));
    } else {
      // Refused until the clock is back at the last ID: wait stops refusing 5 ms
      // (max_backward_ms) early and holds callers for those.
      EXPECT_EQ(first_ok_at, kLeap - 1);
      EXPECT_EQ(refused, policy == ClockPolicy::kWait ? 994 : 999);
      EXPECT_EQ(waited, policy == ClockPolicy::kWait ? 5 : 0);
    }
  }
}

}  // namespace
}  // namespace ticketd
