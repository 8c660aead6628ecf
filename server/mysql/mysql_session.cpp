#include "server/mysql/mysql_session.h"

#include <atomic>
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
  std::weak_ptr<beast::tcp_stream> weak = stream;
  net::SessionRegistration registration(deps.sessions, [weak, ex] {
    asio::post(ex, [weak] {
      if (auto s = weak.lock()) s->socket().cancel();
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

  ServerConnection conn(deps.executor, deps.users, deps.next_connection_id.fetch_add(1), host,
                        deps.hooks);
  const std::string hello = conn.greeting();
  stream->expires_after(deps.connect_timeout);
  if (auto [e, n] = co_await asio::async_write(*stream, asio::buffer(hello), use_nothrow); e) {
    co_return;
  }
  auto pending = std::make_shared<net::PendingResult<ServerConnection::Output>>(ex);
  std::array<char, 16 * 1024> buffer;
  for (;;) {
    // Answer every complete packet already buffered (pipelined commands), in order.
    for (;;) {
      auto answer = co_await pending->run([&conn](auto done) { return conn.process_next(done); });
      if (!answer) break;
      ServerConnection::Output out = std::move(*answer);
      if (!out.bytes.empty()) {
        stream->expires_after(std::chrono::seconds(60));
        auto [e, n] = co_await asio::async_write(*stream, asio::buffer(out.bytes), use_nothrow);
        if (e) co_return;
      }
      if (out.close) co_return;
    }
    if (deps.sessions.stopping()) co_return;
    stream->expires_after(conn.authenticated() ? deps.wait_timeout : deps.connect_timeout);
    auto [e, n] = co_await stream->async_read_some(asio::buffer(buffer), use_nothrow);
    if (e) {
      log::debug("mysql connection " + std::to_string(conn.session().connection_id) +
                 " ended: " + e.message());
      co_return;
    }
    conn.feed(std::string_view(buffer.data(), n));
  }
}

}  // namespace ticketd::mysql
