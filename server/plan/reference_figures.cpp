#include "server/plan/reference_figures.h"

#include <algorithm>
#include <iterator>

namespace ticketd::plan {
namespace {

constexpr std::string_view kHa = "bench/ha.sh 10 3";
constexpr std::string_view kHaDate = "2026-12-04";  // commit c96d20c put the quiet-box run in
constexpr std::string_view kCompare = "bench/compare.sh 5 8";
constexpr std::string_view kCompareDate = "2026-11-30";  // "One run (2026-11-30, ...)"
// "Time kinds on a quiet box (2026-12-07, ...)": Snowflake, UUIDv7 and ULID rows only.
constexpr std::string_view kCompareTime = "bench/compare.sh 5 8 Snowflake,UUIDv7,ULID";
constexpr std::string_view kCompareTimeDate = "2026-12-07";

// The figures `ticketd plan` uses: update a row here when its document quotes a newer run, and
// docs/capacity.md's worked examples (tests/app/plan_test.py runs them) with it.
constexpr ReferenceFigure kFigures[] = {
    // docs/ha.md "Measured": `tickets medians: etcd 61201, rocksdb 62901`.
    {Measure::kIdsPerSecond, SequenceKind::kTicket, FrontEnd::kMysql, Engine::kRocksDb, 62901,
     Bound::kBox, kHa, kHaDate, "docs/ha.md",
     "the Flickr recipe, cache 1000, sysbench at 64 connections, median of 3 rounds"},
    {Measure::kIdsPerSecond, SequenceKind::kTicket, FrontEnd::kMysql, Engine::kEtcd, 61201,
     Bound::kBox, kHa, kHaDate, "docs/ha.md",
     "the Flickr recipe, cache 1000, sysbench at 64 connections, a three-member etcd on "
     "loopback, median of 3 rounds"},
    // docs/comparison.md: `ticket, cache 1000 | http | 2,833`.
    {Measure::kIdsPerSecond, SequenceKind::kTicket, FrontEnd::kHttp, Engine::kRocksDb, 2833,
     Bound::kClients, kCompare, kCompareDate, "docs/comparison.md",
     "POST .../next, cache 1000, 8 Python clients"},
    // docs/ha.md "Measured": `gapless  etcd     16 clients:       3410 commits/s`.
    {Measure::kIdsPerSecond, SequenceKind::kGapless, FrontEnd::kMysql, Engine::kEtcd, 3410,
     Bound::kBox, kHa, kHaDate, "docs/ha.md",
     "BEGIN; SELECT NEXTVAL; COMMIT at 16 sysbench clients, a three-member etcd on loopback"},
    // docs/comparison.md "Time kinds on a quiet box": `Snowflake | mysql | 54,134`,
    // `Snowflake | http | 19,658`, `UUIDv7 | mysql | 36,733`, `UUIDv7 | http | 17,817`,
    // `ULID | mysql | 38,054`, `ULID | http | 19,588`.
    {Measure::kIdsPerSecond, SequenceKind::kSnowflake, FrontEnd::kMysql, Engine::kRocksDb, 54134,
     Bound::kClients, kCompareTime, kCompareTimeDate, "docs/comparison.md",
     "REPLACE INTO ...; lastrowid, 8 PyMySQL clients"},
    {Measure::kIdsPerSecond, SequenceKind::kSnowflake, FrontEnd::kHttp, Engine::kRocksDb, 19658,
     Bound::kClients, kCompareTime, kCompareTimeDate, "docs/comparison.md",
     "POST .../next, 8 Python clients"},
    {Measure::kIdsPerSecond, SequenceKind::kUuidV7, FrontEnd::kMysql, Engine::kRocksDb, 36733,
     Bound::kClients, kCompareTime, kCompareTimeDate, "docs/comparison.md",
     "SELECT UUID_V7(), 8 PyMySQL clients"},
    {Measure::kIdsPerSecond, SequenceKind::kUuidV7, FrontEnd::kHttp, Engine::kRocksDb, 17817,
     Bound::kClients, kCompareTime, kCompareTimeDate, "docs/comparison.md",
     "POST .../next, 8 Python clients"},
    {Measure::kIdsPerSecond, SequenceKind::kUlid, FrontEnd::kMysql, Engine::kRocksDb, 38054,
     Bound::kClients, kCompareTime, kCompareTimeDate, "docs/comparison.md",
     "SELECT NEXTVAL(seq), 8 PyMySQL clients"},
    {Measure::kIdsPerSecond, SequenceKind::kUlid, FrontEnd::kHttp, Engine::kRocksDb, 19588,
     Bound::kClients, kCompareTime, kCompareTimeDate, "docs/comparison.md",
     "POST .../next, 8 Python clients"},
    // docs/ha.md "Measured": the rounds' `synced writes, mean` 0.86, 0.75, 0.70 ms (RocksDB) and
    // 3.33, 2.99, 3.19 ms (etcd); the medians.
    {Measure::kSyncedWriteUs, SequenceKind::kTicket, FrontEnd::kMysql, Engine::kRocksDb, 750,
     Bound::kBox, kHa, kHaDate, "docs/ha.md",
     "mean synced write (WAL fsync) under the Flickr load, median of 3 rounds"},
    {Measure::kSyncedWriteUs, SequenceKind::kTicket, FrontEnd::kMysql, Engine::kEtcd, 3190,
     Bound::kBox, kHa, kHaDate, "docs/ha.md",
     "mean etcd transaction under the Flickr load, a three-member etcd on loopback, median of "
     "3 rounds"},
};

// synced_write_figure() relies on it.
static_assert([] {
  for (const Engine engine : {Engine::kRocksDb, Engine::kEtcd}) {
    bool found = false;
    for (const auto& f : kFigures)
      found |= f.measure == Measure::kSyncedWriteUs && f.engine == engine;
    if (!found) return false;
  }
  return true;
}());

const ReferenceFigure* find_ids(SequenceKind kind, FrontEnd front_end,
                                std::optional<Engine> engine) {
  const auto row = std::find_if(std::begin(kFigures), std::end(kFigures), [&](const auto& f) {
    return f.measure == Measure::kIdsPerSecond && f.kind == kind && f.front_end == front_end &&
           (!engine || f.engine == *engine);
  });
  return row == std::end(kFigures) ? nullptr : &*row;
}

}  // namespace

std::string_view front_end_name(FrontEnd front_end) {
  return front_end == FrontEnd::kMysql ? "mysql" : "http";
}

std::optional<FrontEnd> parse_front_end(std::string_view name) {
  if (name == "mysql") return FrontEnd::kMysql;
  if (name == "http") return FrontEnd::kHttp;
  return std::nullopt;
}

std::string_view engine_name(Engine engine) {
  return engine == Engine::kRocksDb ? "rocksdb" : "etcd";
}

std::optional<Engine> parse_engine(std::string_view name) {
  if (name == "rocksdb") return Engine::kRocksDb;
  if (name == "etcd") return Engine::kEtcd;
  return std::nullopt;
}

std::span<const ReferenceFigure> reference_figures() { return kFigures; }

const ReferenceFigure* find_ids_figure(SequenceKind kind, FrontEnd front_end, Engine engine) {
  if (const auto* exact = find_ids(kind, front_end, engine)) return exact;
  return find_ids(kind, front_end, std::nullopt);
}

const ReferenceFigure& synced_write_figure(Engine engine) {
  return *std::find_if(std::begin(kFigures), std::end(kFigures), [&](const auto& f) {
    return f.measure == Measure::kSyncedWriteUs && f.engine == engine;
  });
}

}  // namespace ticketd::plan
