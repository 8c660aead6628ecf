#include "server/mysql/mysql_session.h"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <vector>

#include "server/mysql/error_mapping.h"
#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/net/awaited_completion.h"
#include "server/net/peer_probe.h"
#include "server/net/session_start.h"
#include "server/net/timed_socket.h"
#include "server/net/tls_context.h"

namespace ticketd::mysql {
namespace asio = boost::asio;
using net::use_nothrow;

namespace {

// As many bytes of a client's user name as a log line shows (printable()'s default).
constexpr std::size_t kMaxLoggedUserName = 64;

// The auth throttle's part in one connection's login: the place a credential check holds until
// its answer is sent, and how long a failure's answer waits.
struct LoginGate {
  AuthThrottle::Slot slot;
  std::int64_t answer_delay_ms = 0;
};

// What the packet loop ended on.
enum class LoopEnd { kClose, kStartTls };

// One connection's I/O: the packet loop runs first on the TCP stream and, after an SslRequest,
// again on a TLS stream over it. Lives in the session coroutine's frame.
struct Session {
  MySqlDeps& deps;
  net::TimedSocket& tcp;
  ServerConnection& conn;
  asio::steady_timer& throttle_timer;
  LoginGate& gate;
  const std::string& host;
  std::shared_ptr<net::AwaitedCompletion<ServerConnection::Output>> completion;
  // What a read may take at most. Small while the connection sends small packets (an idle
  // connection holds 1 KiB, not a bulk buffer: 10,000 of them are what the RSS goal counts);
  // doubled, up to 64 KiB, after a read that filled it, and back to 1 KiB once the connection
  // waits for a new command with nothing buffered after a read that used little of it.
  static constexpr std::size_t kMinRead = 1024;
  static constexpr std::size_t kMaxRead = 64 * 1024;
  std::vector<char> buffer = std::vector<char>(kMinRead);

  // With TLS offered, the client's first packet is read to its exact end: an SslRequest is
  // followed at once by the TLS ClientHello, which must be left on the socket for the handshake.
  bool exact_first_packet = false;

  template <class Stream>
  asio::awaitable<LoopEnd> run(Stream& io) {
    for (;;) {
      // Answer every complete packet already buffered (pipelined commands), in order.
      for (;;) {
        const bool has_packet = conn.process_next(completion->start());
        if (!has_packet) break;
        ServerConnection::Output out = co_await completion->wait();
        if (gate.answer_delay_ms > 0) {
          // A failed login under the auth throttle: its answer waits, holding its place.
          throttle_timer.expires_after(std::chrono::milliseconds(gate.answer_delay_ms));
          gate.answer_delay_ms = 0;
          co_await throttle_timer.async_wait(use_nothrow);
          if (deps.sessions.stopping()) co_return LoopEnd::kClose;
        }
        if (!out.bytes.empty()) {
          tcp.expires_after(deps.net_write_timeout);
          auto [e, n] = co_await asio::async_write(io, asio::buffer(out.bytes), use_nothrow);
          if (e) co_return LoopEnd::kClose;
        }
        gate.slot.release();  // the answer to the check it admitted is out
        if (out.close) co_return LoopEnd::kClose;
        if (out.start_tls) co_return LoopEnd::kStartTls;
        conn.recycle(std::move(out.bytes));
      }
      if (deps.sessions.stopping()) co_return LoopEnd::kClose;
      if (!conn.authenticated()) {
        tcp.expires_after(deps.connect_timeout);
      } else if (conn.buffered() > 0) {
        // Inside a packet: the rest must keep coming, as mysqld's net_read_timeout. The expiry
        // closes the socket, which frees the partial packet.
        tcp.expires_after(deps.net_read_timeout);
      } else {
        tcp.expires_after(deps.wait_timeout);
      }
      if (exact_first_packet) {
        exact_first_packet = false;
        if (!co_await read_one_packet(io)) co_return LoopEnd::kClose;
        continue;
      }
      auto [e, n] = co_await io.async_read_some(asio::buffer(buffer), use_nothrow);
      if (e) {
        log::debug("mysql connection " + std::to_string(conn.session().connection_id) +
                       " ended: " + e.message(),
                   {{"client", host}, {"connection", conn.session().connection_id}});
        co_return LoopEnd::kClose;
      }
      conn.feed(std::string_view(buffer.data(), n));
      resize_buffer(n);
    }
  }

  void resize_buffer(std::size_t last_read) {
    if (last_read == buffer.size() && buffer.size() < kMaxRead) {
      buffer.resize(buffer.size() * 2);  // more is likely waiting
    } else if (buffer.size() > kMinRead && last_read < buffer.size() / 4 && conn.buffered() == 0) {
      std::vector<char>(kMinRead).swap(buffer);  // the burst is over: give the memory back
    }
  }

  // Reads one packet's header and exactly the payload it announces (up to the pre-auth cap; a
  // larger announcement is fed alone, and the connection refuses it).
  template <class Stream>
  asio::awaitable<bool> read_one_packet(Stream& io) {
    auto [e, n] =
        co_await asio::async_read(io, asio::buffer(buffer.data(), kPacketHeaderSize), use_nothrow);
    if (e) co_return false;
    conn.feed(std::string_view(buffer.data(), kPacketHeaderSize));
    std::size_t left = static_cast<std::uint8_t>(buffer[0]) |
                       static_cast<std::size_t>(static_cast<std::uint8_t>(buffer[1])) << 8 |
                       static_cast<std::size_t>(static_cast<std::uint8_t>(buffer[2])) << 16;
    if (left > ServerConnection::kPreAuthMaxPacket) co_return true;
    while (left > 0) {
      const std::size_t want = std::min(left, buffer.size());
      auto [e2, got] =
          co_await asio::async_read(io, asio::buffer(buffer.data(), want), use_nothrow);
      if (e2) co_return false;
      conn.feed(std::string_view(buffer.data(), got));
      left -= got;
    }
    co_return true;
  }
};

// The framed ERR that mysqld sends (ER_CON_COUNT_ERROR) in place of the greeting.
std::string too_many_connections_frame() {
  std::string out;
  std::uint8_t seq = 0;
  append_frame(
      out, to_payload(ErrPacket{kErConCount, "08004", "Too many connections"}, kClientProtocol41),
      seq);
  return out;
}

// The connection's hooks: deps.hooks, with logins from `host` admitted, and refused ones
// audited, throttled and logged, by the server's AuthOutcomes.
ConnectionHooks login_hooks(MySqlDeps& deps, const std::string& host,
                            const std::shared_ptr<LoginGate>& gate) {
  ConnectionHooks hooks = deps.hooks;
  if (deps.auth == nullptr) return hooks;
  hooks.admit_login = [&deps, host, gate](std::string_view user) {
    if (deps.auth->admit(host, user, gate->slot)) return true;
    log::debug("mysql login of user '" + printable(user) + "' from " + host +
                   " refused unchecked: the throttle's checks of this pair are all in use",
               {{"client", host}});
    return false;
  };
  hooks.on_auth_failure = [&deps, host, gate](std::string_view user) {
    if (deps.hooks.on_auth_failure) deps.hooks.on_auth_failure(user);
    const std::string who = "user '" + printable(user) + "'";
    const std::string detail = "mysql " + who + " from " + host;
    // The user name as the client sent it (the writer escapes it), cut like printable().
    const std::string_view user_field = user.substr(0, kMaxLoggedUserName);
    gate->answer_delay_ms =
        deps.auth->refused(gate->slot, {host, user, "mysql login", who, "login_failed", detail},
                           {{"client", host}, {"user", user_field}});
  };
  return hooks;
}

}  // namespace

asio::awaitable<void> run_mysql_session(net::tcp::socket socket, MySqlDeps& deps) {
  auto ex = co_await asio::this_coro::executor;
  net::SessionStart start(std::move(socket), deps.sessions, ex);
  if (!start.admitted()) co_return;
  if (deps.on_connection) deps.on_connection(true);
  struct Closed {
    MySqlDeps& deps;
    ~Closed() {
      if (deps.on_connection) deps.on_connection(false);
    }
  } closed{deps};
  net::TimedSocket& stream = start.stream();
  const std::string& host = start.peer();

  if (start.over_cap(deps.max_connections)) {
    std::string out = too_many_connections_frame();
    stream.expires_after(std::chrono::seconds(5));
    co_await asio::async_write(stream, asio::buffer(out), use_nothrow);
    co_return;
  }

  auto gate = std::make_shared<LoginGate>();
  ConnectionHooks hooks = login_hooks(deps, host, gate);
  // A run of many statements that yields looks at the socket: a client that left stops it.
  hooks.peer_gone = [fd = stream.lowest_layer().native_handle()] { return net::peer_closed(fd); };
  // The users as of this connection's start: a reload applies to the next connections.
  const std::shared_ptr<const LoginPolicy> login = deps.login.get();
  // Most answers are ready before process_next() returns (the ticket came from the cached
  // path); one that completes later is built on this session's thread and then resumes this
  // coroutine (net::AwaitedCompletion).
  auto completion = std::make_shared<net::AwaitedCompletion<ServerConnection::Output>>(ex);
  ServerConnection conn(deps.executor, *login, deps.next_connection_id.fetch_add(1), host,
                        std::move(hooks), completion);
  const std::string hello = conn.greeting();
  stream.expires_after(deps.connect_timeout);
  if (auto [e, n] = co_await asio::async_write(stream, asio::buffer(hello), use_nothrow); e) {
    co_return;
  }
  Session session{deps, stream, conn, start.throttle_timer(), *gate, host, std::move(completion)};
  session.exact_first_packet = deps.tls != nullptr;
  if (co_await session.run(stream) != LoopEnd::kStartTls || deps.tls == nullptr) co_return;

  asio::ssl::stream<net::TimedSocket&> tls(stream, *deps.tls);
  if (auto e = co_await net::tls_accept(tls, stream, deps.connect_timeout); e) {
    log::debug("mysql connection " + std::to_string(conn.session().connection_id) +
                   ": TLS handshake failed: " + e.message(),
               {{"client", host}, {"connection", conn.session().connection_id}});
    co_return;
  }
  auto info = net::tls_session_info(tls.native_handle());
  conn.tls_started(std::move(info.version), std::move(info.cipher));
  co_await session.run(tls);
}

}  // namespace ticketd::mysql
