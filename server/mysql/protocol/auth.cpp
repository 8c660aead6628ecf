#include "server/mysql/protocol/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <initializer_list>
#include <stdexcept>

namespace ticketd::mysql {
namespace {

// SHA1 over the concatenation of `parts`. EVP keeps this off the deprecated SHA1_* API.
Sha1Digest sha1(std::initializer_list<ByteView> parts) {
  Sha1Digest out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr) == 1;
  for (const ByteView part : parts) {
    ok = ok && EVP_DigestUpdate(ctx, part.data(), part.size()) == 1;
  }
  unsigned int n = 0;
  ok = ok && EVP_DigestFinal_ex(ctx, out.data(), &n) == 1 && n == out.size();
  EVP_MD_CTX_free(ctx);
  if (!ok) throw std::runtime_error("OpenSSL SHA1 failed");
  return out;
}

ByteView view(const std::array<std::uint8_t, 20>& a) { return {a.data(), a.size()}; }

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
  const Sha1Digest mask = sha1({view(scramble), view(stage2)});
  std::string token(stage1.size(), '\0');
  for (std::size_t i = 0; i < token.size(); ++i) {
    token[i] = static_cast<char>(stage1[i] ^ mask[i]);
  }
  return token;
}

bool verify_native_password(const Sha1Digest& stored_double_sha1, const Scramble& scramble,
                            ByteView client_token) {
  if (client_token.empty()) {
    const Sha1Digest empty = double_sha1("");
    return CRYPTO_memcmp(empty.data(), stored_double_sha1.data(), empty.size()) == 0;
  }
  if (client_token.size() != Sha1Digest{}.size()) return false;
  const Sha1Digest mask = sha1({view(scramble), view(stored_double_sha1)});
  Sha1Digest candidate_stage1{};
  for (std::size_t i = 0; i < candidate_stage1.size(); ++i) {
    candidate_stage1[i] = client_token[i] ^ mask[i];
  }
  const Sha1Digest candidate_stage2 = sha1({view(candidate_stage1)});
  return CRYPTO_memcmp(candidate_stage2.data(), stored_double_sha1.data(),
                       candidate_stage2.size()) == 0;
}

}  // namespace ticketd::mysql
