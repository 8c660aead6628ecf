#include "server/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace ticketd::net {
namespace ssl = boost::asio::ssl;

namespace {

// TLS 1.2 suites with forward secrecy and authenticated encryption (Mozilla's "intermediate").
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384";

TlsContextResult failure(const std::string& what, const boost::system::error_code& ec) {
  return {nullptr, what + ": " + ec.message()};
}

}  // namespace

TlsContextResult make_server_tls_context(const TlsFiles& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::no_compression,
                   ec);
  if (ec) return failure("TLS options", ec);
  SSL_CTX* native = ctx->native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    return {nullptr, "TLS: cannot set the protocol version or ciphers"};
  }
  SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
  ctx->use_certificate_chain_file(files.cert_file, ec);
  if (ec) return failure("cert_file " + files.cert_file, ec);
  ctx->use_private_key_file(files.key_file, ssl::context::pem, ec);
  if (ec) return failure("key_file " + files.key_file, ec);
  if (SSL_CTX_check_private_key(native) != 1) {
    return {nullptr, "key_file " + files.key_file + " does not match cert_file " + files.cert_file};
  }
  if (!files.ca_file.empty()) {
    ctx->load_verify_file(files.ca_file, ec);
    if (ec) return failure("ca_file " + files.ca_file, ec);
    auto mode = ssl::verify_peer;
    if (files.require_client_cert) mode |= ssl::verify_fail_if_no_peer_cert;
    ctx->set_verify_mode(mode, ec);
    if (ec) return failure("TLS verify mode", ec);
  }
  return {std::move(ctx), {}};
}

TlsSessionInfo tls_session_info(const SSL* ssl) {
  TlsSessionInfo info;
  if (ssl == nullptr) return info;
  info.version = SSL_get_version(ssl);
  if (const SSL_CIPHER* c = SSL_get_current_cipher(ssl)) info.cipher = SSL_CIPHER_get_name(c);
  return info;
}

}  // namespace ticketd::net
