#include "server/mysql/protocol/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <initializer_list>
#include <stdexcept>

namespace ticketd::mysql {
namespace {

// The digest of the concatenation of `parts`. EVP keeps this off the deprecated SHA1_* API.
template <std::size_t N>
std::array<std::uint8_t, N> digest(const EVP_MD* md, std::initializer_list<ByteView> parts) {
  std::array<std::uint8_t, N> out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, md, nullptr) == 1;
  for (const ByteView part : parts) {
    ok = ok && EVP_DigestUpdate(ctx, part.data(), part.size()) == 1;
  }
  unsigned int n = 0;
  ok = ok && EVP_DigestFinal_ex(ctx, out.data(), &n) == 1 && n == out.size();
  EVP_MD_CTX_free(ctx);
  if (!ok) throw std::runtime_error("OpenSSL digest failed");
  return out;
}

Sha1Digest sha1(std::initializer_list<ByteView> parts) { return digest<20>(EVP_sha1(), parts); }
Sha256Digest sha256_of(std::initializer_list<ByteView> parts) {
  return digest<32>(EVP_sha256(), parts);
}

template <std::size_t N>
ByteView view(const std::array<std::uint8_t, N>& a) {
  return {a.data(), a.size()};
}

template <std::size_t N>
bool equal(const std::array<std::uint8_t, N>& a, const std::array<std::uint8_t, N>& b) {
  return CRYPTO_memcmp(a.data(), b.data(), N) == 0;
}

// token XOR mask, as a string of raw bytes.
template <std::size_t N>
std::string masked(const std::array<std::uint8_t, N>& value,
                   const std::array<std::uint8_t, N>& mask) {
  std::string token(N, '\0');
  for (std::size_t i = 0; i < N; ++i) token[i] = static_cast<char>(value[i] ^ mask[i]);
  return token;
}

// An empty token, or the one NUL byte some clients send for an empty password.
bool empty_token(ByteView token) { return token.empty() || (token.size() == 1 && token[0] == 0); }

}  // namespace

Scramble make_scramble() {
  Scramble s{};
  if (RAND_bytes(s.data(), static_cast<int>(s.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  for (auto& b : s) {
    b &= 0x7F;
    if (b == 0 || b == '$') ++b;
  }
  return s;
}

Sha1Digest double_sha1(std::string_view password) {
  const Sha1Digest stage1 = sha1({as_bytes(password)});
  return sha1({view(stage1)});
}

std::string native_password_token(std::string_view password, const Scramble& scramble) {
  if (password.empty()) return {};
  const Sha1Digest stage1 = sha1({as_bytes(password)});
  const Sha1Digest stage2 = sha1({view(stage1)});
  return masked(stage1, sha1({view(scramble), view(stage2)}));
}

bool verify_native_password(const Sha1Digest& stored_double_sha1, const Scramble& scramble,
                            ByteView client_token) {
  if (client_token.empty()) return equal(double_sha1(""), stored_double_sha1);
  if (client_token.size() != Sha1Digest{}.size()) return false;
  const Sha1Digest mask = sha1({view(scramble), view(stored_double_sha1)});
  Sha1Digest candidate_stage1{};
  for (std::size_t i = 0; i < candidate_stage1.size(); ++i) {
    candidate_stage1[i] = client_token[i] ^ mask[i];
  }
  return equal(sha1({view(candidate_stage1)}), stored_double_sha1);
}

Sha256Digest double_sha256(std::string_view password) {
  const Sha256Digest stage1 = sha256_of({as_bytes(password)});
  return sha256_of({view(stage1)});
}

std::string caching_sha2_token(std::string_view password, const Scramble& scramble) {
  if (password.empty()) return {};
  const Sha256Digest stage1 = sha256_of({as_bytes(password)});
  const Sha256Digest stage2 = sha256_of({view(stage1)});
  // The order differs from mysql_native_password: the digest first, then the scramble.
  return masked(stage1, sha256_of({view(stage2), view(scramble)}));
}

bool verify_caching_sha2_token(const Sha256Digest& stored_double_sha256, const Scramble& scramble,
                               ByteView client_token) {
  if (empty_token(client_token)) return equal(double_sha256(""), stored_double_sha256);
  if (client_token.size() != Sha256Digest{}.size()) return false;
  const Sha256Digest mask = sha256_of({view(stored_double_sha256), view(scramble)});
  Sha256Digest candidate_stage1{};
  for (std::size_t i = 0; i < candidate_stage1.size(); ++i) {
    candidate_stage1[i] = client_token[i] ^ mask[i];
  }
  return equal(sha256_of({view(candidate_stage1)}), stored_double_sha256);
}

bool verify_cleartext_password(const Sha256Digest& stored_double_sha256,
                               std::string_view password) {
  return equal(double_sha256(password), stored_double_sha256);
}

}  // namespace ticketd::mysql
