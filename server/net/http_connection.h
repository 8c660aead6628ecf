// The one HTTP client connection: HTTP/1.1 to an http:// or https:// endpoint, run on a caller's
// io_context. The etcd client (storage/etcd) and `ticketd restride` (server/restride) use it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ticketd::net {

using steady = std::chrono::steady_clock;

/// Where an HTTP server listens: http://host:port, or https:// when `tls`.
struct HttpEndpoint {
  std::string host;  // a name, an IPv4 literal or an IPv6 literal without brackets
  std::uint16_t port = 0;
  bool tls = false;  // https://
  /// "http://host:port" / "https://[v6]:port".
  [[nodiscard]] std::string to_string() const;
};

/// Parses "http://HOST:PORT" or "https://HOST:PORT" (IPv6 literals in brackets); with
/// `default_scheme_http`, a bare "HOST:PORT" is http://. nullopt when it is none of them.
[[nodiscard]] std::optional<HttpEndpoint> parse_http_endpoint(const std::string& url,
                                                              bool default_scheme_http = false);

/// Files for a TLS client: the CA bundle to verify servers with (empty: the system's), and an
/// optional client certificate and key (both or neither).
struct TlsClientFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

/// A TLS 1.2+ client context that verifies peers against `files.ca_file` (or the system's CAs)
/// and presents the client certificate when given. On failure, `problem` names the file and
/// the cause ("ca_file 'x.pem': No such file or directory") and the result is null.
[[nodiscard]] std::unique_ptr<boost::asio::ssl::context> make_tls_client_context(
    const TlsClientFiles& files, std::string& problem);

/// True for errors OpenSSL or the TLS stream report (as opposed to TCP and HTTP ones).
[[nodiscard]] bool is_tls_error(const boost::system::error_code& ec);

/// A TCP stream, or a TLS stream over one for https:// endpoints. Every operation is bounded
/// by the expiry set with expires_at() (beast::tcp_stream closes the socket when it passes).
/// Thread safety: none; close() may run from a handler on the io_context (to cancel a read).
class HttpConnection {
 public:
  /// `tls` is needed for https:// endpoints only; it must outlive the connection.
  HttpConnection(boost::asio::io_context& ioc, boost::asio::ssl::context* tls);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// Resolves, connects before `connect_deadline` and, for https, handshakes (verifying the
  /// certificate chain and that it names e.host) before `deadline`. `detail` says why a
  /// handshake failed when OpenSSL knows (for example "certificate has expired").
  boost::system::error_code connect(const HttpEndpoint& e, steady::time_point connect_deadline,
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

}  // namespace ticketd::net
