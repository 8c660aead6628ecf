#include "server/plan/plan_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace ticketd::plan {
namespace {

// The value of the line `key`, or "<missing>".
std::string value_of(const PlanReport& r, const std::string& key) {
  const auto line =
      std::find_if(r.lines.begin(), r.lines.end(), [&](const PlanLine& l) { return l.key == key; });
  return line == r.lines.end() ? "<missing>" : line->value;
}

bool has(const PlanReport& r, const std::string& key) { return value_of(r, key) != "<missing>"; }

PlanInput ticket(std::uint64_t ids_per_second) {
  PlanInput in;
  in.ids_per_second = ids_per_second;
  return in;
}

PlanInput of_kind(SequenceKind kind) {
  PlanInput in;
  in.kind = kind;
  return in;
}

TEST(PlanReport, ATicketTargetNeedsItsServersPlusOneSpareAndARestride) {
  PlanInput in = ticket(100000);
  in.years = 50;
  ASSERT_EQ(check_input(in), "");
  const PlanReport r = make_plan(in);
  EXPECT_EQ(r.lines.front(), (PlanLine{"kind", "ticket"}));
  EXPECT_EQ(value_of(r, "ids_per_second_per_core"), "31450 IDs/s");  // 62901 on 2 cores
  EXPECT_EQ(value_of(r, "commits_per_second_per_server"),
            "1333 commits/s (one synced write at a time)");  // 0.75 ms
  EXPECT_EQ(value_of(r, "ids_per_second_per_server"), "62901 IDs/s (the lower of cpu and write)");
  EXPECT_EQ(value_of(r, "servers_for_load"), "2 servers");  // 100000 / 62901, up
  EXPECT_EQ(value_of(r, "servers_needed"), "3 servers (one spare: any one may be down)");
  EXPECT_EQ(value_of(r, "restride"), "2 -> 3 servers (increment 3, offsets 1..3)");
  EXPECT_EQ(value_of(r, "share_per_server"), "33334 IDs/s (3 servers up)");
  EXPECT_EQ(value_of(r, "max_rate_at_least"), "50000 IDs/s (a server's share with one down)");
  EXPECT_EQ(value_of(r, "durable_writes_per_second_per_server"), "34 writes/s (its share / cache)");
  EXPECT_EQ(value_of(r, "fsyncs_per_second_per_server"),
            "35 fsyncs/s at most (a WAL fsync per write, the durable mark once a second)");
  EXPECT_EQ(value_of(r, "values_needed"), "157788000000000 values (50 years at the target)");
  EXPECT_EQ(value_of(r, "years_until_exhaustion"), "2922710.23 years");
  EXPECT_TRUE(r.misses.empty());
  EXPECT_EQ(r.lines.back(), (PlanLine{"fits", "yes"}));
}

TEST(PlanReport, CacheOneTradesServersForGapsOfOneValue) {
  PlanInput in = ticket(10000);
  in.spec.cache = 1;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "write_ids_per_second_per_server").substr(0, 10), "1333 IDs/s");
  EXPECT_EQ(value_of(r, "ids_per_second_per_server"), "1333 IDs/s (the lower of cpu and write)");
  EXPECT_EQ(value_of(r, "servers_for_load"), "8 servers");  // 10000 / 1333, up
  EXPECT_EQ(value_of(r, "share_per_server"), "1112 IDs/s (9 servers up)");
  EXPECT_EQ(value_of(r, "durable_writes_per_second_per_server"),
            "1112 writes/s (its share / cache)");
  EXPECT_EQ(value_of(r, "values_skipped_per_restart").substr(0, 28),
            "1 values per server at most ");
}

TEST(PlanReport, TheExternalMarkSyncsOnceMorePerWrite) {
  PlanInput in = ticket(100000);
  in.external_mark = true;
  EXPECT_EQ(value_of(make_plan(in), "fsyncs_per_second_per_server").substr(0, 18),
            "69 fsyncs/s at mos");  // 34 writes: 34 WAL + 34 external + 1 durable mark
}

TEST(PlanReport, MoreServersThanNeededNeedNoRestride) {
  PlanInput in = ticket(100000);
  in.servers = 4;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "restride"), "none (4 servers carry it)");
  EXPECT_EQ(value_of(r, "share_per_server"), "25000 IDs/s (4 servers up)");
  EXPECT_EQ(value_of(r, "max_rate_at_least"), "33334 IDs/s (a server's share with one down)");
}

TEST(PlanReport, OnEtcdTheServersWritesAreTransactionsAndRevisions) {
  PlanInput in = ticket(100000);
  in.engine = Engine::kEtcd;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "ids_per_second_per_core"), "30600 IDs/s");  // 61201 on 2 cores
  EXPECT_EQ(value_of(r, "commits_per_second_per_server"),
            "313 commits/s (one synced write at a time)");  // 3.19 ms
  EXPECT_EQ(value_of(r, "write_ids_per_second_per_server").substr(0, 12), "313000 IDs/s");
  EXPECT_EQ(value_of(r, "servers_needed").substr(0, 9), "3 servers");
  EXPECT_EQ(value_of(r, "etcd_transactions_per_second"),
            "102 txn/s (the synced writes of 3 serving servers)");  // 34 writes each
  EXPECT_EQ(value_of(r, "etcd_revisions_per_day").substr(0, 18), "8812800 revisions ");
  EXPECT_EQ(value_of(r, "etcd_keys_per_sequence").substr(0, 16), "1 key (seq/NAME)");
  EXPECT_FALSE(has(r, "fsyncs_per_second_per_server"));
}

TEST(PlanReport, A32BitSequenceDoesNotLastAYearAtAThousandPerSecond) {
  PlanInput in = ticket(1000);
  in.spec.max_value = 4294967295;
  in.years = 1;
  ASSERT_EQ(check_input(in), "");
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "years_until_exhaustion"), "0.13 years");
  EXPECT_EQ(value_of(r, "days_until_exhaustion"), "49.7 days");
  ASSERT_EQ(r.misses.size(), 1u);
  EXPECT_EQ(r.misses[0],
            "1 years at 1000 IDs/s need 31557600000 values; start..max_value holds 4294967295");
  EXPECT_EQ(r.lines.back().value, "no: " + r.misses[0]);
}

TEST(PlanReport, ValuesNeededPastA64BitSpaceAreComparedWithoutWrapping) {
  PlanInput in = ticket(kMaxTargetIdsPerSecond);
  in.years = kMaxYears;
  ASSERT_EQ(check_input(in), "");
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "values_needed"),
            "31557600000000000000000000 values (1000000 years at the target)");
  EXPECT_EQ(value_of(r, "servers_for_load"), "15897999 servers");
  ASSERT_EQ(r.misses.size(), 2u);
  EXPECT_EQ(r.misses[0], "15898000 servers need increment 15898000; at most 65535");
  EXPECT_NE(r.misses[1].find("start..max_value holds 9223372036854775807"), std::string::npos);
}

TEST(PlanReport, ALayoutWhoseTimeRangeIsShorterThanTheYearsDoesNotFit) {
  PlanInput in = of_kind(SequenceKind::kSnowflake);
  in.layout = SnowflakeLayout::instagram();
  in.layout_name = "instagram";
  in.years = 40;
  ASSERT_EQ(check_input(in), "");  // years alone are enough for a time field
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "time_range_years"), "34.84 years (from the epoch)");
  EXPECT_EQ(value_of(r, "ends_at"), "2046-06-27T17:00:49.496Z");
  ASSERT_EQ(r.misses.size(), 1u);
  EXPECT_EQ(r.misses[0], "the time range ends after 34.84 years, before the 40 asked for");

  in.layout = SnowflakeLayout::twitter();
  in.years = 69;
  EXPECT_TRUE(make_plan(in).misses.empty());  // 69.68 years
  in.years = 70;
  EXPECT_EQ(make_plan(in).misses.size(), 1u);
}

TEST(PlanReport, SnowflakeServersNeedAWorkerIdEach) {
  PlanInput in = of_kind(SequenceKind::kSnowflake);
  in.layout = SnowflakeLayout{
      .epoch_unix_ms = 1767225600000, .time_bits = 50, .worker_bits = 1, .sequence_bits = 12};
  in.layout_changed = true;
  in.ids_per_second = 200000;
  ASSERT_EQ(check_input(in), "");
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "layout"),
            "50/1/12 bits (time/worker/sequence), 1 ms ticks (twitter, changed)");
  EXPECT_EQ(value_of(r, "ids_per_ms_per_worker"), "4096 IDs");
  EXPECT_EQ(value_of(r, "worker_ids"), "2 workers");
  EXPECT_EQ(value_of(r, "servers_for_load"), "4 servers");  // 200000 / 54134, up
  EXPECT_EQ(value_of(r, "worker_ids_needed"), "5 workers (one per server)");
  ASSERT_EQ(r.misses.size(), 1u);
  EXPECT_EQ(r.misses[0], "5 servers need 5 worker IDs; 1 worker bits give 2");
}

TEST(PlanReport, ASlowLayoutBoundsEachServerByItsWorker) {
  PlanInput in = of_kind(SequenceKind::kSnowflake);
  in.layout = SnowflakeLayout{.epoch_unix_ms = 1767225600000,
                              .time_bits = 43,
                              .worker_bits = 16,
                              .sequence_bits = 4,
                              .time_unit_ms = 10};
  in.ids_per_second = 10000;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "ids_per_ms_per_worker"), "1.60 IDs");
  EXPECT_EQ(value_of(r, "ids_per_second_per_worker"), "1600 IDs/s");  // 16 per 10 ms
  EXPECT_EQ(value_of(r, "ids_per_second_per_server"),
            "1600 IDs/s (the lower of cpu and one worker's)");
  EXPECT_EQ(value_of(r, "servers_for_load"), "7 servers");
  EXPECT_EQ(value_of(r, "durable_writes_per_second_per_server"),
            "1 writes/s (the high-water mark, kept 2000 ms ahead)");
  EXPECT_TRUE(r.misses.empty());
}

TEST(PlanReport, UuidV7IsBoundedByItsFigureAndItsCounter) {
  PlanInput in = of_kind(SequenceKind::kUuidV7);
  in.front_end = FrontEnd::kHttp;
  in.ids_per_second = 50000;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "generator_ids_per_second"), "2048000 IDs/s");
  EXPECT_EQ(value_of(r, "ends_at"), "10889-08-02T05:31:50.655Z");
  EXPECT_EQ(value_of(r, "ids_per_second_per_server"), "17817 IDs/s");
  EXPECT_EQ(value_of(r, "servers_needed").substr(0, 9), "4 servers");  // 50000 / 17817 = 3, + 1
  EXPECT_EQ(value_of(r, "durable_writes_per_second_per_server"), "0 writes/s (no state)");
  EXPECT_EQ(r.lines.back().value, "yes");
}

TEST(PlanReport, AKindNoBenchMeasuredCannotBeShownToFit) {
  PlanInput in = of_kind(SequenceKind::kGapless);
  in.front_end = FrontEnd::kHttp;
  in.ids_per_second = 1000;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "figure"), "none (no bench command has measured gapless over http)");
  EXPECT_EQ(value_of(r, "servers_for_load"), "unknown (no measured figure)");
  ASSERT_EQ(r.misses.size(), 1u);
  EXPECT_EQ(r.misses[0],
            "no bench command has measured gapless over http: the servers it needs "
            "are unknown");
}

// A ULID sequence's durable mark costs what a Snowflake high-water mark does: one synced write
// per half margin while it issues.
TEST(PlanReport, AUlidSequenceIsBoundedByItsFigureAndKeepsAMark) {
  PlanInput in = of_kind(SequenceKind::kUlid);
  in.front_end = FrontEnd::kHttp;
  in.ids_per_second = 50000;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(value_of(r, "ids_per_second_per_server"), "19588 IDs/s");
  EXPECT_EQ(value_of(r, "servers_for_load"), "3 servers");  // 50000 / 19588, up
  EXPECT_EQ(value_of(r, "durable_writes_per_second_per_server"),
            "1 writes/s (its durable mark, kept 2000 ms ahead)");
  EXPECT_EQ(r.lines.back().value, "yes");
}

TEST(PlanReport, AGaplessSequenceIsNumberedByOneServer) {
  PlanInput in = of_kind(SequenceKind::kGapless);
  in.ids_per_second = 3000;
  PlanReport r = make_plan(in);
  // Measured on etcd only: the RocksDB plan says whose figure it uses.
  EXPECT_EQ(value_of(r, "figure").substr(0, 38), "3410 IDs/s on 2 cores (etcd, bench/ha.");
  EXPECT_EQ(value_of(r, "sequences_needed"), "1 sequences (one server numbers a sequence)");
  EXPECT_EQ(value_of(r, "durable_writes_per_second_per_server").substr(0, 15), "1333 writes/s (");
  EXPECT_TRUE(r.misses.empty());
  in.ids_per_second = 5000;
  r = make_plan(in);
  ASSERT_EQ(r.misses.size(), 1u);
  EXPECT_EQ(r.misses[0],
            "one gapless sequence takes at most 3410 IDs/s on this server: the "
            "target needs 2 sequences");
  EXPECT_FALSE(has(r, "cache"));
}

TEST(PlanReport, WithoutATargetThereIsNoVerdict) {
  for (const SequenceKind kind : kAllSequenceKinds) {
    const PlanReport r = make_plan(of_kind(kind));
    EXPECT_FALSE(has(r, "fits")) << kind_name(kind);
    EXPECT_FALSE(has(r, "target_ids_per_second")) << kind_name(kind);
    EXPECT_TRUE(r.misses.empty()) << kind_name(kind);
    EXPECT_EQ(value_of(r, "kind"), kind_name(kind));
  }
}

TEST(PlanReport, AbsurdOrZeroInputsAreRefusedWithTheirRange) {
  PlanInput in = ticket(0);
  EXPECT_EQ(check_input(in), "--ids-per-second must be 1..1000000000000");
  in = ticket(kMaxTargetIdsPerSecond + 1);
  EXPECT_EQ(check_input(in), "--ids-per-second must be 1..1000000000000");
  in = ticket(1);
  in.years = 0;
  EXPECT_EQ(check_input(in), "--years must be 1..1000000");
  in.years = kMaxYears + 1;
  EXPECT_EQ(check_input(in), "--years must be 1..1000000");
  in = ticket(1);
  in.cores = 0;
  EXPECT_EQ(check_input(in), "--cores must be 1..65536");
  in = ticket(1);
  in.servers = 65536;
  EXPECT_EQ(check_input(in), "--servers must be 1..65535");
  in.servers = 0;
  EXPECT_EQ(check_input(in), "--servers must be 1..65535");
}

TEST(PlanReport, SequenceSettingsAreCheckedAsTheServerChecksThem) {
  PlanInput in = ticket(1);
  in.spec.cache = 0;
  EXPECT_EQ(check_input(in), "cache must be 1..1000000000");
  in = ticket(1);
  in.spec.start = 10;
  in.spec.max_value = 9;
  EXPECT_EQ(check_input(in), "max_value must not be less than start");
  in = of_kind(SequenceKind::kSnowflake);
  in.spec.cache = 0;  // not the snowflake's business
  EXPECT_EQ(check_input(in), "");
  in = of_kind(SequenceKind::kTicket);
  in.years = 10;
  EXPECT_EQ(check_input(in),
            "--years needs --ids-per-second for kind ticket (how long its "
            "values last depends on the rate)");
}

TEST(PlanReport, SnowflakeLayoutsAreCheckedByTheLayoutItself) {
  PlanInput in = of_kind(SequenceKind::kSnowflake);
  in.layout.worker_bits = 11;
  EXPECT_EQ(check_input(in),
            "snowflake layout: time_bits + worker_bits + sequence_bits is 64; "
            "it must be 63 (the sign bit stays 0)");
  in = of_kind(SequenceKind::kSnowflake);
  in.layout.time_unit_ms = 10000000000;
  EXPECT_EQ(check_input(in),
            "snowflake layout: 41 bits of 10000000000 ms ticks run past the year 292 million");
  in = of_kind(SequenceKind::kSnowflake);
  in.layout.time_unit_ms = 0;
  EXPECT_EQ(check_input(in), "snowflake layout: time_unit_ms is 0; it must be at least 1");
  in = of_kind(SequenceKind::kSnowflake);
  in.layout.epoch_unix_ms = -1;
  EXPECT_EQ(check_input(in), "snowflake layout: epoch 1969-12-31T23:59:59.999Z is before 1970");
}

TEST(PlanReport, ATimeRangePastTheCalendarIsSaidSo) {
  PlanInput in = of_kind(SequenceKind::kSnowflake);
  in.layout =
      SnowflakeLayout{.time_bits = 52, .worker_bits = 0, .sequence_bits = 11, .time_unit_ms = 1000};
  ASSERT_EQ(check_input(in), "");
  EXPECT_EQ(value_of(make_plan(in), "ends_at"), "after the year 32767");
}

TEST(PlanReport, EveryFigureNamesItsBenchCommandDateAndDocument) {
  const auto lines = figure_lines();
  ASSERT_EQ(lines.size(), reference_figures().size());
  EXPECT_EQ(lines.front().key, "ticket/mysql/rocksdb");
  EXPECT_EQ(lines.front().value.substr(0, 96),
            "62901 IDs/s on 2 cores, 31450 IDs/s per core (rocksdb, bench/ha.sh 10 3, "
            "2026-12-04, docs/ha.md)");
  EXPECT_EQ(lines.back().key, "synced_write/etcd");
  EXPECT_EQ(lines.back().value.substr(0, 26), "3.19 ms, 313 commits/s (et");
  for (const ReferenceFigure& f : reference_figures()) {
    EXPECT_TRUE(f.command.starts_with("bench/")) << f.command;
    EXPECT_TRUE(f.source.starts_with("docs/")) << f.source;
    EXPECT_EQ(f.date.size(), 10u) << f.date;
    EXPECT_FALSE(f.workload.empty());
    EXPECT_GT(f.value, 0u);
  }
}

TEST(PlanReport, AFigureOfTheOtherEngineStandsInAndMissingOnesAreNone) {
  const ReferenceFigure* gapless =
      find_ids_figure(SequenceKind::kGapless, FrontEnd::kMysql, Engine::kRocksDb);
  ASSERT_NE(gapless, nullptr);
  EXPECT_EQ(gapless->engine, Engine::kEtcd);
  const ReferenceFigure* ticket_etcd =
      find_ids_figure(SequenceKind::kTicket, FrontEnd::kMysql, Engine::kEtcd);
  ASSERT_NE(ticket_etcd, nullptr);
  EXPECT_EQ(ticket_etcd->value, 61201u);
  EXPECT_EQ(find_ids_figure(SequenceKind::kGapless, FrontEnd::kHttp, Engine::kRocksDb), nullptr);
  ASSERT_NE(find_ids_figure(SequenceKind::kUlid, FrontEnd::kHttp, Engine::kRocksDb), nullptr);
  EXPECT_EQ(synced_write_figure(Engine::kRocksDb).value, 750u);
  EXPECT_EQ(synced_write_figure(Engine::kEtcd).value, 3190u);
}

TEST(PlanReport, OnlySnowflakeReadsALayoutAndOnlyTicketsRestride) {
  for (const SequenceKind kind : kAllSequenceKinds) {
    EXPECT_EQ(plan_reads_layout(kind), kind == SequenceKind::kSnowflake) << kind_name(kind);
    EXPECT_EQ(plan_restrides(kind), kind == SequenceKind::kTicket) << kind_name(kind);
  }
  EXPECT_EQ(named_layout("sonyflake"), SnowflakeLayout::sonyflake());
  EXPECT_EQ(named_layout("twitter"), SnowflakeLayout::twitter());
  EXPECT_EQ(named_layout("snowflake"), std::nullopt);
  EXPECT_EQ(layout_names_text(), "twitter, instagram, discord or sonyflake");
  EXPECT_EQ(parse_front_end("http"), FrontEnd::kHttp);
  EXPECT_EQ(parse_front_end("HTTP"), std::nullopt);
  EXPECT_EQ(parse_engine("etcd"), Engine::kEtcd);
  EXPECT_EQ(parse_engine("memory"), std::nullopt);
}

}  // namespace
}  // namespace ticketd::plan
