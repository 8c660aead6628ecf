// The storage engine and the services built on it, opened once at start-up.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "config/config.h"
#include "server/app/data_dir_lock.h"
#include "server/app/startup_error.h"
#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/issue_rate.h"
#include "server/core/ticket_service.h"
#include "server/core/timer_queue.h"
#include "server/core/worker_pool_service.h"
#include "server/etcd/etcd_worker_lease.h"
#include "storage/counter_store.h"
#include "storage/etcd/etcd_client.h"
#include "storage/etcd/etcd_counter_store.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {

/// Where the data lives. RocksDB: the locked data directory and the store in it. etcd: the
/// store's client, the election's own client (a keepalive must never queue behind a commit) and
/// the fenced store; data_dir is not used.
struct Storage {
  std::optional<DataDirLock> lock;
  std::unique_ptr<RocksDbCounterStore> rocksdb;
  std::unique_ptr<etcd::EtcdClient> store_client;
  std::unique_ptr<etcd::EtcdClient> election_client;
  std::unique_ptr<etcd::EtcdCounterStore> etcd_store;
  CounterStore* store = nullptr;  // the one of the two in use
};

/// The client and the lease keeper behind `snowflake.worker_id: {source: etcd}`.
struct EtcdWorker {
  std::unique_ptr<etcd::EtcdClient> client;
  std::shared_ptr<EtcdWorkerLease> lease;  // references *client: declared after it

  ~EtcdWorker() {
    if (lease) lease->stop();
  }
};

/// The storage engine and what is built on it: the store, the group committer, the registry of
/// sequences with its Snowflake generators and their worker ID, the worker-ID pools, and the
/// threads that retry Snowflake calls and read the store for the front ends. Built by open()
/// before the io_context and destroyed after it, since sessions reference the services; members
/// are declared so that each is destroyed before what it references.
/// Thread safety: open(), take_over() (from the election's thread) and stop() are called by the
/// daemon; the services it hands out guard themselves.
class Engine {
 public:
  /// Opens the store and builds the services. With RocksDB the sequences are loaded now; with
  /// etcd take_over() loads them once this instance wins the election.
  [[nodiscard]] static StartupResult<std::unique_ptr<Engine>> open(const config::Config& config);

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// storage.engine etcd, on winning the election: fences the store on the new term, then loads
  /// every sequence, so the new leader continues above every stored ceiling, opens the
  /// Snowflake generators above the stored high-water marks and the worker pools with their
  /// stored leases. Called once per process (a deposed leader restarts).
  [[nodiscard]] DetailedResult<void> take_over(std::int64_t revision);

  /// Closes every sequence through its kind's module: each Snowflake high-water mark and ULID
  /// mark comes down to the newest ID, and those kinds issue no more. An etcd leader calls it
  /// before resigning, so the next leader barely waits.
  void close_time_marks();

  /// After the io_context's threads joined: closes the Snowflakes, stops the background threads,
  /// revokes the worker-ID lease, commits what is queued and answers gapless waiters.
  void stop();

  [[nodiscard]] bool ha() const { return ha_; }
  [[nodiscard]] CounterStore& store() { return *storage_.store; }
  [[nodiscard]] GroupCommitter& committer() { return committer_; }
  [[nodiscard]] TicketService& service() { return service_; }
  [[nodiscard]] const Clock& clock() const { return clock_; }
  [[nodiscard]] TimerQueue& store_reads() { return store_reads_; }
  [[nodiscard]] WorkerPoolService& workers() { return workers_; }
  [[nodiscard]] IssueRateTracker& rates() { return rates_; }
  /// The data directory's lock; null with the etcd engine. Checked by the background tasks.
  [[nodiscard]] DataDirLock* data_dir_lock() { return storage_.lock ? &*storage_.lock : nullptr; }
  /// The RocksDB store (checkpoints for backups); null with the etcd engine.
  [[nodiscard]] RocksDbCounterStore* rocksdb() { return storage_.rocksdb.get(); }
  /// The election's etcd client; null with RocksDB.
  [[nodiscard]] etcd::EtcdClient* election_client() { return storage_.election_client.get(); }

 private:
  Engine(const config::Config& config, Storage storage);

  [[nodiscard]] StartupResult<void> load_all();
  [[nodiscard]] DetailedResult<void> load();
  [[nodiscard]] StartupResult<void> start_worker_lease();
  [[nodiscard]] StartupResult<void> open_snowflakes();
  [[nodiscard]] StartupResult<void> add_worker_pools();

  const config::Config& config_;
  const bool ha_;
  Storage storage_;
  GroupCommitter committer_;
  TicketService service_;
  SystemClock clock_;
  // Issue rates of the ticket sequences, kept for backups (loaded with the sequences).
  IssueRateTracker rates_;
  TimerQueue retries_;
  // Store reads that front ends ask for (listing leases) run here, never on an I/O thread.
  TimerQueue store_reads_;
  EtcdWorker etcd_worker_;
  // Worker-ID pools; their leases are reloaded from the store with their absolute expiry.
  WorkerPoolService workers_;
};

}  // namespace ticketd
