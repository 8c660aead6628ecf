#include "server/http/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>
#include <cctype>

#include "server/base/hex.h"

namespace ticketd::http {
namespace {

std::array<unsigned char, SHA256_DIGEST_LENGTH> digest(std::string_view s) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

}  // namespace

TokenDigest token_digest(std::string_view token) { return digest(token); }

TokenVerifier::TokenVerifier(std::string_view entry) : digest_(digest(entry)) {
  constexpr std::string_view kPrefix = "sha256:";
  if (entry.starts_with(kPrefix)) {
    if (auto d = from_hex<32>(entry.substr(kPrefix.size()))) digest_ = *d;
  }
}

bool TokenVerifier::matches(const TokenDigest& presented) const {
  return CRYPTO_memcmp(digest_.data(), presented.data(), digest_.size()) == 0;
}

bool constant_time_equals(std::string_view a, std::string_view b) {
  const auto da = digest(a);
  const auto db = digest(b);
  return CRYPTO_memcmp(da.data(), db.data(), da.size()) == 0;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) {
      return std::nullopt;
    }
  }
  auto rest = authorization.substr(kScheme.size());
  if (rest.front() != ' ' && rest.front() != '\t') return std::nullopt;
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  if (rest.empty()) return std::nullopt;
  return rest;
}

bool authorized(const std::vector<TokenVerifier>& tokens, std::string_view authorization) {
  const auto presented = bearer_token(authorization);
  if (!presented) return false;
  const TokenDigest d = digest(*presented);
  bool ok = false;
  for (const auto& t : tokens) ok |= t.matches(d);
  return ok;
}

}  // namespace ticketd::http
