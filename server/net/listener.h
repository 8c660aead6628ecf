// Accepts TCP connections on one address and hands each to a session factory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/base/log_rate_limiter.h"
#include "server/base/result.h"
#include "server/net/asio_support.h"

namespace ticketd::net {

/// One listening socket. The accept loop runs as a coroutine on the io_context; each accepted
/// socket goes to `on_accept`, which spawns the front end's session on the socket's executor:
/// a context of the IoPool when one is given (one thread each, so no strand is needed), else
/// a strand of `ioc`. When the
/// process is out of file descriptors the loop pauses for kAcceptBackoff instead of spinning;
/// accept failures are logged about once a second with a count of the ones left out.
/// Thread safety: start() and stop() are called by the owner (the daemon) only.
class Listener {
 public:
  using OnAccept = std::function<void(tcp::socket)>;
  /// The single-threaded context the next accepted socket runs on.
  using PickContext = std::function<asio::io_context&()>;

  /// Binds and listens; the error names the address (for example "address already in use").
  [[nodiscard]] static DetailedResult<std::unique_ptr<Listener>> bind(
      asio::io_context& ioc, const std::string& host, std::uint16_t port, std::string name,
      OnAccept on_accept, PickContext pick = {});
  void start();
  /// Stops accepting; already accepted sessions are not touched.
  void stop();
  [[nodiscard]] std::uint16_t port() const { return port_; }

  static constexpr std::chrono::milliseconds kAcceptBackoff{100};

 private:
  Listener(asio::io_context& ioc, std::string name, OnAccept on_accept);
  asio::awaitable<void> accept_loop();

  asio::io_context& ioc_;
  std::string name_;
  OnAccept on_accept_;
  PickContext pick_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  log::RateLimiter accept_failures_;
};

}  // namespace ticketd::net
