#include "server/app/daemon.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "server/app/data_dir_lock.h"
#include "server/base/log.h"
#include "server/core/auth_throttle.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/lease_log.h"
#include "server/core/retry_scheduler.h"
#include "server/core/serving_gate.h"
#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_service.h"
#include "server/core/uuidv7_generator.h"
#include "server/core/worker_pool_service.h"
#include "server/etcd/etcd_leader_election.h"
#include "server/etcd/etcd_worker_lease.h"
#include "server/http/http_session.h"
#include "server/metrics/metrics.h"
#include "server/mysql/metrics_hooks.h"
#include "server/mysql/mysql_session.h"
#include "server/mysql/query_executor.h"
#include "server/net/listener.h"
#include "server/net/session_registry.h"
#include "storage/etcd/etcd_counter_store.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {
namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

SequenceSpec to_spec(const config::SequenceConfig& s) {
  SequenceSpec spec;
  spec.name = s.name;
  spec.kind = parse_kind(s.kind).value_or(SequenceKind::kTicket);
  spec.start = s.start;
  spec.increment = s.increment;
  spec.offset = s.offset;
  spec.max_value = s.max_value == 0 ? kDefaultMaxValue : s.max_value;
  spec.cache = s.cache;
  return spec;
}

mysql::ServerSettings mysql_settings(const config::Config& c) {
  mysql::ServerSettings s;
  s.database = c.mysql.database;
  s.auto_increment_increment = c.defaults.auto_increment_increment;
  s.auto_increment_offset = c.defaults.auto_increment_offset;
  s.default_cache = c.defaults.cache;
  s.max_allowed_packet = c.mysql.max_allowed_packet;
  s.wait_timeout_s = c.mysql.wait_timeout_s;
  s.net_read_timeout_s = c.mysql.net_read_timeout_s;
  s.max_connections = c.mysql.max_connections;
  s.max_prepared_stmt_count = c.mysql.max_prepared_stmt_count;
  s.connection_memory_limit = c.mysql.connection_memory_limit;
  s.global_connection_memory_limit = c.mysql.global_connection_memory_limit;
  return s;
}

DetailedResult<std::shared_ptr<SnowflakeGenerator>> open_snowflake(
    const config::SequenceConfig& s, const config::SnowflakeConfig& sf, CounterStore& store,
    GroupCommitter& committer, const Clock& clock, std::shared_ptr<const WorkerLease> lease) {
  SnowflakeOptions o;
  o.name = s.name;
  o.layout.epoch_unix_ms = sf.epoch_unix_ms;
  o.layout.time_bits = sf.time_bits;
  o.layout.worker_bits = sf.worker_bits;
  o.layout.sequence_bits = sf.sequence_bits;
  o.layout.time_unit_ms = sf.time_unit_ms;
  o.layout.order = sf.order == "time_sequence_worker" ? SnowflakeFieldOrder::kTimeSequenceWorker
                                                      : SnowflakeFieldOrder::kTimeWorkerSequence;
  o.worker_id = sf.worker_id;
  if (sf.worker_source == "env") {
    // A StatefulSet pod index, for example; it must be a plain non-negative integer.
    const char* v = std::getenv(sf.worker_env.c_str());
    std::uint64_t id = 0;
    const std::string text = v == nullptr ? "" : v;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
      return Error{TicketErrc::kInvalidArgument,
                   "snowflake.worker_id: environment variable " + sf.worker_env +
                       " must hold the worker id, got '" + text + "'"};
    }
    o.worker_id = id;
  }
  o.policy = sf.clock_policy == "fail"      ? ClockPolicy::kFail
             : sf.clock_policy == "logical" ? ClockPolicy::kLogical
                                            : ClockPolicy::kWait;
  o.max_backward_ms = static_cast<std::int64_t>(sf.max_backward_ms);
  o.lease = std::move(lease);
  return SnowflakeGenerator::open(std::move(o), store, committer, clock);
}

// The client and the lease keeper behind `snowflake.worker_id: {source: etcd}`.
struct EtcdWorker {
  std::unique_ptr<etcd::EtcdClient> client;
  std::shared_ptr<EtcdWorkerLease> lease;  // references *client: declared after it

  ~EtcdWorker() {
    if (lease) lease->stop();
  }
};

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
  const auto ttl_ms = static_cast<std::int64_t>(sf.etcd_ttl_s) * 1000;
  etcd::EtcdClientOptions client_options;
  client_options.endpoints = sf.etcd_endpoints;
  // Two calls (keepalive, mark) must fit well inside one renewal interval (TTL/3).
  client_options.timeout =
      std::chrono::milliseconds(std::clamp<std::int64_t>(ttl_ms / 8, 200, 2000));
  client_options.connect_timeout = std::min(client_options.timeout, std::chrono::milliseconds(300));
  auto client = etcd::EtcdClient::create(std::move(client_options));
  if (!client) return client.error();
  out.client = std::move(*client);
  EtcdWorkerLeaseOptions o;
  o.prefix = sf.etcd_prefix;
  o.ttl_s = static_cast<std::int64_t>(sf.etcd_ttl_s);
  o.margin_ms = sf.etcd_margin_ms != 0 ? static_cast<std::int64_t>(sf.etcd_margin_ms) : ttl_ms / 4;
  o.renew_interval_ms = ttl_ms / 3;
  o.worker_bits = sf.worker_bits;
  o.owner = owner_description(c);
  out.lease = std::make_shared<EtcdWorkerLease>(*out.client, std::move(o), clock);
  if (auto r =
          out.lease->claim_within(std::chrono::milliseconds(std::max<std::int64_t>(ttl_ms, 5000)));
      !r) {
    return Error{r.error().code,
                 "snowflake.worker_id: no worker ID from etcd: " + r.error().message};
  }
  out.lease->start();
  return {};
}

// Keeps every Snowflake high-water mark ahead of the clock (a durable write every few hundred
// ms per generator, group-committed).
asio::awaitable<void> refresh_high_water_marks(asio::io_context& ioc, TicketService& service) {
  asio::steady_timer timer(ioc);
  for (;;) {
    for (const auto& g : service.snowflakes()) (void)g->refresh();  // false: still fresh
    timer.expires_after(std::chrono::milliseconds(250));
    auto [ec] = co_await timer.async_wait(net::use_nothrow);
    if (ec) co_return;
  }
}

// Ends gapless reservations whose TTL ran out and strict-order waits that timed out.
asio::awaitable<void> expire_gapless_reservations(asio::io_context& ioc, TicketService& service) {
  asio::steady_timer timer(ioc);
  for (;;) {
    // Read each time: with the etcd engine the sequences appear once this instance leads.
    for (const auto& g : service.gapless()) g->expire_due();
    timer.expires_after(std::chrono::milliseconds(20));
    auto [ec] = co_await timer.async_wait(net::use_nothrow);
    if (ec) co_return;
  }
}

GaplessOptions gapless_options(const config::SequenceConfig& s) {
  GaplessOptions o;
  o.order = s.order == "strict" ? GaplessOrder::kStrict : GaplessOrder::kRelaxed;
  o.reservation_ttl_ms = static_cast<std::int64_t>(s.reservation_ttl_ms);
  o.max_reservation_ttl_ms = static_cast<std::int64_t>(s.max_reservation_ttl_ms);
  o.strict_wait_ms = static_cast<std::int64_t>(s.strict_wait_ms);
  return o;
}

// Waits (without blocking an I/O thread) until every session has ended or the deadline passes,
// then stops the io_context.
asio::awaitable<void> drain_then_stop(asio::io_context& ioc,
                                      std::vector<net::SessionRegistry*> registries) {
  asio::steady_timer timer(ioc);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::size_t open = 0;
    for (auto* r : registries) open += r->count();
    if (open == 0 || std::chrono::steady_clock::now() > deadline) {
      if (open != 0) log::warn(std::to_string(open) + " sessions still open at the deadline");
      break;
    }
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(net::use_nothrow);
  }
  ioc.stop();
}

// storage.engine etcd: the store's client, the election's own client (a keepalive must never
// queue behind a commit) and the fenced store.
struct EtcdEngine {
  std::unique_ptr<etcd::EtcdClient> store_client;
  std::unique_ptr<etcd::EtcdClient> election_client;
  std::unique_ptr<etcd::EtcdCounterStore> store;
};

DetailedResult<void> open_etcd_engine(const config::StorageConfig& st, EtcdEngine& out) {
  const auto ttl_ms = static_cast<std::int64_t>(st.leader_ttl_s) * 1000;
  auto make = [&](std::int64_t timeout_ms) {
    etcd::EtcdClientOptions o;
    o.endpoints = st.endpoints;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    o.connect_timeout = std::min(o.timeout, std::chrono::milliseconds(300));
    return etcd::EtcdClient::create(std::move(o));
  };
  // A keepalive must fit well inside one renewal interval (TTL/3).
  auto election = make(std::clamp<std::int64_t>(ttl_ms / 6, 200, 2000));
  if (!election) return election.error();
  auto store = make(std::clamp<std::int64_t>(ttl_ms / 2, 500, 3000));
  if (!store) return store.error();
  out.election_client = std::move(*election);
  out.store_client = std::move(*store);
  out.store =
      std::make_unique<etcd::EtcdCounterStore>(*out.store_client, etcd::EtcdLayout{st.prefix});
  return {};
}

}  // namespace

int Daemon::run() {
  const bool ha = config_.storage.engine == "etcd";
  // RocksDB: the data directory is locked and holds the data. etcd: data_dir is not used.
  std::optional<DataDirLock> lock;
  std::unique_ptr<CounterStore> rocksdb;
  EtcdEngine etcd_engine;
  CounterStore* store = nullptr;
  if (ha) {
    if (auto r = open_etcd_engine(config_.storage, etcd_engine); !r) {
      log::error("storage: " + r.error().message);
      return 1;
    }
    store = etcd_engine.store.get();
  } else {
    auto acquired = DataDirLock::acquire(config_.data_dir);
    if (!acquired) {
      log::error(acquired.error().message);
      return 1;
    }
    lock.emplace(std::move(*acquired));
    auto opened = RocksDbCounterStore::open(config_.data_dir);
    if (!opened) {
      log::error(opened.error().message);
      return 1;
    }
    rocksdb = std::move(*opened);
    store = rocksdb.get();
  }
  // etcd refuses transactions of more than --max-txn-ops operations (128 by default).
  constexpr std::size_t kEtcdMaxMutationsPerCommit = 100;
  GroupCommitter committer(*store, ha ? kEtcdMaxMutationsPerCommit : 0);
  TicketService service(*store, committer);
  SystemClock clock;
  RetryScheduler retries;
  EtcdWorker etcd_worker;
  // Loads every sequence and makes the configured ones exist: at start with RocksDB, after
  // winning the election with etcd (so a new leader continues above every stored ceiling).
  auto load_engine = [&]() -> DetailedResult<void> {
    if (auto r = service.load(); !r) {
      return Error{r.error().code, "loading sequences: " + r.error().message};
    }
    for (const auto& s : config_.sequences) {
      if (s.kind == "snowflake") continue;
      if (s.kind == "gapless") {
        if (service.find(s.name)) {
          return Error{TicketErrc::kAlreadyExists,
                       "config sequence '" + s.name +
                           "': a ticket sequence of that name is stored; a gapless sequence "
                           "needs a name of its own"};
        }
        auto spec = to_spec(s);
        if (auto problem = validate(spec); !problem.empty()) {
          return Error{TicketErrc::kInvalidArgument,
                       "config sequence '" + s.name + "': " + problem};
        }
        auto gapless = GaplessSequence::open(spec, gapless_options(s), *store, committer, clock);
        if (!gapless) {
          return Error{gapless.error().code,
                       "config sequence '" + s.name + "': " + gapless.error().message};
        }
        service.add_gapless(std::move(*gapless));
        continue;
      }
      if (s.kind == "uuidv7") {
        if (service.find(s.name) != nullptr) {
          return Error{TicketErrc::kAlreadyExists,
                       "config sequence '" + s.name +
                           "': kind uuidv7, but a ticket sequence of that name is stored"};
        }
        service.add_uuidv7(s.name, std::make_shared<UuidV7Generator>(clock));
        continue;
      }
      if (auto r = service.ensure_configured(to_spec(s)); !r) {
        return Error{r.error().code, "config sequence '" + s.name + "': " + r.error().message};
      }
    }
    return {};
  };
  if (!ha) {
    if (auto r = load_engine(); !r) {
      log::error(r.error().message);
      return 1;
    }
  }
  const bool any_snowflake = std::any_of(config_.sequences.begin(), config_.sequences.end(),
                                         [](const auto& s) { return s.kind == "snowflake"; });
  if (any_snowflake && config_.snowflake.worker_source == "etcd") {
    if (auto r = start_etcd_worker(config_, clock, etcd_worker); !r) {
      log::error(r.error().message);
      return 1;
    }
  }
  for (const auto& s : config_.sequences) {
    if (s.kind != "snowflake") continue;
    auto generator =
        open_snowflake(s, config_.snowflake, *store, committer, clock, etcd_worker.lease);
    if (!generator) {
      log::error("config sequence '" + s.name + "': " + generator.error().message);
      return 2;
    }
    service.add_snowflake(std::move(*generator), retries, clock);
  }
  // Worker-ID pools; their leases are reloaded from the store with their absolute expiry.
  WorkerPoolService workers(*store, committer, clock);
  for (const auto& p : config_.worker_pools) {
    constexpr std::int64_t kMsPerS = 1000;
    const WorkerPoolSpec spec{
        .name = p.name,
        .size = p.size,
        .min_ttl_ms = static_cast<std::int64_t>(p.min_ttl_s) * kMsPerS,
        .max_ttl_ms = static_cast<std::int64_t>(p.max_ttl_s) * kMsPerS,
        .default_ttl_ms = static_cast<std::int64_t>(p.default_ttl_s) * kMsPerS};
    if (auto r = workers.add_pool(spec); !r) {
      log::error("config worker pool '" + p.name + "': " + r.error().message);
      return 1;
    }
  }
  metrics::Metrics metrics(service, committer, clock);

  // Failed logins and bad tokens, per client address, for both front ends.
  AuthThrottle auth_throttle(clock);

  // MySQL front end.
  const mysql::ServerSettings settings = mysql_settings(config_);
  mysql::UserTable users;
  for (const auto& u : config_.mysql.users) users[u.name] = mysql::double_sha1(u.password);
  UuidV7Generator uuids(clock);
  // With etcd every instance starts as a follower: the gate stays closed until it wins.
  const std::int64_t ttl_ms = static_cast<std::int64_t>(config_.storage.leader_ttl_s) * 1000;
  std::unique_ptr<ServingGate> gate =
      ha ? std::make_unique<ServingGate>(clock, InstanceAddress{}, ttl_ms,
                                         std::max<std::int64_t>(ttl_ms / 4, 500))
         : std::make_unique<ServingGate>(clock);
  mysql::QueryExecutor executor(service, settings, clock, mysql::metrics_hooks(metrics), &uuids,
                                ha ? gate.get() : nullptr);
  net::SessionRegistry mysql_sessions;
  std::atomic<std::uint32_t> next_connection_id{1};
  mysql::ConnectionHooks hooks{
      [&metrics](std::string_view /*user*/) { metrics.auth_failure("mysql"); },
      [&metrics](std::uint16_t code) { metrics.error("mysql", std::to_string(code)); }};
  mysql::MySqlDeps mysql_deps{
      executor, users, mysql_sessions, next_connection_id, hooks, [&metrics](bool opened) {
        if (opened) {
          metrics.connection_opened("mysql");
        } else {
          metrics.connection_closed("mysql");
        }
      }};
  mysql_deps.max_connections = config_.mysql.max_connections;
  mysql_deps.auth_throttle = &auth_throttle;
  mysql_deps.wait_timeout = std::chrono::seconds(config_.mysql.wait_timeout_s);
  mysql_deps.net_read_timeout = std::chrono::seconds(config_.mysql.net_read_timeout_s);
  // HTTP front end.
  LeaseLog leases(*store, committer, clock);
  net::SessionRegistry http_sessions;
  http::HttpOptions http_options;
  http_options.tokens = config_.http.tokens;
  http_options.max_block_size = config_.http.max_block_size;
  http_options.metrics_public = config_.http.metrics_public;
  http_options.max_connections = config_.http.max_connections;
  http_options.header_timeout = std::chrono::milliseconds(config_.http.header_timeout_ms);
  http_options.idle_timeout = std::chrono::milliseconds(config_.http.idle_timeout_ms);
  http::HttpDeps http_deps{service,       leases,
                           metrics,       clock,
                           http_sessions, [&committer] { return committer.stats().last_commit_ok; },
                           http_options};
  http_deps.workers = &workers;
  http_deps.auth_throttle = &auth_throttle;
  http_deps.gate = ha ? gate.get() : nullptr;
  // Declared after everything a session references: destroying the io_context destroys the
  // frames of sessions still suspended at exit, and their destructors report to the registries,
  // the metrics and the executor, which must still be alive then.
  const unsigned threads =
      config_.threads != 0 ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  asio::io_context ioc(static_cast<int>(threads));

  auto mysql_listener = net::Listener::bind(
      ioc, config_.mysql.listen.host, config_.mysql.listen.port, "mysql",
      [&mysql_deps](net::tcp::socket socket) {
        auto ex = socket.get_executor();
        asio::co_spawn(ex, mysql::run_mysql_session(std::move(socket), mysql_deps),
                       net::log_on_exit("mysql session"));
      });
  if (!mysql_listener) {
    log::error(mysql_listener.error().message);
    return 1;
  }

  auto http_listener = net::Listener::bind(
      ioc, config_.http.listen.host, config_.http.listen.port, "http",
      [&http_deps](net::tcp::socket socket) {
        auto ex = socket.get_executor();
        asio::co_spawn(ex, http::run_http_session(beast::tcp_stream(std::move(socket)), http_deps),
                       net::log_on_exit("http session"));
      });
  if (!http_listener) {
    log::error(http_listener.error().message);
    return 1;
  }
  (*mysql_listener)->start();
  (*http_listener)->start();

  auto shut_down = [&] {
    // Stop accepting, cancel idle reads; sessions finish the request in flight, then end.
    (*mysql_listener)->stop();
    (*http_listener)->stop();
    mysql_sessions.cancel_all();
    http_sessions.cancel_all();
    asio::co_spawn(ioc, drain_then_stop(ioc, {&mysql_sessions, &http_sessions}),
                   net::log_on_exit("shutdown"));
  };
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    log::info("signal " + std::to_string(sig) + ": shutting down");
    shut_down();
  });

  // The election (etcd): a follower serves only chatter and "not the leader" answers; after
  // winning, the engine loads from etcd, the store is fenced on the new term, and the gate
  // opens. A deposed leader's gate is closed for good; it shuts down and main() re-executes
  // the binary, so it comes back as a clean follower with an empty engine.
  std::unique_ptr<EtcdLeaderElection> election;
  std::atomic<bool> deposed{false};
  if (ha) {
    gate->set_self(InstanceAddress{
        config::ListenAddress{config_.mysql.listen.host, (*mysql_listener)->port()}.to_string(),
        config::ListenAddress{config_.http.listen.host, (*http_listener)->port()}.to_string()});
    LeaderElectionOptions o;
    o.leader_key = etcd::EtcdLayout{config_.storage.prefix}.leader_key();
    o.ttl_s = static_cast<std::int64_t>(config_.storage.leader_ttl_s);
    o.self = gate->view().self;
    o.poll_interval = std::chrono::milliseconds(std::clamp<std::int64_t>(ttl_ms / 10, 50, 500));
    election = std::make_unique<EtcdLeaderElection>(
        *etcd_engine.election_client, std::move(o), *gate, clock,
        [&](std::int64_t revision) -> DetailedResult<void> {
          etcd_engine.store->set_fence(revision);
          return load_engine();
        },
        [&](const std::string& why) {
          log::warn("leadership lost (" + why + "): refusing every request, restarting");
          deposed = true;
          asio::post(ioc, shut_down);
        });
    election->start();
  }
  log::info("ticketd ready: data_dir " + config_.data_dir + ", " +
            std::to_string(service.list().size()) + " sequences");

  if (!service.snowflakes().empty()) {
    asio::co_spawn(ioc, refresh_high_water_marks(ioc, service), net::log_on_exit("snowflake"));
  }
  if (std::any_of(config_.sequences.begin(), config_.sequences.end(),
                  [](const auto& s) { return s.kind == "gapless"; })) {
    asio::co_spawn(ioc, expire_gapless_reservations(ioc, service), net::log_on_exit("gapless"));
  }

  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();

  // Resigns (revokes the lease) when still leading, so a standby takes over at once.
  if (election) election->stop();
  // Lower each Snowflake high-water mark to the last tick used, so a restart barely waits.
  for (const auto& g : service.snowflakes()) {
    if (auto r = g->close(); !r) log::warn("snowflake '" + g->name() + "': " + r.error().message);
  }
  retries.stop();
  // Revoke the worker-ID lease: the ID is free at once, its mark stays for the next holder.
  if (etcd_worker.lease) etcd_worker.lease->stop();

  // Everything accepted has been answered or failed; commit what is queued, then close.
  committer.stop();
  // Sessions still queued in the engine are answered now, while the io_context their
  // callbacks hold timers of is still alive.
  for (const auto& g : service.gapless()) {
    g->fail_waiters(Error{TicketErrc::kShuttingDown, "ticketd is shutting down"});
  }
  log::info("ticketd stopped");
  return deposed ? kExitRestartAsFollower : 0;
}

}  // namespace ticketd
