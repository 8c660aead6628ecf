#include "server/http/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>
#include <cctype>

namespace ticketd::http {
namespace {

std::array<unsigned char, SHA256_DIGEST_LENGTH> digest(std::string_view s) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

}  // namespace

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

bool authorized(const std::vector<std::string>& tokens, std::string_view authorization) {
  const auto presented = bearer_token(authorization);
  if (!presented) return false;
  bool ok = false;
  for (const auto& t : tokens) ok |= constant_time_equals(*presented, t);
  return ok;
}

}  // namespace ticketd::http
