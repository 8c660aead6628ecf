#include "server/backup/restore.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/backup/kind_backup.h"
#include "server/backup/manifest.h"
#include "server/base/exit_code.h"
#include "server/core/gapless_sequence.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"
#include "server/core/ulid_sequence.h"
#include "storage/memory_counter_store.h"

namespace ticketd::backup {
namespace {

constexpr std::int64_t kTaken = 1796236800000;

struct Fixture {
  // T: increment 1, cache 1000, max_rate 1000/s (a window of (1000 + 100000) / 1000 = 101 s),
  // ceiling 5000, peak 6000/min (100/s). Odd: increment 2 offset 1, max_value 100001, the
  // default max_rate.
  Fixture() {
    std::vector<Mutation> m{
        {sequence_key("T"),
         encode_record({SequenceSpec{.name = "T", .cache = 1000, .max_rate = 1000}, 5000})},
        {sequence_key("Odd"),
         encode_record(
             {SequenceSpec{
                  .name = "Odd", .increment = 2, .offset = 1, .max_value = 100001, .cache = 10},
              999})},
        {"gapless/G/f", encode_frontier(GaplessFrontier{11, 1, 1})},
        {"gapless/G/c/00000000000000000012", "x"},
        {"gapless/G/r/00000000000000000013", "id=13-0000000000000001 expires_at_ms=1 holder=h"},
        {"gapless/G/v/00000000000000000011", "reason=void"},
    };
    EXPECT_TRUE(store.commit(m));
    auto described = describe_store(store, kTaken);
    EXPECT_TRUE(described);
    manifest = *described;
    manifest.taken_at_ms = kTaken;
    for (auto& s : manifest.sequences) {
      if (s.name == "T") s.peak_per_minute = 6000;
    }
  }
  DetailedResult<RestorePlan> plan(RestoreOptions o) {
    if (o.now_ms == 0) o.now_ms = kTaken + 60'000;  // a minute after the backup
    return plan_restore(manifest, store, o);
  }
  std::uint64_t ceiling_after(const RestorePlan& p, std::string_view name) {
    for (const auto& m : p.mutations) {
      if (m.key == sequence_key(name)) return decode_record(name, *m.value)->ceiling;
    }
    ADD_FAILURE() << "no write for " << name;
    return 0;
  }
  MemoryCounterStore store;
  BackupManifest manifest;
};

// Odd (max_value 100001) cannot take auto's bound at the default max_rate: it gets a number.
RestoreOptions with_gapless(std::uint64_t last) {
  RestoreOptions o;
  o.gapless_last_used["G"] = last;
  o.skip_by_name["Odd"] = 10;
  return o;
}

// Issue 27.4: auto is a bound, not an estimate: max_rate x (time since the backup + the rate
// window + the clock margin), whatever the recorded peak.
TEST(RestorePlan, AutoSkipsMaxRateTimesAgeWindowAndMargin) {
  Fixture f;
  RestoreOptions o = with_gapless(12);
  auto p = f.plan(o);
  ASSERT_TRUE(p) << p.error().message;
  // 1000/s x (60 s since the backup + 101 s window + 60 s margin) = 221000 values.
  EXPECT_EQ(f.ceiling_after(*p, "T"), 5000u + 221000u);
  // An idle sequence (peak 0) gets the same: the bound does not depend on the history.
  for (auto& s : f.manifest.sequences) {
    if (s.name == "T") s.peak_per_minute = 0;
  }
  auto idle = f.plan(o);
  ASSERT_TRUE(idle);
  EXPECT_EQ(f.ceiling_after(*idle, "T"), 5000u + 221000u);
}

TEST(RestorePlan, AutoThatDoesNotFitBelowMaxValueIsRefusedAskingForANumber) {
  Fixture f;
  RestoreOptions o = with_gapless(12);
  o.skip_by_name.erase("Odd");
  auto p = f.plan(o);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("ticket sequence 'Odd': --skip-ahead auto needs"),
            std::string::npos)
      << p.error().message;
  EXPECT_NE(p.error().message.find("--skip-ahead Odd=N"), std::string::npos);
}

TEST(RestorePlan, PeakKeepsTheEstimateTwicePeakRateTimesAgeOrTwiceTheCache) {
  Fixture f;
  RestoreOptions o = with_gapless(12);
  o.skip_by_name.erase("Odd");
  o.skip = SkipAhead{SkipAhead::Mode::kPeak, 0};
  auto p = f.plan(o);
  ASSERT_TRUE(p) << p.error().message;
  // 2 x 100/s x 60 s = 12000 values past the ceiling.
  EXPECT_EQ(f.ceiling_after(*p, "T"), 5000u + 12000u);
  // Odd has no rate: 2 x cache 10 = 20 values of step 2, onto the odd grid.
  EXPECT_EQ(f.ceiling_after(*p, "Odd"), 999u + 40u);
  // An instant after the backup the cache rule wins: 2 x 1000.
  o.now_ms = kTaken + 1;
  auto q = f.plan(o);
  ASSERT_TRUE(q);
  EXPECT_EQ(f.ceiling_after(*q, "T"), 7000u);
}

TEST(RestorePlan, AClockBeforeTheBackupNeverShrinksTheSkip) {
  Fixture f;
  RestoreOptions o = with_gapless(12);
  o.now_ms = kTaken - 3'600'000;
  auto p = f.plan(o);
  ASSERT_TRUE(p);
  // No time since the backup: the window and the margin, 1000/s x 161 s.
  EXPECT_EQ(f.ceiling_after(*p, "T"), 5000u + 161000u);
}

TEST(RestorePlan, AnExplicitSkipIsExactlyThatManyValuesOntoTheGrid) {
  Fixture f;
  RestoreOptions o = with_gapless(12);
  o.skip = SkipAhead{SkipAhead::Mode::kValues, 100};
  o.skip_by_name["Odd"] = 7;
  auto p = f.plan(o);
  ASSERT_TRUE(p);
  EXPECT_EQ(f.ceiling_after(*p, "T"), 5100u);
  EXPECT_EQ(f.ceiling_after(*p, "Odd"), 999u + 14u);
  EXPECT_EQ(f.ceiling_after(*p, "Odd") % 2, 1u);
  // Zero is allowed: the operator says nothing was issued since (a backup of a stopped server).
  o.skip = SkipAhead{SkipAhead::Mode::kValues, 0};
  auto z = f.plan(o);
  ASSERT_TRUE(z);
  EXPECT_EQ(f.ceiling_after(*z, "T"), 5000u);
}

TEST(RestorePlan, ASkipPastMaxValueExhaustsTheSequenceAndSaysSo) {
  Fixture f;
  RestoreOptions o = with_gapless(12);
  o.skip_by_name["Odd"] = 1'000'000;
  auto p = f.plan(o);
  ASSERT_TRUE(p);
  EXPECT_EQ(f.ceiling_after(*p, "Odd"), 100001u);
  bool said = false;
  for (const auto& s : p->steps) {
    if (s.sequence == "Odd") said = s.detail.find("exhausted") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(RestorePlan, AGaplessSequenceNeedsTheLastNumberUsed) {
  Fixture f;
  auto p = f.plan(RestoreOptions{});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ToolErrc::kRefused);
  EXPECT_NE(p.error().message.find("--gapless G=N"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("up to 12 committed"), std::string::npos) << p.error().message;
}

TEST(RestorePlan, AStatedNumberBelowWhatTheBackupCommittedIsRefused) {
  Fixture f;
  for (std::uint64_t last : {0u, 10u, 11u}) {
    auto p = f.plan(with_gapless(last));
    ASSERT_FALSE(p) << last;
    EXPECT_NE(p.error().message.find("issue them again"), std::string::npos) << p.error().message;
  }
}

TEST(RestorePlan, AGaplessSequenceContinuesAtExactlyTheNextNumber) {
  Fixture f;
  auto p = f.plan(with_gapless(40));
  ASSERT_TRUE(p) << p.error().message;
  // The copy after the plan: frontier 41, the c/ and r/ keys gone, the void kept.
  ASSERT_TRUE(f.store.commit(p->mutations));
  auto g = f.store.scan("gapless/G/");
  ASSERT_TRUE(g);
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].first, "gapless/G/f");
  EXPECT_EQ(decode_frontier((*g)[0].second), (GaplessFrontier{41, 1, 1}));
  EXPECT_EQ((*g)[1].first, "gapless/G/v/00000000000000000011");
  EXPECT_TRUE(verify_gapless_records(*g).empty());
}

TEST(RestorePlan, ANumberOffTheGridIsRefused) {
  MemoryCounterStore store;
  std::vector<Mutation> m{{"gapless/G/f", encode_frontier(GaplessFrontier{21, 1, 10})}};
  ASSERT_TRUE(store.commit(m));
  auto manifest = describe_store(store, kTaken);
  ASSERT_TRUE(manifest);
  manifest->taken_at_ms = kTaken;
  RestoreOptions o;
  o.now_ms = kTaken;
  o.gapless_last_used["G"] = 25;
  auto p = plan_restore(*manifest, store, o);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("not a number of the sequence"), std::string::npos);
  o.gapless_last_used["G"] = 31;
  auto q = plan_restore(*manifest, store, o);
  ASSERT_TRUE(q) << q.error().message;
  ASSERT_TRUE(store.commit(q->mutations));
  EXPECT_EQ(decode_frontier(**store.get("gapless/G/f")), (GaplessFrontier{41, 1, 10}));
}

TEST(RestorePlan, NamesTheBackupDoesNotHoldAreRefusedAllAtOnce) {
  Fixture f;
  RestoreOptions o = with_gapless(12);
  o.skip_by_name["Nope"] = 1;
  o.gapless_last_used["T"] = 3;  // a ticket sequence, not gapless
  auto p = f.plan(o);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("--skip-ahead Nope"), std::string::npos);
  EXPECT_NE(p.error().message.find("--gapless T"), std::string::npos);
}

TEST(RestorePlan, ATombstoneIsRaisedSoAReCreatedNameStartsAboveIt) {
  MemoryCounterStore store;
  std::vector<Mutation> m{{tombstone_key("Gone"), encode_tombstone(300)}};
  ASSERT_TRUE(store.commit(m));
  auto manifest = describe_store(store, kTaken);
  ASSERT_TRUE(manifest);
  manifest->taken_at_ms = kTaken;
  RestoreOptions o;
  o.now_ms = kTaken;
  auto p = plan_restore(*manifest, store, o);
  ASSERT_TRUE(p);
  ASSERT_TRUE(store.commit(p->mutations));
  // The default max_rate (a re-created name issues at most at it) x (61 s: margin and window).
  EXPECT_EQ(decode_tombstone(**store.get(tombstone_key("Gone"))), 300u + kDefaultMaxRate * 61u);
}

std::optional<RestoreFloor> floor_after(const RestorePlan& p) {
  for (const auto& m : p.mutations) {
    if (m.key == kRestoreFloorKey) return decode_restore_floor(*m.value);
  }
  return std::nullopt;
}

// A name the backup does not hold may have been created after it: the restore records the
// span the backup cannot see (age + clock margin), summed with any earlier restore's, or the
// stated values of an explicit skip; `--skip-ahead 0` (with --force) records nothing.
TEST(RestorePlan, TheRestoreFloorAddsTheSpanTheBackupCannotSee) {
  Fixture f;
  auto p = f.plan(with_gapless(12));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(floor_after(*p), (RestoreFloor{.span_ms = 60'000 + 60'000, .values = 0}));
  bool stepped = false;
  for (const auto& step : p->steps) stepped |= step.event == "restore_floor";
  EXPECT_TRUE(stepped);

  // A backup of a restored store carries its floor: the next restore adds to it.
  std::vector<Mutation> earlier{
      {std::string(kRestoreFloorKey), encode_restore_floor({.span_ms = 5000, .values = 7})}};
  ASSERT_TRUE(f.store.commit(earlier));
  auto again = f.plan(with_gapless(12));
  ASSERT_TRUE(again);
  EXPECT_EQ(floor_after(*again), (RestoreFloor{.span_ms = 5000 + 120'000, .values = 7}));

  RestoreOptions stated = with_gapless(12);
  stated.skip = SkipAhead{SkipAhead::Mode::kValues, 100};
  auto explicit_skip = f.plan(stated);
  ASSERT_TRUE(explicit_skip);
  EXPECT_EQ(floor_after(*explicit_skip), (RestoreFloor{.span_ms = 5000, .values = 107}));

  stated.skip = SkipAhead{SkipAhead::Mode::kValues, 0};
  auto none = f.plan(stated);
  ASSERT_TRUE(none);
  EXPECT_FALSE(floor_after(*none));
}

TEST(RestorePlan, AnUnreadableRestoreFloorIsRefused) {
  Fixture f;
  std::vector<Mutation> bad{{std::string(kRestoreFloorKey), "v=1 span_ms=x"}};
  ASSERT_TRUE(f.store.commit(bad));
  auto p = f.plan(with_gapless(12));
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("restore floor"), std::string::npos) << p.error().message;
}

}  // namespace
}  // namespace ticketd::backup

namespace ticketd::backup {
namespace {

// Issue 30.1: a ULID sequence's backup holds its mark; a restore raises it by the backup's age,
// so the restored server resumes above every ULID the old one may have issued until now.
TEST(RestorePlan, AUlidMarkIsRaisedByTheBackupsAge) {
  MemoryCounterStore store;
  std::vector<Mutation> m{
      {ulid_mark_key("U"), encode_hwm(SnowflakeHwmRecord{kTaken + 2000, kTaken})}};
  ASSERT_TRUE(store.commit(m));
  auto manifest = describe_store(store, kTaken);
  ASSERT_TRUE(manifest);
  ASSERT_EQ(manifest->sequences.size(), 1u);
  EXPECT_EQ(manifest->sequences[0].kind, SequenceKind::kUlid);
  EXPECT_EQ(manifest->sequences[0].mark_unix_ms, kTaken + 2000);
  manifest->taken_at_ms = kTaken;
  // Through the manifest's JSON and back, as a restore reads it.
  auto decoded = decode_manifest(encode_manifest(*manifest));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, *manifest);
  RestoreOptions o;
  o.now_ms = kTaken + 60'000;
  auto p = plan_restore(*decoded, store, o);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_TRUE(store.commit(p->mutations));
  EXPECT_EQ(decode_hwm(**store.get(ulid_mark_key("U"))),
            (SnowflakeHwmRecord{kTaken + 62'000, kTaken + 60'000}));
  const auto step = std::find_if(p->steps.begin(), p->steps.end(),
                                 [](const RestoreStep& st) { return st.sequence == "U"; });
  ASSERT_NE(step, p->steps.end());
  EXPECT_EQ(step->event, "ulid_mark_raised");
}

}  // namespace
}  // namespace ticketd::backup

namespace ticketd::backup {
namespace {

// `ticketd verify` asks every kind's backup part: a line per stored sequence, and a problem for
// every key that does not read (here a ULID mark that is not a mark).
TEST(KindVerify, EveryKindReportsItsSequencesAndItsUnreadableKeys) {
  MemoryCounterStore store;
  std::vector<Mutation> m{
      {sequence_key("T"), encode_record({SequenceSpec{.name = "T"}, 5000})},
      {"gapless/G/f", encode_frontier(GaplessFrontier{11, 1, 1})},
      {snowflake_hwm_key("S"), encode_hwm(SnowflakeHwmRecord{kTaken, kTaken})},
      {ulid_mark_key("U"), encode_hwm(SnowflakeHwmRecord{kTaken + 2000, kTaken})},
      {ulid_mark_key("Bad"), "v=1 nonsense"},
  };
  ASSERT_TRUE(store.commit(m));
  std::map<SequenceKind, VerifyReport> reports;
  for (const auto kind : kAllSequenceKinds) {
    ASSERT_TRUE(kind_backup(kind).verify(store, reports[kind]));
  }
  EXPECT_EQ(reports[SequenceKind::kTicket].sequences, 1u);
  EXPECT_NE(reports[SequenceKind::kTicket].lines.at(0).find("ceiling 5000"), std::string::npos);
  EXPECT_EQ(reports[SequenceKind::kGapless].sequences, 1u);
  EXPECT_TRUE(reports[SequenceKind::kGapless].problems.empty());
  EXPECT_EQ(reports[SequenceKind::kSnowflake].sequences, 1u);
  EXPECT_EQ(reports[SequenceKind::kUlid].sequences, 2u);
  ASSERT_EQ(reports[SequenceKind::kUlid].lines.size(), 1u);
  EXPECT_NE(reports[SequenceKind::kUlid].lines[0].find("mark 2026-12-02T18:40:02.000Z"),
            std::string::npos)
      << reports[SequenceKind::kUlid].lines[0];
  ASSERT_EQ(reports[SequenceKind::kUlid].problems.size(), 1u);
  EXPECT_NE(reports[SequenceKind::kUlid].problems[0].find("ulid 'Bad': unreadable mark"),
            std::string::npos);
  EXPECT_EQ(reports[SequenceKind::kUuidV7].sequences, 0u);
}

}  // namespace
}  // namespace ticketd::backup
