#include "server/mysql/mysql_session.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <memory>

#include "server/mysql/error_mapping.h"
#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/net/pending_result.h"

namespace ticketd::mysql {
namespace asio = boost::asio;
namespace beast = boost::beast;
using net::use_nothrow;

asio::awaitable<void> run_mysql_session(net::tcp::socket socket, MySqlDeps& deps) {
  auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
  auto ex = co_await asio::this_coro::executor;
  // The wait the auth throttle imposes before answering a login; cancelled on shutdown too.
  auto throttle_timer = std::make_shared<asio::steady_timer>(ex);
  std::weak_ptr<beast::tcp_stream> weak = stream;
  std::weak_ptr<asio::steady_timer> weak_timer = throttle_timer;
  net::SessionRegistration registration(deps.sessions, [weak, weak_timer, ex] {
    asio::post(ex, [weak, weak_timer] {
      if (auto s = weak.lock()) s->socket().cancel();
      if (auto t = weak_timer.lock()) t->cancel();
    });
  });
  if (!registration.admitted()) co_return;
  if (deps.on_connection) deps.on_connection(true);
  struct Closed {
    MySqlDeps& deps;
    ~Closed() {
      if (deps.on_connection) deps.on_connection(false);
    }
  } closed{deps};

  boost::system::error_code ec;
  const auto peer = stream->socket().remote_endpoint(ec);
  const std::string host = ec ? "unknown" : peer.address().to_string();

  if (deps.sessions.count() > deps.max_connections) {
    // mysqld sends ER_CON_COUNT_ERROR in place of the greeting.
    std::string out;
    std::uint8_t seq = 0;
    append_frame(
        out, to_payload(ErrPacket{kErConCount, "08004", "Too many connections"}, kClientProtocol41),
        seq);
    stream->expires_after(std::chrono::seconds(5));
    co_await asio::async_write(*stream, asio::buffer(out), use_nothrow);
    co_return;
  }

  ConnectionHooks hooks = deps.hooks;
  if (deps.auth_throttle != nullptr) {
    hooks.on_auth_failure = [&deps, host](std::string_view user) {
      if (deps.hooks.on_auth_failure) deps.hooks.on_auth_failure(user);
      const auto f = deps.auth_throttle->record_failure(host);
      if (f.log) {
        log::warn(failure_line("mysql login", "user '" + printable(user) + "'", host, f));
      }
    };
  }
  ServerConnection conn(deps.executor, deps.users, deps.next_connection_id.fetch_add(1), host,
                        std::move(hooks),
                        [ex](net::Handoff::Step step) { asio::post(ex, std::move(step)); });
  bool login_delayed = false;
  bool logged_in = false;
  const std::string hello = conn.greeting();
  stream->expires_after(deps.connect_timeout);
  if (auto [e, n] = co_await asio::async_write(*stream, asio::buffer(hello), use_nothrow); e) {
    co_return;
  }
  // Most answers are ready before process_next() returns (the ticket came from the cached
  // path); one that completes later is built on this session's strand (the connection's
  // handoff) and then resumes this coroutine.
  auto pending = std::make_shared<net::PendingResult<ServerConnection::Output>>(ex);
  std::array<char, 16 * 1024> buffer;
  for (;;) {
    // Answer every complete packet already buffered (pipelined commands), in order.
    for (;;) {
      const bool has_packet = conn.process_next(pending->start());
      if (!has_packet) break;
      ServerConnection::Output out = co_await pending->wait();
      if (!out.bytes.empty()) {
        stream->expires_after(std::chrono::seconds(60));
        auto [e, n] = co_await asio::async_write(*stream, asio::buffer(out.bytes), use_nothrow);
        if (e) co_return;
      }
      if (out.close) co_return;
      conn.recycle(std::move(out.bytes));
    }
    if (!logged_in && conn.authenticated()) {
      logged_in = true;
      if (deps.auth_throttle != nullptr) deps.auth_throttle->record_success(host);
    }
    if (deps.sessions.stopping()) co_return;
    if (!conn.authenticated()) {
      stream->expires_after(deps.connect_timeout);
    } else if (conn.buffered() > 0) {
      // Inside a packet: the rest must keep coming, as mysqld's net_read_timeout. The expiry
      // closes the socket, which frees the partial packet.
      stream->expires_after(deps.net_read_timeout);
    } else {
      stream->expires_after(deps.wait_timeout);
    }
    auto [e, n] = co_await stream->async_read_some(asio::buffer(buffer), use_nothrow);
    if (e) {
      log::debug("mysql connection " + std::to_string(conn.session().connection_id) +
                 " ended: " + e.message());
      co_return;
    }
    if (!login_delayed && deps.auth_throttle != nullptr) {
      // The client's first packet (its login) is answered only after the address's delay:
      // a timer wait, so the I/O thread serves other sessions meanwhile.
      login_delayed = true;
      if (const auto ms = deps.auth_throttle->delay_ms(host); ms > 0) {
        throttle_timer->expires_after(std::chrono::milliseconds(ms));
        co_await throttle_timer->async_wait(use_nothrow);
        if (deps.sessions.stopping()) co_return;
      }
    }
    conn.feed(std::string_view(buffer.data(), n));
  }
}

}  // namespace ticketd::mysql
