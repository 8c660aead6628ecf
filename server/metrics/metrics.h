// Prometheus metrics of the daemon: counters fed by the front ends, engine state read at scrape.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/base/string_hash.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace ticketd {
class ServingGate;
class WorkerPoolService;
}  // namespace ticketd

namespace ticketd::metrics {

/// Owns a prometheus::Registry with every ticketd metric. Front ends report events through the
/// named members; serialize() reads the engine (GroupCommitter::stats(), TicketService::list())
/// and renders the Prometheus text format, which the HTTP front end serves at /metrics. This is
/// the only user of prometheus-cpp. It observes every commit of the GroupCommitter (latency and
/// group-size histograms) from construction to destruction. The service, committer, clock and
/// whatever watch() names must outlive it. Thread safety: all members may be called
/// concurrently.
class Metrics {
 public:
  Metrics(const TicketService& tickets, GroupCommitter& committer, const Clock& clock);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// `n` values handed out (single tickets and leased blocks alike).
  void ids_issued(std::string_view sequence, std::string_view frontend, std::uint64_t n);
  /// One block of `size` values leased (also report its values through ids_issued).
  void block_leased(std::string_view sequence, std::string_view frontend, std::uint64_t size);
  void connection_opened(std::string_view frontend);
  void connection_closed(std::string_view frontend);
  void auth_failure(std::string_view frontend);
  /// One audit event (login_failed, sequence_dropped, ...), by its event word.
  void audit_event(std::string_view event);
  /// An error returned to a client; `code` is the front end's error code ("not_found", "1146").
  void error(std::string_view frontend, std::string_view code);
  void request_latency(std::string_view frontend, std::string_view route, double seconds);

  /// Also exports the live leases of every worker-ID pool of `workers` and, when `gate` is set
  /// (storage.engine etcd), this instance's role, term and whether it serves. Call it before
  /// serving; either may be null.
  void watch(const WorkerPoolService* workers, const ServingGate* gate);

  /// The Prometheus text exposition format (version 0.0.4).
  [[nodiscard]] std::string serialize();

 private:
  struct SequenceSample {
    std::int64_t at_ms = 0;
    std::uint64_t issued = 0;
    std::uint64_t ceiling = 0;  // durable ceiling
    double rate_per_s = 0;      // smoothed issue rate
  };
  void refresh_engine_locked();
  /// Every sequence's readings of its kind's metrics (KindModule::metric_rows).
  void refresh_kinds_locked();
  void refresh_workers_and_role_locked();
  void on_commit(const GroupCommitter::CommitSample& sample);

  const TicketService& tickets_;
  GroupCommitter& committer_;
  const Clock& clock_;
  std::unique_ptr<prometheus::Registry> registry_;

  prometheus::Family<prometheus::Counter>& ids_issued_;
  prometheus::Family<prometheus::Counter>& blocks_leased_;
  prometheus::Family<prometheus::Histogram>& block_size_;
  prometheus::Family<prometheus::Gauge>& open_connections_;
  prometheus::Family<prometheus::Counter>& connections_;
  prometheus::Family<prometheus::Counter>& auth_failures_;
  prometheus::Family<prometheus::Counter>& audit_events_;
  prometheus::Family<prometheus::Counter>& errors_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Counter>& durable_writes_;
  prometheus::Family<prometheus::Counter>& durable_requests_;
  prometheus::Family<prometheus::Counter>& durable_failures_;
  prometheus::Family<prometheus::Counter>& durable_seconds_;
  prometheus::Family<prometheus::Gauge>& durable_last_seconds_;
  prometheus::Family<prometheus::Counter>& values_reserved_;
  prometheus::Family<prometheus::Gauge>& remaining_;
  prometheus::Family<prometheus::Gauge>& exhaustion_seconds_;
  prometheus::Family<prometheus::Gauge>& next_value_;
  prometheus::Family<prometheus::Gauge>& durable_ceiling_;
  prometheus::Family<prometheus::Histogram>& commit_seconds_;
  prometheus::Family<prometheus::Histogram>& commit_group_size_;
  prometheus::Family<prometheus::Gauge>& worker_leases_;
  prometheus::Family<prometheus::Gauge>& worker_pool_size_;
  prometheus::Family<prometheus::Gauge>& ha_role_;
  prometheus::Family<prometheus::Gauge>& ha_term_;
  prometheus::Family<prometheus::Gauge>& ha_serving_;
  // The unlabelled commit histograms, observed on the committer thread (never removed).
  prometheus::Histogram* commit_seconds_series_ = nullptr;
  prometheus::Histogram* commit_group_size_series_ = nullptr;

  // Hot-path series, looked up once: Family::Add builds and hashes a label map on every call,
  // which cost more than the ticket itself. Counters and histograms are never removed, so the
  // pointers stay valid.
  std::shared_mutex hot_mutex_;
  // By "label\0label" (found with a view: recording a sample allocates nothing).
  StringMap<prometheus::Counter*> issued_series_;
  StringMap<prometheus::Histogram*> latency_series_;
  StringMap<prometheus::Counter*> blocks_series_;
  StringMap<prometheus::Histogram*> block_size_series_;  // by sequence alone

  std::mutex scrape_mutex_;  // one scrape at a time; guards what follows
  GroupCommitter::Stats last_stats_;
  std::map<std::string, SequenceSample, std::less<>> samples_;
  // Each kind's metric families, by kind and then row of its module's metric_rows().
  struct KindFamily {
    prometheus::Family<prometheus::Counter>* counter = nullptr;
    prometheus::Family<prometheus::Gauge>* gauge = nullptr;
  };
  std::array<std::vector<KindFamily>, std::size(kAllSequenceKinds)> kind_families_;
  // The counters' running totals at the last scrape, by sequence and then (row, event).
  std::map<std::string, std::map<std::pair<std::size_t, std::string>, double>, std::less<>>
      kind_totals_;
  // The sequences the last scrape exported, with their kinds.
  std::map<std::string, SequenceKind, std::less<>> kind_live_;
  const WorkerPoolService* workers_ = nullptr;
  const ServingGate* gate_ = nullptr;
};

}  // namespace ticketd::metrics
