// The MySQL session coroutine: moves bytes between a socket and a ServerConnection.
#pragma once

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

#include "server/base/live.h"
#include "server/core/auth_outcomes.h"
#include "server/mysql/query_executor.h"
#include "server/mysql/server_connection.h"
#include "server/net/asio_support.h"
#include "server/net/session_registry.h"

namespace ticketd::mysql {

/// What every MySQL session shares. Owned by the daemon; outlives every session.
struct MySqlDeps {
  const QueryExecutor& executor;
  /// Replaced by a reload (users, default plugin); each connection keeps the one it began with.
  const Live<LoginPolicy>& login;
  net::SessionRegistry& sessions;
  std::atomic<std::uint32_t>& next_connection_id;
  ConnectionHooks hooks;
  std::function<void(bool opened)> on_connection;  // metrics: open/close
  std::uint32_t max_connections = 10000;
  std::chrono::seconds wait_timeout{28800};  // idle limit after login (wait_timeout)
  // Limit for each read once a packet has begun (net_read_timeout): a half-sent packet of up to
  // max_allowed_packet is not held for wait_timeout.
  std::chrono::seconds net_read_timeout{30};
  std::chrono::seconds connect_timeout{10};    // limit for the whole login exchange
  std::chrono::seconds net_write_timeout{60};  // limit for each write of an answer
  /// What a login check and a refused login do (the auth throttle, shared with HTTP, and the
  /// audit trail: user and peer address, never the password); null: neither.
  const AuthOutcomes* auth = nullptr;
  /// mysql.tls: offered to clients (CLIENT_SSL) when set; must be set when login.tls_available.
  std::shared_ptr<boost::asio::ssl::context> tls;
};

/// Serves one client connection until it quits, errs, idles out or the server stops. Runs on
/// the socket's I/O thread; only moves bytes (and runs the TLS handshake when the client's
/// SslRequest asks for it), every protocol decision is in ServerConnection.
net::asio::awaitable<void> run_mysql_session(net::tcp::socket socket, MySqlDeps& deps);

}  // namespace ticketd::mysql
