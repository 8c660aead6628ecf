// One HTTP/1.1 connection to an etcd endpoint, plain or TLS, run on a caller's io_context.
// Internal to storage/etcd: EtcdClient and EtcdWatch share it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "storage/etcd/etcd_client.h"

namespace ticketd::etcd::detail {

using steady = std::chrono::steady_clock;

/// True for errors OpenSSL or the TLS stream report (as opposed to TCP and HTTP ones).
[[nodiscard]] bool is_tls_error(const boost::system::error_code& ec);

/// A TCP stream, or a TLS stream over one for https:// endpoints. Every operation is bounded
/// by the expiry set with expires_at() (beast::tcp_stream closes the socket when it passes).
/// Thread safety: none; close() may run from a handler on the io_context (to cancel a read).
class Connection {
 public:
  /// `tls` is needed for https:// endpoints only; it must outlive the connection.
  Connection(boost::asio::io_context& ioc, boost::asio::ssl::context* tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Resolves, connects before `connect_deadline` and, for https, handshakes (verifying the
  /// certificate chain and that it names e.host) before `deadline`. `detail` says why a
  /// handshake failed when OpenSSL knows (for example "certificate has expired").
  boost::system::error_code connect(const Endpoint& e, steady::time_point connect_deadline,
                                    steady::time_point deadline, std::string& detail);
  [[nodiscard]] bool is_open() const { return tcp_.has_value() || tls_.has_value(); }
  /// True when the peer closed or reset the idle connection (or sent bytes nobody asked for):
  /// a kept-alive connection to a member that died must not carry the next request, which
  /// would then fail with its outcome unknown although it was never received.
  [[nodiscard]] bool peer_closed();
  void expires_at(steady::time_point t);
  /// Closes the socket (a pending operation completes with an error); the stream stays.
  void close();
  /// Closes and destroys the stream; no operation may be pending.
  void reset();

  /// Runs the io_context until the operation `start(handler)` began completes.
  template <class Start>
  boost::system::error_code run(Start&& start) {
    boost::system::error_code result;
    bool done = false;
    start([&](boost::system::error_code ec, auto&&...) {
      result = ec;
      done = true;
    });
    ioc_.restart();
    while (!done && ioc_.run_one() != 0) {
    }
    return result;
  }

  /// Calls f with the stream (beast::tcp_stream or beast::ssl_stream<beast::tcp_stream>).
  template <class F>
  decltype(auto) visit(F&& f) {
    if (tls_) return f(*tls_);
    return f(*tcp_);
  }

 private:
  boost::asio::io_context& ioc_;
  boost::asio::ssl::context* tls_context_;
  std::optional<boost::beast::tcp_stream> tcp_;
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
};

}  // namespace ticketd::etcd::detail
