#include "server/app/front_ends.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "server/app/secrets.h"
#include "server/base/exit_code.h"
#include "server/base/log.h"
#include "server/http/http_session.h"
#include "server/mysql/metrics_hooks.h"
#include "server/mysql/protocol/auth.h"
#include "server/net/asio_support.h"

namespace ticketd {
namespace asio = boost::asio;

namespace {

mysql::ServerSettings mysql_settings(const config::Config& c) {
  mysql::ServerSettings s;
  s.database = c.mysql.database;
  s.auto_increment_increment = c.defaults.auto_increment_increment;
  s.auto_increment_offset = c.defaults.auto_increment_offset;
  s.default_cache = c.defaults.cache;
  s.max_allowed_packet = c.mysql.max_allowed_packet;
  s.wait_timeout_s = static_cast<std::uint32_t>(c.mysql.wait_timeout.count());
  s.net_read_timeout_s = static_cast<std::uint32_t>(c.mysql.net_read_timeout.count());
  s.net_write_timeout_s = static_cast<std::uint32_t>(c.mysql.net_write_timeout.count());
  s.connect_timeout_s = static_cast<std::uint32_t>(c.mysql.connect_timeout.count());
  s.max_connections = c.mysql.max_connections;
  s.max_prepared_stmt_count = c.mysql.max_prepared_stmt_count;
  s.connection_memory_limit = c.mysql.connection_memory_limit;
  s.global_connection_memory_limit = c.mysql.global_connection_memory_limit;
  s.tls = c.mysql.tls.has_value();
  s.require_secure_transport = c.mysql.require_secure_transport;
  s.default_auth_plugin = std::string(mysql::plugin_name(to_mysql(c.mysql.default_auth_plugin)));
  return s;
}

http::HttpOptions http_options(const config::Config& c) {
  http::HttpOptions o;
  o.tokens = token_verifiers(c);
  o.max_block_size = c.http.max_block_size;
  o.metrics_public = c.http.metrics_public;
  o.max_connections = c.http.max_connections;
  o.header_timeout = c.http.header_timeout;
  o.idle_timeout = c.http.idle_timeout;
  o.follower_redirect = c.ha.follower_http == config::FollowerHttp::kRedirect;
  return o;
}

// With etcd every instance starts as a follower: the gate stays closed until it wins.
std::unique_ptr<ServingGate> serving_gate(const config::Config& c, const Clock& clock) {
  if (c.storage.engine != config::StorageEngine::kEtcd) return std::make_unique<ServingGate>(clock);
  const std::int64_t ttl_ms = std::chrono::milliseconds(c.storage.leader_ttl).count();
  return std::make_unique<ServingGate>(clock, InstanceAddress{}, ttl_ms,
                                       std::max<std::int64_t>(ttl_ms / 4, 500));
}

// Waits (without blocking an I/O thread) until every session has ended or the deadline passes,
// then stops the io_context.
asio::awaitable<void> drain_then_stop(net::IoPool& pool,
                                      std::vector<net::SessionRegistry*> registries) {
  asio::steady_timer timer(pool.main());
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
  pool.stop();
}

StartupResult<std::shared_ptr<asio::ssl::context>> tls_context(
    const std::optional<config::TlsConfig>& tls, const char* where) {
  if (!tls) return std::shared_ptr<asio::ssl::context>();
  auto made = net::make_server_tls_context(
      net::TlsFiles{tls->cert_file, tls->key_file, tls->ca_file, tls->require_client_cert});
  if (!made.context)
    return StartupError{ExitCode::kRefused, std::string(where) + ": " + made.error};
  for (const auto& w : made.warnings) log::warn(std::string(where) + ": " + w);
  return made.context;
}

}  // namespace

StartupResult<TlsContexts> load_tls(const config::Config& config) {
  TlsContexts out;
  auto mysql_tls = tls_context(config.mysql.tls, "mysql.tls");
  if (!mysql_tls) return mysql_tls.error();
  out.mysql = *mysql_tls;
  auto http_tls = tls_context(config.http.tls, "http.tls");
  if (!http_tls) return http_tls.error();
  out.http = *http_tls;
  return out;
}

FrontEnds::FrontEnds(const config::Config& config, Engine& engine, const TlsContexts& tls)
    : metrics(engine.service(), engine.committer(), engine.clock()),
      auth_throttle(engine.clock()),
      settings(mysql_settings(config)),
      login(login_policy(config)),
      uuids(engine.clock()),
      ulids(engine.clock(), UlidOptions{.name = "ULID()", .policy = ClockPolicy::kLogical}),
      gate(serving_gate(config, engine.clock())),
      executor(engine.service(), settings, engine.clock(), mysql::metrics_hooks(metrics), &uuids,
               engine.ha() ? gate.get() : nullptr, &ulids),
      hooks{[this](std::string_view /*user*/) { metrics.auth_failure("mysql"); },
            [this](std::uint16_t code) { metrics.error("mysql", std::to_string(code)); }},
      mysql_deps{executor,
                 login,
                 mysql_sessions,
                 next_connection_id,
                 hooks,
                 [this](bool opened) {
                   if (opened) {
                     metrics.connection_opened("mysql");
                   } else {
                     metrics.connection_closed("mysql");
                   }
                 }},
      leases(engine.service(), engine.store(), engine.store_reads(), engine.clock()),
      http_deps{engine.service(),
                leases,
                metrics,
                engine.clock(),
                http_sessions,
                [&committer = engine.committer()] { return committer.stats().last_commit_ok; },
                http_options(config)} {
  mysql_deps.tls = tls.mysql;
  http_deps.tls = tls.http;
  // The audit trail: one `audit` log line and one counted event each.
  const AuditSink audit = [this](std::string_view event, std::string_view detail,
                                 log::Fields fields) {
    log::audit(event, detail, fields);
    metrics.audit_event(event);
  };
  auth = AuthOutcomes(&auth_throttle, audit);
  mysql_deps.auth = &auth;
  http_deps.auth = &auth;
  engine.service().set_audit(audit);
  mysql_deps.max_connections = config.mysql.max_connections;
  mysql_deps.wait_timeout = config.mysql.wait_timeout;
  mysql_deps.net_read_timeout = config.mysql.net_read_timeout;
  mysql_deps.net_write_timeout = config.mysql.net_write_timeout;
  mysql_deps.connect_timeout = config.mysql.connect_timeout;
  http_deps.workers = &engine.workers();
  metrics.watch(&engine.workers(), engine.ha() ? gate.get() : nullptr);
  http_deps.gate = engine.ha() ? gate.get() : nullptr;
  if (!config.backup.dir.empty() && engine.rocksdb() != nullptr) {
    backups = std::make_unique<OnlineBackups>(engine, *engine.rocksdb(), config.backup.dir,
                                              config.data_dir);
    http_deps.backups = backups.get();
  }
}

StartupResult<Listeners> Listeners::bind(net::IoPool& pool, const config::Config& config,
                                         FrontEnds& front_ends) {
  Listeners out;
  asio::io_context& ioc = pool.main();
  auto pick = [&pool]() -> asio::io_context& { return pool.session_context(); };
  auto mysql_listener = net::Listener::bind(
      ioc, config.mysql.listen.host, config.mysql.listen.port, "mysql",
      [&deps = front_ends.mysql_deps](net::tcp::socket socket) {
        auto ex = socket.get_executor();
        asio::co_spawn(ex, mysql::run_mysql_session(std::move(socket), deps),
                       net::log_on_exit("mysql session"));
      },
      pick);
  if (!mysql_listener) return StartupError{ExitCode::kFailed, mysql_listener.error().message};
  out.mysql = std::move(*mysql_listener);

  auto http_listener = net::Listener::bind(
      ioc, config.http.listen.host, config.http.listen.port, "http",
      [&deps = front_ends.http_deps](net::tcp::socket socket) {
        auto ex = socket.get_executor();
        asio::co_spawn(ex, http::run_http_session(std::move(socket), deps),
                       net::log_on_exit("http session"));
      },
      pick);
  if (!http_listener) return StartupError{ExitCode::kFailed, http_listener.error().message};
  out.http = std::move(*http_listener);
  return out;
}

void Listeners::start() {
  mysql->start();
  http->start();
}

void begin_shutdown(net::IoPool& pool, Listeners& listeners, FrontEnds& front_ends) {
  listeners.mysql->stop();
  listeners.http->stop();
  front_ends.mysql_sessions.cancel_all();
  front_ends.http_sessions.cancel_all();
  asio::co_spawn(pool.main(),
                 drain_then_stop(pool, {&front_ends.mysql_sessions, &front_ends.http_sessions}),
                 net::log_on_exit("shutdown"));
}

}  // namespace ticketd
