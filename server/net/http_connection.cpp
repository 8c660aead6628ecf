#include "server/net/http_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <string_view>
#include <utility>

#include "server/base/parse_int.h"
#include "server/net/peer_probe.h"

namespace ticketd::net {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

bool is_tls_error(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         ec.category() == asio::ssl::error::get_stream_category();
}

HttpConnection::HttpConnection(asio::io_context& ioc, asio::ssl::context* tls)
    : ioc_(ioc), tls_context_(tls) {}

HttpConnection::~HttpConnection() { reset(); }

void HttpConnection::expires_at(steady::time_point t) {
  if (tcp_) tcp_->expires_at(t);
  if (tls_) beast::get_lowest_layer(*tls_).expires_at(t);
}

void HttpConnection::close() {
  beast::error_code ignored;
  if (tcp_) {
    tcp_->socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_->close();
  }
  if (tls_) {
    // No TLS close_notify: etcd treats the closed socket as the end of the connection.
    auto& lowest = beast::get_lowest_layer(*tls_);
    lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest.close();
  }
}

bool HttpConnection::peer_closed() {
  if (!is_open()) return true;
  auto& socket = tls_ ? beast::get_lowest_layer(*tls_).socket() : tcp_->socket();
  if (!socket.is_open()) return true;
  // Bytes waiting on an idle client connection belong to no request: as bad as a close.
  return net::peer_state(socket.native_handle()) != PeerState::kIdle;
}

void HttpConnection::reset() {
  close();
  tcp_.reset();
  tls_.reset();
}

boost::system::error_code HttpConnection::connect(const HttpEndpoint& e,
                                                  steady::time_point connect_deadline,
                                                  steady::time_point deadline,
                                                  std::string& detail) {
  reset();
  detail.clear();
  tcp::resolver resolver(ioc_);
  beast::error_code ec;
  // Synchronous: endpoints are IP literals or names the local resolver answers quickly.
  auto results = resolver.resolve(e.host, std::to_string(e.port), ec);
  if (ec) return ec;
  if (e.tls && tls_context_ == nullptr) return asio::error::no_protocol_option;
  beast::tcp_stream* lowest = nullptr;
  if (e.tls) {
    tls_.emplace(ioc_, *tls_context_);
    lowest = &beast::get_lowest_layer(*tls_);
  } else {
    tcp_.emplace(ioc_);
    lowest = &*tcp_;
  }
  lowest->expires_at(std::min(connect_deadline, deadline));
  ec = run([&](auto handler) { lowest->async_connect(results, std::move(handler)); });
  if (ec) {
    reset();
    return ec;
  }
  lowest->socket().set_option(tcp::no_delay(true), ec);
  if (!e.tls) return {};

  beast::error_code not_ip;
  asio::ip::make_address(e.host, not_ip);
  // SNI carries host names only (RFC 6066); the certificate check covers IP addresses too.
  if (not_ip && SSL_set_tlsext_host_name(tls_->native_handle(), e.host.c_str()) != 1) {
    reset();
    return asio::error::invalid_argument;
  }
  tls_->set_verify_mode(asio::ssl::verify_peer);
  // OpenSSL checks the name itself (rather than a verify callback), so that a mismatch is
  // reported as one ("hostname mismatch", "IP address mismatch").
  X509_VERIFY_PARAM* param = SSL_get0_param(tls_->native_handle());
  const int named = not_ip ? X509_VERIFY_PARAM_set1_host(param, e.host.c_str(), e.host.size())
                           : X509_VERIFY_PARAM_set1_ip_asc(param, e.host.c_str());
  if (named != 1) {
    reset();
    return asio::error::invalid_argument;
  }
  lowest->expires_at(deadline);
  ec = run([&](auto handler) {
    tls_->async_handshake(asio::ssl::stream_base::client, std::move(handler));
  });
  if (ec) {
    const long verify = SSL_get_verify_result(tls_->native_handle());
    if (verify != X509_V_OK) detail = X509_verify_cert_error_string(verify);
    reset();
  }
  return ec;
}

std::optional<HttpEndpoint> parse_http_endpoint(const std::string& text, bool default_scheme_http) {
  std::string_view url = text;
  HttpEndpoint e;
  if (url.starts_with("https://")) {
    e.tls = true;
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
  } else if (!default_scheme_http || url.find("://") != std::string_view::npos) {
    return std::nullopt;
  }
  if (!url.empty() && url.back() == '/') url.remove_suffix(1);
  std::string_view port;
  if (url.starts_with('[')) {
    const auto close = url.find(']');
    if (close == std::string_view::npos || close + 1 >= url.size() || url[close + 1] != ':') {
      return std::nullopt;
    }
    e.host = std::string(url.substr(1, close - 1));
    port = url.substr(close + 2);
  } else {
    const auto colon = url.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    e.host = std::string(url.substr(0, colon));
    port = url.substr(colon + 1);
  }
  const auto value = parse_int<std::uint16_t>(port);
  if (e.host.empty() || e.host.find('/') != std::string::npos || !value || *value == 0) {
    return std::nullopt;
  }
  e.port = *value;
  return e;
}

std::string HttpEndpoint::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::unique_ptr<asio::ssl::context> make_tls_client_context(const TlsClientFiles& files,
                                                            std::string& problem) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  beast::error_code ec;
  auto fail = [&](const std::string& what) {
    problem = what + ": " + ec.message();
    return nullptr;
  };
  if (files.ca_file.empty()) {
    if (ctx->set_default_verify_paths(ec); ec) return fail("the system's CA certificates");
  } else if (ctx->load_verify_file(files.ca_file, ec); ec) {
    return fail("ca_file '" + files.ca_file + "'");
  }
  if (!files.cert_file.empty()) {
    if (ctx->use_certificate_chain_file(files.cert_file, ec); ec) {
      return fail("cert_file '" + files.cert_file + "'");
    }
    if (ctx->use_private_key_file(files.key_file, asio::ssl::context::pem, ec); ec) {
      return fail("key_file '" + files.key_file + "'");
    }
  }
  return ctx;
}

}  // namespace ticketd::net
