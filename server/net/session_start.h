// What every front end's session starts with: its socket, its place in the registry, its peer.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "server/net/asio_support.h"
#include "server/net/session_registry.h"
#include "server/net/timed_socket.h"

namespace ticketd::net {

/// The start of one accepted connection, the same for MySQL and HTTP: the socket as a
/// TimedSocket (every operation under a deadline the session sets), the timer the session's
/// auth-throttle waits use, its registration (shutdown cancels the socket's operations and that
/// timer, on the session's executor, and is a no-op once the session is gone), and the peer's
/// address. The front end then refuses a connection over its cap in its own protocol, and runs
/// its TLS handshake (tls_accept) where its protocol has one. Lives in the session coroutine's
/// frame; used on the session's executor only.
class SessionStart {
 public:
  SessionStart(tcp::socket socket, SessionRegistry& registry, const asio::any_io_executor& ex);

  /// False when the server is stopping: the session must end at once.
  [[nodiscard]] bool admitted() const { return registration_.admitted(); }
  /// Whether this connection is one more than `max_connections` open sessions allow.
  [[nodiscard]] bool over_cap(std::size_t max_connections) const {
    return registry_.count() > max_connections;
  }
  [[nodiscard]] TimedSocket& stream() { return *stream_; }
  [[nodiscard]] asio::steady_timer& throttle_timer() { return *throttle_timer_; }
  /// The client's address ("unknown" when the socket could not tell).
  [[nodiscard]] const std::string& peer() const { return peer_; }

 private:
  SessionRegistry& registry_;
  // Shared so that the registry's cancel function can tell whether they still exist.
  std::shared_ptr<TimedSocket> stream_;
  std::shared_ptr<asio::steady_timer> throttle_timer_;
  SessionRegistration registration_;
  std::string peer_;
};

/// The server side of a TLS handshake over `socket`, which must end within `deadline`.
asio::awaitable<boost::system::error_code> tls_accept(asio::ssl::stream<TimedSocket&>& tls,
                                                      TimedSocket& socket,
                                                      std::chrono::steady_clock::duration deadline);

}  // namespace ticketd::net
