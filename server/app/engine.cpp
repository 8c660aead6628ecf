#include "server/app/engine.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <utility>

#include "server/app/config_mapping.h"
#include "server/base/exit_code.h"
#include "server/base/log.h"
#include "server/base/parse_int.h"
#include "server/core/sequence_spec.h"
#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "server/core/uuidv7_generator.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {
namespace {

using std::chrono::milliseconds;

// etcd refuses transactions of more than --max-txn-ops operations (128 by default).
constexpr std::size_t kEtcdMaxMutationsPerCommit = 100;

DetailedResult<std::shared_ptr<SnowflakeGenerator>> open_snowflake(
    const std::string& name, const config::SnowflakeConfig& sf, CounterStore& store,
    GroupCommitter& committer, const Clock& clock, std::shared_ptr<const WorkerLease> lease) {
  if (sf.worker_source == config::WorkerSource::kEtcd && !lease) {
    return Error{TicketErrc::kInvalidArgument,
                 "snowflake.worker_id comes from etcd, and no Snowflake sequence in the config "
                 "file made this instance lease one"};
  }
  SnowflakeOptions o;
  o.name = name;
  o.layout.epoch_unix_ms = sf.epoch_unix_ms;
  o.layout.time_bits = sf.time_bits;
  o.layout.worker_bits = sf.worker_bits;
  o.layout.sequence_bits = sf.sequence_bits;
  o.layout.time_unit_ms = sf.time_unit.count();
  o.layout.order = to_core(sf.order);
  o.worker_id = sf.worker_id;
  if (sf.worker_source == config::WorkerSource::kEnv) {
    // A StatefulSet pod index, for example; it must be a plain non-negative integer.
    const char* v = std::getenv(sf.worker_env.c_str());
    const std::string text = v == nullptr ? "" : v;
    const auto id = parse_u64(text);
    if (!id) {
      return Error{TicketErrc::kInvalidArgument,
                   "snowflake.worker_id: environment variable " + sf.worker_env +
                       " must hold the worker id, got '" + text + "'"};
    }
    o.worker_id = *id;
  }
  o.policy = to_core(sf.clock_policy);
  o.max_backward_ms = sf.max_backward.count();
  o.lease = std::move(lease);
  return SnowflakeGenerator::open(std::move(o), store, committer, clock);
}

// Refuses to start on what will not heal by waiting: etcd's certificate not trusted, ours
// refused, wrong credentials, no rights on the prefix. An etcd that is merely unreachable is
// waited for (the election and the lease keep trying), as before.
std::optional<std::string> etcd_access_problem(etcd::EtcdClient& client,
                                               const std::string& prefix) {
  auto r = client.check_access(prefix);
  if (r) return std::nullopt;
  const auto& code = r.error().code;
  for (auto fatal : {etcd::EtcdErrc::kTls, etcd::EtcdErrc::kAuth, etcd::EtcdErrc::kPermissionDenied,
                     etcd::EtcdErrc::kInvalidArgument}) {
    if (code == fatal) return "etcd refuses access to " + prefix + ": " + r.error().message;
  }
  log::warn("etcd not reachable at start (waiting for it): " + r.error().message);
  return std::nullopt;
}

std::string owner_description(const config::Config& c) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string("host=") + host + " pid=" + std::to_string(getpid()) +
         " mysql=" + c.mysql.listen.to_string() + " http=" + c.http.listen.to_string();
}

// Claims a worker ID before any generator opens (ticketd does not start without one), then
// renews it in the background.
DetailedResult<void> start_etcd_worker(const config::Config& c, const Clock& clock,
                                       EtcdWorker& out) {
  const config::SnowflakeConfig& sf = c.snowflake;
  const milliseconds ttl = sf.etcd_ttl;
  auto client_options = etcd_client_options(sf.etcd_endpoints, sf.etcd_access);
  // Two calls (keepalive, mark) must fit well inside one renewal interval (TTL/3).
  client_options.timeout = std::clamp<milliseconds>(ttl / 8, milliseconds(200), milliseconds(2000));
  client_options.connect_timeout = std::min(client_options.timeout, milliseconds(300));
  auto client = etcd::EtcdClient::create(std::move(client_options));
  if (!client) return client.error();
  out.client = std::move(*client);
  if (auto problem = etcd_access_problem(*out.client, sf.etcd_prefix)) {
    return Error{TicketErrc::kInvalidArgument, "snowflake.worker_id: " + *problem};
  }
  EtcdWorkerLeaseOptions o;
  o.prefix = sf.etcd_prefix;
  o.ttl_s = sf.etcd_ttl.count();
  o.margin_ms = (sf.etcd_margin != milliseconds(0) ? sf.etcd_margin : ttl / 4).count();
  o.renew_interval_ms = (ttl / 3).count();
  o.worker_bits = sf.worker_bits;
  o.owner = owner_description(c);
  out.lease = std::make_shared<EtcdWorkerLease>(*out.client, std::move(o), clock);
  if (auto r = out.lease->claim_within(std::max(ttl, milliseconds(5000))); !r) {
    return Error{r.error().code,
                 "snowflake.worker_id: no worker ID from etcd: " + r.error().message};
  }
  out.lease->start();
  return {};
}

StartupResult<Storage> open_etcd_storage(const config::StorageConfig& st) {
  const milliseconds ttl = st.leader_ttl;
  auto make = [&](milliseconds timeout) {
    auto o = etcd_client_options(st.endpoints, st.access);
    o.timeout = timeout;
    o.connect_timeout = std::min(o.timeout, milliseconds(300));
    return etcd::EtcdClient::create(std::move(o));
  };
  // A keepalive must fit well inside one renewal interval (TTL/3).
  auto election = make(std::clamp<milliseconds>(ttl / 6, milliseconds(200), milliseconds(2000)));
  if (!election) return StartupError{ExitCode::kFailed, "storage: " + election.error().message};
  auto store = make(std::clamp<milliseconds>(ttl / 2, milliseconds(500), milliseconds(3000)));
  if (!store) return StartupError{ExitCode::kFailed, "storage: " + store.error().message};
  if (auto problem = etcd_access_problem(**store, st.prefix)) {
    return StartupError{ExitCode::kFailed, "storage: " + *problem};
  }
  Storage out;
  out.election_client = std::move(*election);
  out.store_client = std::move(*store);
  out.etcd_store =
      std::make_unique<etcd::EtcdCounterStore>(*out.store_client, etcd::EtcdLayout{st.prefix});
  out.store = out.etcd_store.get();
  return out;
}

// The data directory is locked and holds the data.
StartupResult<Storage> open_rocksdb_storage(const std::string& data_dir,
                                            const std::string& external_mark) {
  Storage out;
  auto acquired = DataDirLock::acquire(data_dir);
  if (!acquired) return StartupError{ExitCode::kFailed, acquired.error().message};
  out.lock.emplace(std::move(*acquired));
  auto opened =
      RocksDbCounterStore::open(data_dir, StoreMarks{MarkPolicy::kRequire, external_mark});
  if (!opened) return StartupError{ExitCode::kFailed, opened.error().message};
  out.rocksdb = std::move(*opened);
  out.store = out.rocksdb.get();
  return out;
}

}  // namespace

Engine::Engine(const config::Config& config, Storage storage)
    : config_(config),
      ha_(config.storage.engine == config::StorageEngine::kEtcd),
      storage_(std::move(storage)),
      committer_(*storage_.store, ha_ ? kEtcdMaxMutationsPerCommit : 0),
      service_(*storage_.store, committer_, clock_),
      rates_(service_, committer_, clock_),
      retries_(clock_),
      store_reads_(clock_),
      workers_(*storage_.store, committer_, clock_) {
  // Sequences of every kind can be created at run time; their Snowflake generators use the
  // server's layout and worker ID. With the etcd engine their high-water marks are fenced
  // writes like every other, so a deposed leader cannot raise one.
  RuntimeKinds runtime{&clock_, &store_reads_, nullptr, &retries_};
  // ULID sequences follow the server's clock policy (snowflake.clock), as Snowflake ones do.
  runtime.clock_policy = to_core(config_.snowflake.clock_policy);
  runtime.max_backward_ms = config_.snowflake.max_backward.count();
  runtime.open_snowflake = [this](const std::string& name) {
    return open_snowflake(name, config_.snowflake, *storage_.store, committer_, clock_,
                          etcd_worker_.lease);
  };
  service_.enable_runtime_kinds(std::move(runtime));
}

StartupResult<std::unique_ptr<Engine>> Engine::open(const config::Config& config) {
  auto storage = config.storage.engine == config::StorageEngine::kEtcd
                     ? open_etcd_storage(config.storage)
                     : open_rocksdb_storage(config.data_dir, config.durability.external_mark);
  if (!storage) return storage.error();
  std::unique_ptr<Engine> engine(new Engine(config, std::move(*storage)));
  // The worker ID from etcd is this instance's whatever its role: claimed before anything.
  if (auto r = engine->start_worker_lease(); !r) return r.error();
  if (!engine->ha_) {
    if (auto r = engine->load_all(); !r) return r.error();
  }
  return engine;
}

// Sequences of every kind, Snowflake generators above their stored marks, and worker pools
// with their stored leases: at start with RocksDB, after winning the election with etcd.
StartupResult<void> Engine::load_all() {
  if (auto r = load(); !r) return StartupError{ExitCode::kFailed, r.error().message};
  if (auto r = open_snowflakes(); !r) return r.error();
  if (auto r = add_worker_pools(); !r) return r.error();
  return {};
}

// Loads every sequence and makes the configured ones exist: at start with RocksDB, after
// winning the election with etcd (so a new leader continues above every stored ceiling).
DetailedResult<void> Engine::load() {
  service_.accept_not_in_backup(config_.force.not_in_backup);
  if (auto r = service_.load(); !r) {
    return Error{r.error().code, "loading sequences: " + r.error().message};
  }
  const auto named = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const auto& s : config_.sequences) {
    // Snowflake sequences open once the worker ID is known: open_snowflakes().
    if (kind_module(s.kind).opens_after_worker_id()) continue;
    const ConfigForce force{.grid = named(config_.force.grid_change, s.name),
                            .rate_raise = named(config_.force.rate_raise, s.name)};
    if (auto r = service_.configure(to_definition(s), force); !r) {
      return Error{r.error().code, "config sequence '" + s.name + "': " + r.error().message};
    }
  }
  if (auto r = rates_.load(*storage_.store); !r) {
    return Error{r.error().code, "loading issue rates: " + r.error().message};
  }
  return {};
}

DetailedResult<void> Engine::take_over(std::int64_t revision) {
  // Every write from here on is fenced on this term, and every read sees what the previous
  // leader committed (its writes all precede this term's leader key). A Snowflake generator
  // opened now resumes above the previous leader's durable high-water mark, so it waits past
  // every tick that leader may have used; pool leases keep their absolute expiry times.
  storage_.etcd_store->set_fence(revision);
  if (auto r = load_all(); !r) return Error{TicketErrc::kStorageFailed, r.error().message};
  return {};
}

StartupResult<void> Engine::start_worker_lease() {
  const bool any_snowflake =
      std::any_of(config_.sequences.begin(), config_.sequences.end(),
                  [](const auto& s) { return kind_module(s.kind).opens_after_worker_id(); });
  if (any_snowflake && config_.snowflake.worker_source == config::WorkerSource::kEtcd) {
    if (auto r = start_etcd_worker(config_, clock_, etcd_worker_); !r) {
      return StartupError{ExitCode::kFailed, r.error().message};
    }
  }
  return {};
}

void Engine::close_time_marks() {
  for (const auto& [name, handle] : service_.handles()) {
    if (auto r = kind_module(handle).close(handle); !r) {
      log::warn(r.error().message, {{"sequence", name}});
    }
  }
}

StartupResult<void> Engine::open_snowflakes() {
  for (const auto& s : config_.sequences) {
    if (!kind_module(s.kind).opens_after_worker_id()) continue;
    auto generator = open_snowflake(s.name, config_.snowflake, *storage_.store, committer_, clock_,
                                    etcd_worker_.lease);
    if (!generator) {
      // A layout or worker ID the config got wrong is a configuration error; storage and
      // worker-ID leasing failures are runtime failures.
      return StartupError{generator.error().code == TicketErrc::kInvalidArgument
                              ? ExitCode::kRefused
                              : ExitCode::kFailed,
                          "config sequence '" + s.name + "': " + generator.error().message};
    }
    if (auto r = service_.add_snowflake(std::move(*generator), retries_, clock_); !r) {
      return StartupError{ExitCode::kFailed,
                          "config sequence '" + s.name + "': " + r.error().message};
    }
  }
  if (auto r = service_.open_deferred_definitions(); !r)
    return StartupError{ExitCode::kFailed, r.error().message};
  return {};
}

StartupResult<void> Engine::add_worker_pools() {
  for (const auto& p : config_.worker_pools) {
    if (auto r = workers_.add_pool(to_spec(p)); !r) {
      return StartupError{ExitCode::kFailed,
                          "config worker pool '" + p.name + "': " + r.error().message};
    }
  }
  return {};
}

void Engine::stop() {
  // Lower each Snowflake and ULID mark to the newest ID, so a restart barely waits (done
  // already, before resigning, by an etcd leader: then this does nothing).
  close_time_marks();
  retries_.stop();
  store_reads_.stop();
  // Revoke the worker-ID lease: the ID is free at once, its mark stays for the next holder.
  if (etcd_worker_.lease) etcd_worker_.lease->stop();

  // The open issue-rate window, so a backup of the stopped server knows the last run's rate.
  if (auto r = sample_and_wait(rates_); !r) {
    log::warn("issue rates: the last window was not written: " + r.error().message);
  }
  // Everything accepted has been answered or failed; commit what is queued, then close.
  committer_.stop();
  // Sessions still queued in the engine are answered now, while the io_context their
  // callbacks hold timers of is still alive.
  const Error stopping{TicketErrc::kShuttingDown, "ticketd is shutting down"};
  for (const auto& h : service_.with_deadlines()) kind_module(h).fail_waiters(h, stopping);
}

}  // namespace ticketd
