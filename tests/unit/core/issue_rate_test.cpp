#include "server/core/issue_rate.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <utility>

#include "server/core/sequence_record.h"
#include "storage/memory_counter_store.h"
#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using testing::FakeClock;
constexpr std::int64_t kDay = IssueRateHistory::kDayMs;

TEST(IssueRateHistory, KeepsTheBusiestMinuteOfEachDay) {
  IssueRateHistory h;
  EXPECT_FALSE(h.note(100, 0));  // an idle minute is no peak
  EXPECT_TRUE(h.note(100, 50));
  EXPECT_FALSE(h.note(100, 40));
  EXPECT_TRUE(h.note(100, 70));
  EXPECT_TRUE(h.note(101, 10));
  EXPECT_EQ(h.peaks.at(100), 70u);
  EXPECT_EQ(h.peak_per_minute(101), 70u);
}

TEST(IssueRateHistory, APeakCountsForThirtyDaysAndThenDropsOff) {
  IssueRateHistory h;
  ASSERT_TRUE(h.note(100, 900));
  ASSERT_TRUE(h.note(120, 10));
  EXPECT_EQ(h.peak_per_minute(129), 900u);  // day 100 is the 30th day ending with 129
  EXPECT_EQ(h.peak_per_minute(130), 10u);
  h.prune(130);
  EXPECT_EQ(h.peaks.size(), 1u);
  EXPECT_EQ(h.peaks.count(120), 1u);
}

TEST(IssueRateHistory, RecordsRoundTripAndBadOnesAreRefused) {
  IssueRateHistory h;
  ASSERT_TRUE(h.note(20424, 60000));
  ASSERT_TRUE(h.note(20425, 7));
  EXPECT_EQ(encode_rate_history(h), "v=1 peaks=20424:60000,20425:7");
  EXPECT_EQ(decode_rate_history(encode_rate_history(h)), h);
  EXPECT_EQ(encode_rate_history(IssueRateHistory{}), "v=1 peaks=-");
  EXPECT_EQ(decode_rate_history("v=1 peaks=-"), IssueRateHistory{});
  for (const char* bad : {"", "v=2 peaks=1:2", "v=1", "v=1 peaks=1", "v=1 peaks=1:x",
                          "v=1 peaks=1:2,1:3", "v=1 peaks=1:2,", "peaks=1:2"}) {
    EXPECT_FALSE(decode_rate_history(bad)) << bad;
  }
  EXPECT_EQ(rate_key("Tickets64"), "rate/Tickets64");
}

struct Rates {
  Rates() {
    EXPECT_TRUE(service.load());
    std::promise<DetailedResult<void>> p;
    service.create(SequenceSpec{.name = "S", .cache = 100000}, CreateOptions{},
                   [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
    EXPECT_TRUE(p.get_future().get());
    EXPECT_TRUE(tracker.load(store));
  }
  ~Rates() { committer.stop(); }
  void take(std::uint64_t n) { ASSERT_TRUE(next_and_wait(service, "S", n)); }
  DetailedResult<void> sample() {
    std::promise<DetailedResult<void>> p;
    tracker.sample([&p](const DetailedResult<void>& r) { p.set_value(r); });
    return p.get_future().get();
  }
  std::optional<IssueRateHistory> stored() {
    auto v = store.get(rate_key("S"));
    if (!v || !*v) return std::nullopt;
    return decode_rate_history(**v);
  }

  MemoryCounterStore store;
  FakeClock clock{1796169600000};  // 2026-12-02T00:00:00Z
  GroupCommitter committer{store};
  TicketService service{store, committer};
  IssueRateTracker tracker{service, committer, clock};
};

TEST(IssueRateTracker, MeasuresValuesPerMinuteAndKeepsThePeakDurable) {
  Rates r;
  r.take(600);
  r.clock.advance(60000);
  ASSERT_TRUE(r.sample());
  const std::int64_t today = r.clock.now_unix_ms() / kDay;
  auto stored = r.stored();
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->peak_per_minute(today), 600u);
  // A quieter minute leaves the peak, and writes nothing new.
  r.take(60);
  r.clock.advance(60000);
  ASSERT_TRUE(r.sample());
  EXPECT_EQ(r.stored()->peak_per_minute(today), 600u);
  // A short window is scaled to a minute: 200 values in 10 s are 1200 a minute.
  r.take(200);
  r.clock.advance(10000);
  ASSERT_TRUE(r.sample());
  EXPECT_EQ(r.stored()->peak_per_minute(today), 1200u);
  EXPECT_EQ(r.tracker.histories().at("S").peak_per_minute(today), 1200u);
}

TEST(IssueRateTracker, AWindowUnderASecondCountsAsASecond) {
  Rates r;
  r.take(10);
  r.clock.advance(1);
  ASSERT_TRUE(r.sample());
  // 10 values in (at least) one second: 600 a minute, not 600,000.
  EXPECT_EQ(r.stored()->peak_per_minute(r.clock.now_unix_ms() / kDay), 600u);
}

TEST(IssueRateTracker, ForwardMovesAreNotIssuedValues) {
  Rates r;
  std::promise<DetailedResult<Block>> p;
  r.service.advance_to("S", 5'000'000'000, [&p](DetailedResult<Block> b) { p.set_value(b); });
  ASSERT_TRUE(p.get_future().get());
  r.take(3);
  r.clock.advance(60000);
  ASSERT_TRUE(r.sample());
  EXPECT_EQ(r.stored()->peak_per_minute(r.clock.now_unix_ms() / kDay), 3u);
}

TEST(IssueRateTracker, AStoredHistoryIsLoadedAgainAndOldDaysArePruned) {
  MemoryCounterStore store;
  FakeClock clock{1796236800000};
  const std::int64_t today = clock.now_unix_ms() / kDay;
  IssueRateHistory old;
  ASSERT_TRUE(old.note(today - 40, 99999));
  ASSERT_TRUE(old.note(today - 2, 500));
  std::vector<Mutation> seed{{rate_key("S"), encode_rate_history(old)},
                             {rate_key("Broken"), "not a record"}};
  ASSERT_TRUE(store.commit(seed));
  GroupCommitter committer{store};
  TicketService service{store, committer};
  ASSERT_TRUE(service.load());
  IssueRateTracker tracker{service, committer, clock};
  ASSERT_TRUE(tracker.load(store));  // the unreadable one starts anew, with a warning
  EXPECT_EQ(tracker.histories().at("S").peak_per_minute(today), 500u);
  std::promise<DetailedResult<void>> p;
  tracker.sample([&p](const DetailedResult<void>& r) { p.set_value(r); });
  ASSERT_TRUE(p.get_future().get());
  auto v = store.get(rate_key("S"));
  ASSERT_TRUE(v && *v);
  auto pruned = decode_rate_history(**v);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->peaks.size(), 1u);
  EXPECT_EQ(pruned->peaks.count(today - 2), 1u);
  committer.stop();
}

}  // namespace
}  // namespace ticketd
