#include "server/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "server/base/bounded_file.h"

namespace ticketd::net {
namespace ssl = boost::asio::ssl;

namespace {

// The largest certificate chain, key or CA bundle read (a CA bundle of a few hundred
// certificates is ~250 KiB).
constexpr std::size_t kMaxTlsFileBytes = 4 * 1024 * 1024;

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
  // Each file is read with a size bound and never blocks (a FIFO is refused), then loaded from
  // memory.
  const auto cert = read_bounded_file(files.cert_file, kMaxTlsFileBytes);
  if (!cert.ok) return {nullptr, "cert_file " + files.cert_file + " " + cert.error};
  const auto key = read_bounded_file(files.key_file, kMaxTlsFileBytes);
  if (!key.ok) return {nullptr, "key_file " + files.key_file + " " + key.error};
  TlsContextResult made;
  if (readable_by_others(key.st)) {
    made.warnings.push_back("key_file " + files.key_file +
                            " (a private key) is readable by other users (mode " +
                            mode_text(key.st) + "); chmod 600 it");
  }
  ctx->use_certificate_chain(boost::asio::buffer(cert.bytes), ec);
  if (ec) return failure("cert_file " + files.cert_file, ec);
  ctx->use_private_key(boost::asio::buffer(key.bytes), ssl::context::pem, ec);
  if (ec) return failure("key_file " + files.key_file, ec);
  if (SSL_CTX_check_private_key(native) != 1) {
    return {nullptr, "key_file " + files.key_file + " does not match cert_file " + files.cert_file};
  }
  if (!files.ca_file.empty()) {
    const auto ca = read_bounded_file(files.ca_file, kMaxTlsFileBytes);
    if (!ca.ok) return {nullptr, "ca_file " + files.ca_file + " " + ca.error};
    ctx->add_certificate_authority(boost::asio::buffer(ca.bytes), ec);
    if (ec) return failure("ca_file " + files.ca_file, ec);
    auto mode = ssl::verify_peer;
    if (files.require_client_cert) mode |= ssl::verify_fail_if_no_peer_cert;
    ctx->set_verify_mode(mode, ec);
    if (ec) return failure("TLS verify mode", ec);
  }
  made.context = std::move(ctx);
  return made;
}

TlsSessionInfo tls_session_info(const SSL* ssl) {
  TlsSessionInfo info;
  if (ssl == nullptr) return info;
  info.version = SSL_get_version(ssl);
  if (const SSL_CIPHER* c = SSL_get_current_cipher(ssl)) info.cipher = SSL_CIPHER_get_name(c);
  return info;
}

}  // namespace ticketd::net
