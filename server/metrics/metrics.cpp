#include "server/metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "server/core/kind_module.h"
#include "server/core/serving_gate.h"
#include "server/core/worker_pool_service.h"

namespace ticketd::metrics {
namespace {

using prometheus::Labels;

// Weight of the newest interval in the smoothed issue rate behind the exhaustion estimate.
constexpr double kRateSmoothing = 0.5;
// Intervals shorter than this are merged into the next scrape, so two scrapes in a row do not
// turn a burst into a wild rate.
constexpr std::int64_t kMinRateIntervalMs = 1000;

prometheus::Family<prometheus::Counter>& counter(prometheus::Registry& r, const std::string& name,
                                                 const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& r, const std::string& name,
                                             const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Histogram>& histogram(prometheus::Registry& r,
                                                     const std::string& name,
                                                     const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

const prometheus::Histogram::BucketBoundaries& latency_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  return b;
}
// Synced commits: an fsync on a local SSD takes tens of µs to a few ms; etcd txns a few ms.
const prometheus::Histogram::BucketBoundaries& commit_latency_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,   0.05,   0.1,     0.25,   0.5,   1,      2.5,   5};
  return b;
}
// Requests folded into one synced write.
const prometheus::Histogram::BucketBoundaries& group_size_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{1,  2,   4,   8,   16,   32,
                                                         64, 128, 256, 512, 1024, 4096};
  return b;
}
const prometheus::Histogram::BucketBoundaries& size_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{1,     10,     100,     1000,
                                                         10000, 100000, 1000000, 10000000};
  return b;
}

std::string s(std::string_view v) { return std::string(v); }

}  // namespace

Metrics::Metrics(const TicketService& tickets, GroupCommitter& committer, const Clock& clock)
    : tickets_(tickets),
      committer_(committer),
      clock_(clock),
      registry_(std::make_unique<prometheus::Registry>()),
      ids_issued_(counter(*registry_, "ticketd_ids_issued_total",
                          "Values handed out, per sequence and front end (blocks included)")),
      blocks_leased_(counter(*registry_, "ticketd_blocks_leased_total",
                             "Hi-lo blocks leased, per sequence and front end")),
      block_size_(histogram(*registry_, "ticketd_block_size_values", "Values per leased block")),
      open_connections_(
          gauge(*registry_, "ticketd_open_connections", "Open client connections per front end")),
      connections_(counter(*registry_, "ticketd_connections_total",
                           "Client connections accepted per front end")),
      auth_failures_(
          counter(*registry_, "ticketd_auth_failures_total", "Rejected credentials per front end")),
      audit_events_(counter(*registry_, "ticketd_audit_events_total",
                            "Audit trail events (login failures, administrative changes)")),
      errors_(counter(*registry_, "ticketd_errors_total",
                      "Errors returned to clients, per front end and error code")),
      request_seconds_(histogram(*registry_, "ticketd_request_duration_seconds",
                                 "Request latency per front end and route")),
      durable_writes_(counter(*registry_, "ticketd_durable_writes_total",
                              "Synced commits performed by the group committer")),
      durable_requests_(counter(*registry_, "ticketd_durable_write_requests_total",
                                "Write requests carried by those commits (group commit factor)")),
      durable_failures_(
          counter(*registry_, "ticketd_durable_write_failures_total", "Failed synced commits")),
      durable_seconds_(counter(*registry_, "ticketd_durable_write_seconds_total",
                               "Time spent in synced commits (divide by writes for the mean)")),
      durable_last_seconds_(gauge(*registry_, "ticketd_durable_write_last_seconds",
                                  "Latency of the most recent synced commit")),
      values_reserved_(counter(*registry_, "ticketd_values_reserved_total",
                               "Values reserved by raising durable ceilings, per sequence "
                               "(divide by durable writes for values per write)")),
      remaining_(gauge(*registry_, "ticketd_sequence_remaining_values",
                       "Values left before max_value, per sequence")),
      exhaustion_seconds_(gauge(*registry_, "ticketd_sequence_exhaustion_seconds",
                                "Estimated seconds until max_value at the recent issue rate "
                                "(+Inf when idle)")),
      next_value_(gauge(*registry_, "ticketd_sequence_next_value",
                        "The value the next request would get, per sequence (0 when exhausted; "
                        "a float: exact only below 2^53)")),
      durable_ceiling_(gauge(*registry_, "ticketd_sequence_durable_ceiling",
                             "Highest value a synced write allows, per sequence (a float)")),
      commit_seconds_(histogram(*registry_, "ticketd_durable_write_duration_seconds",
                                "Latency of each synced commit (fsync, or etcd txn)")),
      commit_group_size_(histogram(*registry_, "ticketd_durable_write_group_size",
                                   "Write requests folded into each synced commit")),
      worker_leases_(
          gauge(*registry_, "ticketd_worker_pool_leases", "Live worker-ID leases per pool")),
      worker_pool_size_(
          gauge(*registry_, "ticketd_worker_pool_size", "Worker IDs per pool (its size)")),
      ha_role_(gauge(*registry_, "ticketd_ha_role",
                     "1 for this instance's HA role (leader, follower, deposed), 0 for the "
                     "others (storage.engine etcd only)")),
      ha_term_(gauge(*registry_, "ticketd_ha_term",
                     "The leadership term this instance knows: the leader key's create "
                     "revision (0: no leader known)")),
      ha_serving_(gauge(*registry_, "ticketd_ha_serving",
                        "1 while this instance is the leader with a fresh lease and issues")) {
  commit_seconds_series_ = &commit_seconds_.Add({}, commit_latency_buckets());
  commit_group_size_series_ = &commit_group_size_.Add({}, group_size_buckets());
  for (const auto kind : kAllSequenceKinds) {
    auto& families = kind_families_[static_cast<std::size_t>(kind)];
    for (const KindMetricRow& row : kind_module(kind).metric_rows()) {
      families.push_back(row.type == KindMetricRow::kCounter
                             ? KindFamily{&counter(*registry_, s(row.name), s(row.help)), nullptr}
                             : KindFamily{nullptr, &gauge(*registry_, s(row.name), s(row.help))});
    }
  }
  committer_.set_observer([this](const GroupCommitter::CommitSample& c) { on_commit(c); });
  std::lock_guard lock(scrape_mutex_);
  last_stats_ = committer_.stats();
  const auto now = clock_.now_unix_ms();
  for (const auto& info : tickets_.list()) {
    samples_[info.spec.name] = SequenceSample{now, info.issued, info.durable_ceiling, 0};
  }
}

// Returns once the committer runs no call of on_commit(), so the registry may go.
Metrics::~Metrics() { committer_.set_observer({}); }

void Metrics::on_commit(const GroupCommitter::CommitSample& c) {
  commit_seconds_series_->Observe(static_cast<double>(c.latency_ns) / 1e9);
  commit_group_size_series_->Observe(static_cast<double>(c.requests));
}

void Metrics::watch(const WorkerPoolService* workers, const ServingGate* gate) {
  std::lock_guard lock(scrape_mutex_);
  workers_ = workers;
  gate_ = gate;
}

namespace {

// "a\0b", the key of a series by its two label values: in a buffer on the stack for the
// usual short names, so looking a series up allocates nothing.
class SeriesKey {
 public:
  SeriesKey(std::string_view a, std::string_view b) {
    const std::size_t n = a.size() + 1 + b.size();
    char* out = n <= sizeof(inline_) ? inline_ : (heap_.resize(n), heap_.data());
    // An empty view may have no data (memcpy from null is undefined even for 0 bytes).
    if (!a.empty()) std::memcpy(out, a.data(), a.size());
    out[a.size()] = '\0';
    if (!b.empty()) std::memcpy(out + a.size() + 1, b.data(), b.size());
    view_ = std::string_view(out, n);
  }
  SeriesKey(const SeriesKey&) = delete;
  SeriesKey& operator=(const SeriesKey&) = delete;
  [[nodiscard]] std::string_view view() const { return view_; }

 private:
  char inline_[128];
  std::string heap_;
  std::string_view view_;
};

// Finds or creates the series for `key` under a shared lock first, exclusive only to insert.
template <class T, class Make>
T* cached_series(std::shared_mutex& mutex, StringMap<T*>& cache, const SeriesKey& key,
                 Make&& make) {
  {
    std::shared_lock lock(mutex);
    if (auto it = cache.find(key.view()); it != cache.end()) return it->second;
  }
  std::unique_lock lock(mutex);
  auto [it, inserted] = cache.try_emplace(std::string(key.view()), nullptr);
  if (inserted) it->second = &make();
  return it->second;
}

}  // namespace

void Metrics::ids_issued(std::string_view sequence, std::string_view frontend, std::uint64_t n) {
  auto* counter = cached_series(
      hot_mutex_, issued_series_, SeriesKey(sequence, frontend), [&]() -> prometheus::Counter& {
        return ids_issued_.Add({{"sequence", s(sequence)}, {"frontend", s(frontend)}});
      });
  counter->Increment(static_cast<double>(n));
}

void Metrics::block_leased(std::string_view sequence, std::string_view frontend,
                           std::uint64_t size) {
  cached_series(hot_mutex_, blocks_series_, SeriesKey(sequence, frontend),
                [&]() -> prometheus::Counter& {
                  return blocks_leased_.Add({{"sequence", s(sequence)}, {"frontend", s(frontend)}});
                })
      ->Increment();
  cached_series(hot_mutex_, block_size_series_, SeriesKey(sequence, {}),
                [&]() -> prometheus::Histogram& {
                  return block_size_.Add({{"sequence", s(sequence)}}, size_buckets());
                })
      ->Observe(static_cast<double>(size));
}

void Metrics::connection_opened(std::string_view frontend) {
  open_connections_.Add({{"frontend", s(frontend)}}).Increment();
  connections_.Add({{"frontend", s(frontend)}}).Increment();
}

void Metrics::connection_closed(std::string_view frontend) {
  open_connections_.Add({{"frontend", s(frontend)}}).Decrement();
}

void Metrics::auth_failure(std::string_view frontend) {
  auth_failures_.Add({{"frontend", s(frontend)}}).Increment();
}

void Metrics::audit_event(std::string_view event) {
  audit_events_.Add({{"event", s(event)}}).Increment();
}

void Metrics::error(std::string_view frontend, std::string_view code) {
  errors_.Add({{"frontend", s(frontend)}, {"code", s(code)}}).Increment();
}

void Metrics::request_latency(std::string_view frontend, std::string_view route, double seconds) {
  auto* histogram = cached_series(
      hot_mutex_, latency_series_, SeriesKey(frontend, route), [&]() -> prometheus::Histogram& {
        return request_seconds_.Add({{"frontend", s(frontend)}, {"route", s(route)}},
                                    latency_buckets());
      });
  histogram->Observe(seconds);
}

void Metrics::refresh_engine_locked() {
  const auto stats = committer_.stats();
  auto delta = [](std::uint64_t now, std::uint64_t before) {
    return static_cast<double>(now >= before ? now - before : 0);
  };
  durable_writes_.Add({}).Increment(delta(stats.commits, last_stats_.commits));
  durable_requests_.Add({}).Increment(delta(stats.requests, last_stats_.requests));
  durable_failures_.Add({}).Increment(delta(stats.failures, last_stats_.failures));
  durable_seconds_.Add({}).Increment(delta(stats.total_latency_ns, last_stats_.total_latency_ns) /
                                     1e9);
  durable_last_seconds_.Add({}).Set(static_cast<double>(stats.last_latency_ns) / 1e9);
  last_stats_ = stats;

  const auto now = clock_.now_unix_ms();
  std::set<std::string, std::less<>> live;
  for (const auto& info : tickets_.list()) {
    const auto& name = info.spec.name;
    live.insert(name);
    const Labels labels{{"sequence", name}};
    // A sequence first seen here was created at run time: its reservations count from its start.
    auto [it, fresh] = samples_.try_emplace(
        name, SequenceSample{now, 0, std::min(info.durable_ceiling, info.spec.start - 1), 0});
    auto& sample = it->second;
    auto& reserved = values_reserved_.Add(labels);
    if (info.durable_ceiling > sample.ceiling) {
      reserved.Increment(static_cast<double>((info.durable_ceiling - sample.ceiling) /
                                             std::max<std::uint64_t>(1, info.spec.increment)));
      sample.ceiling = info.durable_ceiling;
    }
    const auto dt_ms = now - sample.at_ms;
    if (!fresh && dt_ms >= kMinRateIntervalMs) {
      const double issued = delta(info.issued, sample.issued);
      const double rate = issued * 1000.0 / static_cast<double>(dt_ms);
      sample.rate_per_s = sample.rate_per_s == 0
                              ? rate
                              : kRateSmoothing * rate + (1 - kRateSmoothing) * sample.rate_per_s;
      sample.at_ms = now;
      sample.issued = info.issued;
    } else if (fresh) {
      sample.issued = info.issued;
    }
    const auto remaining = static_cast<double>(info.remaining);
    remaining_.Add(labels).Set(remaining);
    exhaustion_seconds_.Add(labels).Set(sample.rate_per_s > 0
                                            ? remaining / sample.rate_per_s
                                            : std::numeric_limits<double>::infinity());
    next_value_.Add(labels).Set(static_cast<double>(info.next_value));
    durable_ceiling_.Add(labels).Set(static_cast<double>(info.durable_ceiling));
  }
  // Dropped sequences: their gauges go away (counters stay, as Prometheus expects).
  for (auto it = samples_.begin(); it != samples_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    const Labels labels{{"sequence", it->first}};
    for (auto* family : {&remaining_, &exhaustion_seconds_, &next_value_, &durable_ceiling_}) {
      if (family->Has(labels)) family->Remove(&family->Add(labels));
    }
    it = samples_.erase(it);
  }
}

void Metrics::refresh_kinds_locked() {
  const auto now = clock_.now_unix_ms();
  std::map<std::string, SequenceKind, std::less<>> live;
  std::vector<KindReading> readings;
  for (const auto& [name, handle] : tickets_.handles()) {
    const SequenceKind kind = kind_of_handle(handle);
    const auto& families = kind_families_[static_cast<std::size_t>(kind)];
    if (families.empty()) continue;
    live.emplace(name, kind);
    readings.clear();
    kind_module(kind).read_metrics(handle, now, readings);
    for (const KindReading& r : readings) {
      const KindFamily& f = families.at(r.row);
      if (f.gauge != nullptr) {
        f.gauge->Add({{"sequence", name}}).Set(r.value);
        continue;
      }
      // Counters fed from running totals: add what grew since the last scrape.
      double& before = kind_totals_[name][{r.row, s(r.event)}];
      f.counter->Add({{"sequence", name}, {"event", s(r.event)}})
          .Increment(r.value > before ? r.value - before : 0);
      before = r.value;
    }
  }
  // Dropped sequences (or names now of another kind): their gauges go away, their counters
  // stay (as Prometheus expects) and count from zero if the name comes back.
  for (const auto& [name, kind] : kind_live_) {
    if (auto it = live.find(name); it != live.end() && it->second == kind) continue;
    const Labels labels{{"sequence", name}};
    for (const KindFamily& f : kind_families_[static_cast<std::size_t>(kind)]) {
      if (f.gauge != nullptr && f.gauge->Has(labels)) f.gauge->Remove(&f.gauge->Add(labels));
    }
    kind_totals_.erase(name);
  }
  kind_live_ = std::move(live);
}

void Metrics::refresh_workers_and_role_locked() {
  if (workers_ != nullptr) {
    for (const auto& name : workers_->pool_names()) {
      const auto status = workers_->status(name);
      if (!status) continue;
      worker_leases_.Add({{"pool", name}}).Set(static_cast<double>(status->live.size()));
      worker_pool_size_.Add({{"pool", name}}).Set(static_cast<double>(status->spec.size));
    }
  }
  if (gate_ != nullptr) {
    const auto view = gate_->view();
    for (const auto role : {Role::kFollower, Role::kLeader, Role::kDeposed}) {
      ha_role_.Add({{"role", s(role_name(role))}}).Set(view.role == role ? 1 : 0);
    }
    ha_term_.Add({}).Set(static_cast<double>(view.revision));
    ha_serving_.Add({}).Set(gate_->serving() ? 1 : 0);
  }
}

std::string Metrics::serialize() {
  std::lock_guard lock(scrape_mutex_);
  refresh_engine_locked();
  refresh_kinds_locked();
  refresh_workers_and_role_locked();
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace ticketd::metrics
