// Bearer-token checks for the HTTP front end.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticketd::http {

using TokenDigest = std::array<unsigned char, 32>;

/// SHA-256 of a token: what ticketd keeps of each configured token, and what `ticketd
/// hash-token` prints (in hex, after "sha256:").
[[nodiscard]] TokenDigest token_digest(std::string_view token);

/// One configured bearer token, kept as its SHA-256 only. Built from a config entry: the token
/// in clear, or "sha256:" and its digest in hex (the config loader has checked the form).
/// Implicit, so options read as lists of entries.
class TokenVerifier {
 public:
  TokenVerifier(const char* entry) : TokenVerifier(std::string_view(entry)) {}
  TokenVerifier(const std::string& entry) : TokenVerifier(std::string_view(entry)) {}
  explicit TokenVerifier(std::string_view entry);

  /// Constant time in the digest's contents.
  [[nodiscard]] bool matches(const TokenDigest& presented) const;

 private:
  TokenDigest digest_{};
};

/// True when a and b are equal. Takes the same time whatever the contents and lengths: both
/// sides are hashed (SHA-256) and the digests compared with CRYPTO_memcmp, so neither a
/// matching prefix nor the token's length leaks through timing.
[[nodiscard]] bool constant_time_equals(std::string_view a, std::string_view b);

/// The token of an "Authorization: Bearer <token>" value (scheme case-insensitive), or nullopt.
[[nodiscard]] std::optional<std::string_view> bearer_token(std::string_view authorization);

/// True when `authorization` carries one of `tokens`. The presented token is hashed once and
/// every verifier is compared (no early exit).
[[nodiscard]] bool authorized(const std::vector<TokenVerifier>& tokens,
                              std::string_view authorization);

}  // namespace ticketd::http
