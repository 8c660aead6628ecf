#include "server/net/session_start.h"

#include <boost/asio/post.hpp>
#include <utility>

namespace ticketd::net {
namespace {

// Cancels the connection's socket operations and its throttle wait, on the session's executor
// (where both are used); may run on any thread, and after the session ended.
SessionRegistry::Cancel cancel_on_stop(const asio::any_io_executor& ex,
                                       const std::shared_ptr<TimedSocket>& stream,
                                       const std::shared_ptr<asio::steady_timer>& timer) {
  return [weak = std::weak_ptr(stream), weak_timer = std::weak_ptr(timer), ex] {
    asio::post(ex, [weak, weak_timer] {
      if (auto s = weak.lock()) {
        boost::system::error_code ignored;
        s->socket().cancel(ignored);
      }
      if (auto t = weak_timer.lock()) t->cancel();
    });
  };
}

std::string peer_address(TimedSocket& stream) {
  boost::system::error_code ec;
  const auto peer = stream.socket().remote_endpoint(ec);
  return ec ? "unknown" : peer.address().to_string();
}

}  // namespace

SessionStart::SessionStart(tcp::socket socket, SessionRegistry& registry,
                           const asio::any_io_executor& ex)
    : registry_(registry),
      stream_(std::make_shared<TimedSocket>(std::move(socket))),
      throttle_timer_(std::make_shared<asio::steady_timer>(ex)),
      registration_(registry, cancel_on_stop(ex, stream_, throttle_timer_)),
      peer_(peer_address(*stream_)) {}

asio::awaitable<boost::system::error_code> tls_accept(
    asio::ssl::stream<TimedSocket&>& tls, TimedSocket& socket,
    std::chrono::steady_clock::duration deadline) {
  socket.expires_after(deadline);
  auto [e] = co_await tls.async_handshake(asio::ssl::stream_base::server, use_nothrow);
  co_return e;
}

}  // namespace ticketd::net
