// Server-side TLS settings for both front ends, built once at start-up.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <vector>

namespace ticketd::net {

/// Where a front end's certificate, key and (optionally) client CAs are, as PEM files.
struct TlsFiles {
  std::string cert_file;             // the server's certificate chain, leaf first
  std::string key_file;              // its private key (unencrypted)
  std::string ca_file;               // empty: no client certificate is asked for
  bool require_client_cert = false;  // a client without a valid certificate is refused
};

/// A TLS context or why it could not be built (a missing file, a key that does not match).
struct TlsContextResult {
  std::shared_ptr<boost::asio::ssl::context> context;
  std::string error;
  /// E.g. a private key readable by other users; the context is usable.
  std::vector<std::string> warnings;
};

/// TLS 1.2 or newer, no compression or renegotiation, forward-secret AEAD ciphers for TLS 1.2
/// (TLS 1.3's suites are all modern), the server's cipher order. With `ca_file`, client
/// certificates are requested and verified (and required with `require_client_cert`).
/// Thread safety: the context is shared read-only by every session once built.
[[nodiscard]] TlsContextResult make_server_tls_context(const TlsFiles& files);

/// The negotiated protocol ("TLSv1.3") and cipher ("TLS_AES_256_GCM_SHA384") of a session.
struct TlsSessionInfo {
  std::string version;
  std::string cipher;
};
[[nodiscard]] TlsSessionInfo tls_session_info(const SSL* ssl);

}  // namespace ticketd::net
