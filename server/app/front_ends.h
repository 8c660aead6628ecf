// The MySQL and HTTP front ends: what their sessions reference, and their listening sockets.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>

#include "config/config.h"
#include "server/app/backup_commands.h"
#include "server/app/engine.h"
#include "server/app/startup_error.h"
#include "server/core/auth_outcomes.h"
#include "server/core/auth_throttle.h"
#include "server/core/lease_log.h"
#include "server/core/serving_gate.h"
#include "server/core/ulid_generator.h"
#include "server/core/uuidv7_generator.h"
#include "server/http/routes.h"
#include "server/metrics/metrics.h"
#include "server/mysql/mysql_session.h"
#include "server/mysql/query_executor.h"
#include "server/net/io_pool.h"
#include "server/net/listener.h"
#include "server/net/session_registry.h"
#include "server/net/tls_context.h"

namespace ticketd {

/// The TLS contexts of the front ends that have `tls:` configured (null for the others).
struct TlsContexts {
  std::shared_ptr<boost::asio::ssl::context> mysql;
  std::shared_ptr<boost::asio::ssl::context> http;
};
/// Reads every configured certificate and key; an unreadable or mismatched file fails start-up.
[[nodiscard]] StartupResult<TlsContexts> load_tls(const config::Config& config);

/// Everything a MySQL or HTTP session references: metrics, the auth throttle both share, the
/// MySQL executor and login policy, the lease log, the session registries and the serving gate
/// (closed until elected with storage.engine etcd, always open with RocksDB). Built before the
/// io_context and destroyed after it: destroying the io_context destroys the frames of sessions
/// still suspended at exit, and their destructors report to the registries, the metrics and the
/// executor. Members reference the engine and each other, so the object never moves.
/// Thread safety: the members guard themselves; sessions use them from every I/O thread.
struct FrontEnds {
  FrontEnds(const config::Config& config, Engine& engine, const TlsContexts& tls);
  FrontEnds(const FrontEnds&) = delete;
  FrontEnds& operator=(const FrontEnds&) = delete;

  metrics::Metrics metrics;
  // Failed logins and bad tokens, per client address, for both front ends.
  AuthThrottle auth_throttle;
  // What both front ends do with a credential check: the throttle above and the audit trail.
  AuthOutcomes auth;
  const mysql::ServerSettings settings;
  Live<mysql::LoginPolicy> login;  // replaced by a reload
  UuidV7Generator uuids;
  UlidGenerator ulids;  // SELECT ULID()
  std::unique_ptr<ServingGate> gate;
  mysql::QueryExecutor executor;
  net::SessionRegistry mysql_sessions;
  std::atomic<std::uint32_t> next_connection_id{1};
  mysql::ConnectionHooks hooks;
  mysql::MySqlDeps mysql_deps;
  LeaseLog leases;
  // POST /v1/admin/backup (backup.dir set, RocksDB engine); null otherwise.
  std::unique_ptr<OnlineBackups> backups;
  net::SessionRegistry http_sessions;
  http::HttpDeps http_deps;
};

/// The two listening sockets, bound on the io_context and so declared after it.
/// Thread safety: start() and stop() are called by the daemon (stop() on an I/O thread).
struct Listeners {
  /// Binds mysql.listen, then http.listen; sessions are spawned with `front_ends` as their deps.
  /// Listens on `pool`'s main context; each session runs on one of the pool's contexts.
  [[nodiscard]] static StartupResult<Listeners> bind(net::IoPool& pool,
                                                     const config::Config& config,
                                                     FrontEnds& front_ends);
  void start();

  std::unique_ptr<net::Listener> mysql;
  std::unique_ptr<net::Listener> http;
};

/// Stops accepting and cancels idle reads; sessions finish the request in flight, then end.
/// Once every session has ended, or after a deadline, every context of `pool` stops.
void begin_shutdown(net::IoPool& pool, Listeners& listeners, FrontEnds& front_ends);

}  // namespace ticketd
