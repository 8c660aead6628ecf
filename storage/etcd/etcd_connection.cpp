#include "storage/etcd/etcd_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <cerrno>
#include <utility>

namespace ticketd::etcd::detail {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

bool is_tls_error(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         ec.category() == asio::ssl::error::get_stream_category();
}

Connection::Connection(asio::io_context& ioc, asio::ssl::context* tls)
    : ioc_(ioc), tls_context_(tls) {}

Connection::~Connection() { reset(); }

void Connection::expires_at(steady::time_point t) {
  if (tcp_) tcp_->expires_at(t);
  if (tls_) beast::get_lowest_layer(*tls_).expires_at(t);
}

void Connection::close() {
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

bool Connection::peer_closed() {
  if (!is_open()) return true;
  auto& socket = tls_ ? beast::get_lowest_layer(*tls_).socket() : tcp_->socket();
  if (!socket.is_open()) return true;
  char byte = 0;
  const auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  return true;  // 0: the peer closed it; > 0: bytes that belong to no request
}

void Connection::reset() {
  close();
  tcp_.reset();
  tls_.reset();
}

boost::system::error_code Connection::connect(const Endpoint& e,
                                              steady::time_point connect_deadline,
                                              steady::time_point deadline, std::string& detail) {
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

}  // namespace ticketd::etcd::detail
