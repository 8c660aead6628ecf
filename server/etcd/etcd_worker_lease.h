// A Snowflake worker ID leased from etcd: claimed at start, kept alive in the background.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/worker_lease.h"
#include "storage/etcd/etcd_client.h"

namespace ticketd {

struct EtcdWorkerLeaseOptions {
  /// Worker keys are `<prefix><id>` (decimal, bound to the lease); each ID's high-water mark
  /// is `<prefix><id>/hwm`, bound to no lease, so it outlives its holder.
  std::string prefix = "/ticketd/workers/";
  std::int64_t ttl_s = 10;
  /// IDs stop this long before the lease could expire (measured from when a renewal was sent).
  std::int64_t margin_ms = 2500;
  /// Renewals (keepalive + mark) run this often; at most (ttl - margin) / 2 is sensible.
  std::int64_t renew_interval_ms = 3333;
  int worker_bits = 10;  // IDs are 0 .. 2^worker_bits - 1
  std::string owner;     // the worker key's value: who holds it, for operators
};

/// Counters for logs, metrics and the figures in docs/snowflake.md.
struct EtcdWorkerLeaseStats {
  std::uint64_t claims = 0;
  std::uint64_t claim_failures = 0;
  std::uint64_t renewals = 0;
  std::uint64_t renewal_failures = 0;
  std::uint64_t losses = 0;          // the lease expired or the worker key vanished
  std::int64_t last_claim_us = 0;    // wall time of the last successful claim (grant to mark)
  std::int64_t last_renewal_us = 0;  // wall time of the last successful keepalive + mark write
};

/// Implements WorkerLease with etcd. claim() takes the lowest free worker ID: a txn that puts
/// `<prefix><id>` with a fresh lease only if the key does not exist (create_revision == 0) and
/// reads the ID's mark in the same revision; then the mark is raised to now + TTL with a txn
/// fenced on the worker key's create_revision, so only the current holder ever writes it.
/// A background thread renews every renew_interval_ms: keepalive, then the fenced mark. When
/// etcd says the lease is gone (or the fence fails) the ID is dropped and a new one claimed;
/// while etcd is unreachable the state simply stops being renewed, and the generator refuses
/// IDs once valid_until passes on its clock. stop() revokes the lease (the ID is free at once;
/// its mark stays).
///
/// Owns its thread; the client must outlive it. Thread safety: all members may be called
/// concurrently (claim() and renew() are meant for the thread and for tests).
class EtcdWorkerLease final : public WorkerLease {
 public:
  EtcdWorkerLease(etcd::EtcdClient& client, EtcdWorkerLeaseOptions options, const Clock& clock);
  ~EtcdWorkerLease() override;
  EtcdWorkerLease(const EtcdWorkerLease&) = delete;
  EtcdWorkerLease& operator=(const EtcdWorkerLease&) = delete;

  [[nodiscard]] WorkerLeaseState state() const override;

  /// One claim attempt (grant, list, claim txn, mark). Errors: etcd's, or
  /// StorageErrc::kFenced when every worker ID is taken or the claim was lost at once.
  [[nodiscard]] DetailedResult<void> claim();
  /// Claims, retrying (this thread sleeps: start-up only) until it succeeds or `budget` ends.
  [[nodiscard]] DetailedResult<void> claim_within(std::chrono::milliseconds budget);
  /// One renewal: keepalive, then the fenced mark. On EtcdErrc::kLeaseNotFound or a failed
  /// fence the lease is dropped (state().held becomes false).
  [[nodiscard]] DetailedResult<void> renew();

  /// Starts the renewal thread (after a first claim, or it claims itself).
  void start();
  /// Stops the thread, revokes the lease, and drops it. Idempotent.
  void stop();

  [[nodiscard]] EtcdWorkerLeaseStats stats() const;
  [[nodiscard]] std::string worker_key(std::uint64_t id) const;
  [[nodiscard]] std::string mark_key(std::uint64_t id) const;

 private:
  void run();
  void drop_locked(const std::string& why);
  [[nodiscard]] DetailedResult<bool> write_mark(std::uint64_t id, std::int64_t create_revision,
                                                std::int64_t mark_unix_ms);
  void revoke_quietly(std::int64_t lease_id);

  // A worker ID that claim() has won and marked, before it is published in state_.
  struct WorkerClaim {
    std::uint64_t id = 0;
    std::int64_t lease_id = 0;
    std::int64_t ttl_ms = 0;           // as etcd granted it
    std::int64_t create_revision = 0;  // of the worker key: the fence of every mark write
    std::int64_t previous_mark = 0;    // the ID's mark before this claim (0: none)
    std::int64_t mark = 0;             // the mark written for this holder
  };
  // The worker IDs whose keys exist under the prefix now.
  [[nodiscard]] DetailedResult<std::set<std::uint64_t>> taken_worker_ids();
  // Puts the worker key of `id` with `lease_id` if it does not exist, and reads the ID's mark
  // in the same revision.
  [[nodiscard]] DetailedResult<etcd::TxnResponse> claim_txn(std::uint64_t id,
                                                            std::int64_t lease_id);
  // The mark that claim_txn read for `id` (0 when it has none); kCorruption if it does not decode.
  [[nodiscard]] DetailedResult<std::int64_t> decode_previous_mark(
      std::uint64_t id, const etcd::TxnResponse& claimed) const;
  // Makes `c` the lease this object holds (state_, stats_); returns the claim's wall time in µs.
  std::int64_t publish_claim(const WorkerClaim& c, std::int64_t t0,
                             std::chrono::steady_clock::time_point started);
  // Tells operators which ID was claimed, with which lease, TTL and previous mark, how fast.
  void log_claim(const WorkerClaim& c, std::int64_t took_us) const;

  etcd::EtcdClient& client_;
  const EtcdWorkerLeaseOptions options_;
  const Clock& clock_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  WorkerLeaseState state_;
  std::int64_t lease_id_ = 0;
  std::int64_t create_revision_ = 0;  // of our worker key: the fence of every mark write
  std::int64_t granted_ttl_ms_ = 0;
  bool stopping_ = false;
  EtcdWorkerLeaseStats stats_;
  std::thread thread_;
};

}  // namespace ticketd
