#include "server/plan/plan_report.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "server/base/utc_time.h"
#include "server/core/snowflake_generator.h"
#include "server/core/ulid_sequence.h"
#include "server/plan/capacity_plan.h"

namespace ticketd::plan {
namespace {

// The last instant format_utc_ms writes as a date: 32767-12-31T23:59:59.999Z (the last year of
// its calendar).
constexpr std::int64_t kLastDateMs = 971890963199999;

std::string n(u128 v) { return digits(v); }

// What each kind's plan answers: one row per kind, in SequenceKind's order (kKindPlans, below
// the functions it names).
struct KindPlan {
  SequenceKind kind;
  void (*plan)(const PlanInput&, PlanReport&);
  bool reads_layout;           // --layout, --epoch, the widths
  bool restrides;              // --servers: an odd/even group grown by restride
  bool years_need_rate;        // a counter: what it uses in --years depends on its rate
  std::string_view etcd_keys;  // the keys one sequence keeps in etcd (docs/ha.md "Keys")
};

const KindPlan& kind_plan(SequenceKind kind);

void add(PlanReport& r, std::string key, std::string value) {
  r.lines.push_back({std::move(key), std::move(value)});
}

std::string kind_text(const PlanInput& in) {
  return std::string(kind_name(in.kind)) + " over " + std::string(front_end_name(in.front_end));
}

std::string source_text(const ReferenceFigure& f) {
  return std::string(engine_name(f.engine)) + ", " + std::string(f.command) + ", " +
         std::string(f.date) + ", " + std::string(f.source);
}

std::string bound_text(Bound bound) {
  return bound == Bound::kBox ? "ticketd and its load generator shared the cores"
                              : "the clients were the bound: a floor";
}

// The IDs/s figure of the kind and front end, and what one server does by it; nullopt when no
// bench command measured them.
std::optional<u128> add_figure(const PlanInput& in, PlanReport& r) {
  const ReferenceFigure* f = find_ids_figure(in.kind, in.front_end, in.engine);
  if (f == nullptr) {
    add(r, "figure", "none (no bench command has measured " + kind_text(in) + ")");
    return std::nullopt;
  }
  add(r, "figure",
      n(f->value) + " IDs/s on " + n(kReferenceCores) + " cores (" + source_text(*f) +
          "): " + std::string(f->workload) + "; " + bound_text(f->bound));
  add(r, "ids_per_second_per_core", n(ids_per_core(*f)) + " IDs/s");
  const u128 cpu = cpu_ids_per_server(*f, in.cores);
  add(r, "cpu_ids_per_second_per_server", n(cpu) + " IDs/s (" + n(in.cores) + " cores)");
  return cpu;
}

// The engine's synced write and how many of them a server completes per second.
std::uint64_t add_engine(const PlanInput& in, PlanReport& r) {
  const ReferenceFigure& w = synced_write_figure(in.engine);
  add(r, "synced_write_ms", decimal(w.value, 1000, 2) + " ms (" + source_text(w) + ")");
  const std::uint64_t commits = commits_per_second(w.value);
  add(r, "commits_per_second_per_server", n(commits) + " commits/s (one synced write at a time)");
  return commits;
}

void add_target(const PlanInput& in, PlanReport& r) {
  add(r, "target_ids_per_second", n(*in.ids_per_second) + " IDs/s");
}

// servers_for_load and servers_needed (with one spare); the servers needed, 0 when unknown.
u128 add_servers(const PlanInput& in, std::optional<u128> per_server, PlanReport& r) {
  if (!per_server) {
    add(r, "servers_for_load", "unknown (no measured figure)");
    r.misses.push_back("no bench command has measured " + kind_text(in) +
                       ": the servers it needs are unknown");
    return 0;
  }
  const u128 for_load = servers_for_load(*in.ids_per_second, *per_server);
  const u128 needed = servers_with_spare(for_load);
  add(r, "servers_for_load", n(for_load) + " servers");
  add(r, "servers_needed", n(needed) + " servers (one spare: any one may be down)");
  return needed;
}

// Synced writes per server, and what they cost the engine: fsyncs (RocksDB) or etcd
// transactions and revisions over `servers` serving servers.
void add_durability(const PlanInput& in, u128 writes, u128 servers, std::string_view why,
                    PlanReport& r) {
  add(r, "durable_writes_per_second_per_server",
      n(writes) + " writes/s (" + std::string(why) + ")");
  if (in.engine == Engine::kRocksDb) {
    const char* what = writes == 0        ? "no synced write"
                       : in.external_mark ? "a WAL fsync and an external mark fdatasync per "
                                            "write, the durable mark once a second"
                                          : "a WAL fsync per write, the durable mark once a second";
    add(r, "fsyncs_per_second_per_server",
        n(fsyncs(writes, in.external_mark)) + " fsyncs/s at most (" + what + ")");
    return;
  }
  const u128 transactions = writes * servers;
  add(r, "etcd_transactions_per_second",
      n(transactions) + " txn/s (the synced writes of " + n(servers) + " serving servers)");
  add(r, "etcd_keys_per_sequence", std::string(kind_plan(in.kind).etcd_keys));
  add(r, "etcd_revisions_per_day",
      n(transactions * kSecondsPerDay) +
          " revisions (one per transaction; ticketd never compacts etcd)");
}

void add_value_space(const PlanInput& in, PlanReport& r) {
  add(r, "value_space",
      n(value_space(in.spec.start, in.spec.max_value)) + " values (start " + n(in.spec.start) +
          ", max_value " + n(in.spec.max_value) + ")");
}

// How long start..max_value lasts at the target, and whether it covers --years.
void add_lifetime(const PlanInput& in, PlanReport& r) {
  if (!in.ids_per_second) return;
  const std::uint64_t rate = *in.ids_per_second;
  const u128 space = value_space(in.spec.start, in.spec.max_value);
  add(r, "years_until_exhaustion", decimal(space, u128{rate} * kSecondsPerYear, 2) + " years");
  add(r, "days_until_exhaustion", decimal(space, u128{rate} * kSecondsPerDay, 1) + " days");
  if (!in.years) return;
  const u128 needed = values_needed(rate, *in.years);
  add(r, "values_needed", n(needed) + " values (" + n(*in.years) + " years at the target)");
  if (needed > space) {
    r.misses.push_back(n(*in.years) + " years at " + n(rate) + " IDs/s need " + n(needed) +
                       " values; start..max_value holds " + n(space));
  }
}

// The span of a time field and when it ends.
void add_time_range(u128 range_ms, std::int64_t end_unix_ms, std::string_view from, PlanReport& r) {
  add(r, "time_range_years",
      decimal(range_ms, kMsPerYear, 2) + " years (" + std::string(from) + ")");
  add(r, "ends_at",
      end_unix_ms <= kLastDateMs ? format_utc_ms(end_unix_ms)
                                 : std::string("after the year 32767"));
}

void check_years(const PlanInput& in, u128 range_ms, PlanReport& r) {
  if (in.years && range_ms < u128{*in.years} * kMsPerYear) {
    r.misses.push_back("the time range ends after " + decimal(range_ms, kMsPerYear, 2) +
                       " years, before the " + n(*in.years) + " asked for");
  }
}

void add_restride(const PlanInput& in, u128 needed, PlanReport& r) {
  if (needed <= in.servers) {
    add(r, "restride", "none (" + n(in.servers) + " servers carry it)");
    return;
  }
  add(r, "restride",
      n(in.servers) + " -> " + n(needed) + " servers (increment " + n(needed) + ", offsets 1.." +
          n(needed) + ")");
  if (needed > kMaxServers) {
    r.misses.push_back(n(needed) + " servers need increment " + n(needed) + "; at most " +
                       n(kMaxServers));
  }
}

void plan_ticket_target(const PlanInput& in, std::optional<u128> per_server, PlanReport& r) {
  add_target(in, r);
  const u128 needed = add_servers(in, per_server, r);
  if (needed == 0) return;
  add_restride(in, needed, r);
  const u128 planned = std::max<u128>(needed, in.servers);
  const u128 each = share(*in.ids_per_second, planned);
  add(r, "share_per_server", n(each) + " IDs/s (" + n(planned) + " servers up)");
  add(r, "max_rate_at_least",
      n(share(*in.ids_per_second, planned - 1)) + " IDs/s (a server's share with one down)");
  add_durability(in, durable_writes(each, in.spec.cache), planned, "its share / cache", r);
}

void plan_ticket(const PlanInput& in, PlanReport& r) {
  const auto cpu = add_figure(in, r);
  const std::uint64_t commits = add_engine(in, r);
  const std::uint64_t cache = in.spec.cache;
  add(r, "cache", n(cache) + " values per durable write");
  const u128 by_writes = write_bound(cache, commits);
  add(r, "write_ids_per_second_per_server",
      n(by_writes) + " IDs/s (cache x commits/s; a floor: callers queued behind a write share it)");
  std::optional<u128> per_server;
  if (cpu) {
    per_server = std::min(*cpu, by_writes);
    add(r, "ids_per_second_per_server", n(*per_server) + " IDs/s (the lower of cpu and write)");
  }
  add(r, "values_skipped_per_restart",
      n(cache) + " values per server at most (its cache; a crash also skips requests in flight)");
  add_value_space(in, r);
  if (in.ids_per_second) plan_ticket_target(in, per_server, r);
  add_lifetime(in, r);
}

void plan_gapless(const PlanInput& in, PlanReport& r) {
  const auto cpu = add_figure(in, r);
  const std::uint64_t commits = add_engine(in, r);
  if (cpu) add(r, "ids_per_second_per_server", n(*cpu) + " IDs/s (its synced writes included)");
  add_value_space(in, r);
  if (in.ids_per_second) {
    const std::uint64_t target = *in.ids_per_second;
    add_target(in, r);
    if (!cpu) {
      add_servers(in, cpu, r);
    } else {
      const u128 sequences = servers_for_load(target, *cpu);
      add(r, "sequences_needed", n(sequences) + " sequences (one server numbers a sequence)");
      if (sequences > 1) {
        r.misses.push_back("one gapless sequence takes at most " + n(*cpu) +
                           " IDs/s on this server: the target needs " + n(sequences) +
                           " sequences");
      }
    }
    add_durability(in, std::min<u128>(target, commits), 1,
                   "at most one per commit; group commit shares them", r);
  }
  add_lifetime(in, r);
}

std::string layout_text(const PlanInput& in) {
  const SnowflakeLayout& l = in.layout;
  return std::to_string(l.time_bits) + "/" + std::to_string(l.worker_bits) + "/" +
         std::to_string(l.sequence_bits) + " bits (time/worker/sequence), " +
         std::to_string(l.time_unit_ms) + " ms ticks (" + in.layout_name +
         (in.layout_changed ? ", changed" : "") + ")";
}

void plan_snowflake(const PlanInput& in, PlanReport& r) {
  const SnowflakeBudget b = snowflake_budget(in.layout);
  add(r, "layout", layout_text(in));
  add(r, "epoch", format_utc_ms(in.layout.epoch_unix_ms));
  add_time_range(b.range_ms, in.layout.end_unix_ms(), "from the epoch", r);
  add(r, "ids_per_tick_per_worker",
      n(b.ids_per_tick) + " IDs per " + std::to_string(in.layout.time_unit_ms) + " ms tick");
  const auto unit = static_cast<std::uint64_t>(in.layout.time_unit_ms);
  add(r, "ids_per_ms_per_worker",
      decimal(b.ids_per_tick, unit, b.ids_per_tick % unit == 0 ? 0 : 2) + " IDs");
  add(r, "ids_per_second_per_worker", n(b.ids_per_second) + " IDs/s");
  add(r, "worker_ids", n(b.workers) + " workers");
  const auto cpu = add_figure(in, r);
  std::optional<u128> per_server;
  if (cpu) {
    per_server = std::min(*cpu, b.ids_per_second);
    add(r, "ids_per_second_per_server",
        n(*per_server) + " IDs/s (the lower of cpu and one worker's)");
  }
  const SnowflakeOptions generator;
  const u128 writes = snowflake_mark_writes(generator.hwm_margin_ms);
  const std::string why =
      "the high-water mark, kept " + std::to_string(generator.hwm_margin_ms) + " ms ahead";
  u128 servers = 1;
  if (in.ids_per_second) {
    add_target(in, r);
    if (const u128 needed = add_servers(in, per_server, r); needed != 0) {
      servers = needed;
      add(r, "worker_ids_needed", n(needed) + " workers (one per server)");
      if (needed > b.workers) {
        r.misses.push_back(n(needed) + " servers need " + n(needed) + " worker IDs; " +
                           std::to_string(in.layout.worker_bits) + " worker bits give " +
                           n(b.workers));
      }
    }
  }
  add_durability(in, writes, servers, why, r);
  check_years(in, b.range_ms, r);
}

// UUIDv7 and ULID: 48 bits of Unix ms; `generator` is what one generator issues per second at
// least (nullopt: no practical bound); `writes` per second keep its durable mark (`why`).
void plan_unix_ms48(const PlanInput& in, std::optional<u128> generator, u128 writes,
                    std::string_view why, PlanReport& r) {
  add_time_range(u128{kLastUnixMs48} + 1, kLastUnixMs48, "48 bits of ms from 1970", r);
  const auto cpu = add_figure(in, r);
  std::optional<u128> per_server = cpu;
  if (cpu && generator) per_server = std::min(*cpu, *generator);
  if (per_server) add(r, "ids_per_second_per_server", n(*per_server) + " IDs/s");
  u128 servers = 1;
  if (in.ids_per_second) {
    add_target(in, r);
    if (const u128 needed = add_servers(in, per_server, r); needed != 0) servers = needed;
  }
  add_durability(in, writes, servers, why, r);
  check_years(in, u128{kLastUnixMs48} + 1, r);
}

void plan_uuidv7(const PlanInput& in, PlanReport& r) {
  const u128 per_second = u128{kUuidV7IdsPerMs} * 1000;
  add(r, "generator_ids_per_ms",
      n(kUuidV7IdsPerMs) + " IDs at least (then its timestamp runs ahead of the clock)");
  add(r, "generator_ids_per_second", n(per_second) + " IDs/s");
  plan_unix_ms48(in, per_second, 0, "no state", r);
}

void plan_ulid(const PlanInput& in, PlanReport& r) {
  add(r, "generator_ids_per_ms",
      "no practical bound (80 random bits, counted up within a millisecond)");
  const std::int64_t margin = kDefaultUlidMarkMarginMs;
  plan_unix_ms48(in, std::nullopt, snowflake_mark_writes(margin),
                 "its durable mark, kept " + std::to_string(margin) + " ms ahead", r);
}

constexpr KindPlan kKindPlans[] = {
    {SequenceKind::kTicket, plan_ticket, false, true, true,
     "1 key (seq/NAME), plus lease/NAME/ID per hi-lo block for http.lease_retention"},
    {SequenceKind::kGapless, plan_gapless, false, false, true,
     "1 key (gapless/NAME/f), plus c/N per commit until folded, r/N per pending reservation, "
     "v/N per void (kept); def/NAME if created at run time"},
    {SequenceKind::kSnowflake, plan_snowflake, true, false, false,
     "1 key (snowflake/NAME/hwm); def/NAME if created at run time"},
    {SequenceKind::kUuidV7, plan_uuidv7, false, false, false,
     "0 keys (no state); def/NAME if created at run time"},
    {SequenceKind::kUlid, plan_ulid, false, false, false,
     "1 key (ulid/NAME/mark); def/NAME if created at run time"},
};
static_assert(std::size(kKindPlans) == std::size(kSequenceKindRows));
static_assert([] {
  for (std::size_t i = 0; i < std::size(kKindPlans); ++i) {
    if (static_cast<std::size_t>(kKindPlans[i].kind) != i) return false;
  }
  return true;
}());

const KindPlan& kind_plan(SequenceKind kind) { return kKindPlans[static_cast<std::size_t>(kind)]; }

struct NamedLayout {
  std::string_view name;
  SnowflakeLayout (*make)();
};
constexpr NamedLayout kLayouts[] = {{"twitter", &SnowflakeLayout::twitter},
                                    {"instagram", &SnowflakeLayout::instagram},
                                    {"discord", &SnowflakeLayout::discord},
                                    {"sonyflake", &SnowflakeLayout::sonyflake}};

std::string in_range(std::string_view flag, std::uint64_t value, std::uint64_t hi) {
  if (value >= 1 && value <= hi) return {};
  return std::string(flag) + " must be 1.." + n(hi);
}

}  // namespace

std::string check_input(const PlanInput& in) {
  std::string problem;
  if (in.ids_per_second) {
    problem = in_range("--ids-per-second", *in.ids_per_second, kMaxTargetIdsPerSecond);
  }
  if (problem.empty() && in.years) problem = in_range("--years", *in.years, kMaxYears);
  if (problem.empty()) problem = in_range("--cores", in.cores, kMaxCores);
  if (problem.empty()) problem = in_range("--servers", in.servers, kMaxServers);
  if (!problem.empty()) return problem;
  const KindPlan& row = kind_plan(in.kind);
  if (in.years && !in.ids_per_second && row.years_need_rate) {
    return "--years needs --ids-per-second for kind " + std::string(kind_name(in.kind)) +
           " (how long its values last depends on the rate)";
  }
  if (kind_takes(in.kind, kind_key::kMaxValue)) {
    if (auto bad = validate(in.spec); !bad.empty()) return bad;
  }
  if (row.reads_layout) {
    const auto problems = in.layout.validate(in.layout.epoch_unix_ms, 0);
    if (!problems.empty()) return "snowflake layout: " + problems.front().message;
  }
  return {};
}

PlanReport make_plan(const PlanInput& in) {
  PlanReport r;
  add(r, "kind", std::string(kind_name(in.kind)));
  add(r, "front_end", std::string(front_end_name(in.front_end)));
  add(r, "engine", std::string(engine_name(in.engine)));
  kind_plan(in.kind).plan(in, r);
  if (in.ids_per_second || in.years) {
    std::string fits = r.misses.empty() ? "yes" : "no: ";
    for (std::size_t i = 0; i < r.misses.size(); ++i) fits += (i ? "; " : "") + r.misses[i];
    add(r, "fits", fits);
  }
  return r;
}

std::vector<PlanLine> figure_lines() {
  std::vector<PlanLine> out;
  for (const ReferenceFigure& f : reference_figures()) {
    const std::string source =
        " (" + source_text(f) + "): " + std::string(f.workload) + "; " + bound_text(f.bound);
    if (f.measure == Measure::kIdsPerSecond) {
      out.push_back({std::string(kind_name(f.kind)) + "/" +
                         std::string(front_end_name(f.front_end)) + "/" +
                         std::string(engine_name(f.engine)),
                     n(f.value) + " IDs/s on " + n(kReferenceCores) + " cores, " +
                         n(ids_per_core(f)) + " IDs/s per core" + source});
    } else {
      out.push_back({"synced_write/" + std::string(engine_name(f.engine)),
                     decimal(f.value, 1000, 2) + " ms, " + n(commits_per_second(f.value)) +
                         " commits/s" + source});
    }
  }
  return out;
}

bool plan_reads_layout(SequenceKind kind) { return kind_plan(kind).reads_layout; }

bool plan_restrides(SequenceKind kind) { return kind_plan(kind).restrides; }

std::optional<SnowflakeLayout> named_layout(std::string_view name) {
  for (const auto& l : kLayouts) {
    if (l.name == name) return l.make();
  }
  return std::nullopt;
}

std::string layout_names_text() {
  std::string out;
  const std::size_t count = std::size(kLayouts);
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) out += i + 1 == count ? " or " : ", ";
    out += kLayouts[i].name;
  }
  return out;
}

}  // namespace ticketd::plan
