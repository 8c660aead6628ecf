#include "server/mysql/protocol/auth.h"

#include <gtest/gtest.h>

#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::from_hex;
using testing::hex;
using testing::to_hex;

// The scramble of the HandshakeV10 example in the MySQL docs.
Scramble docs_scramble() {
  const std::string bytes = from_hex("22 3d 4e 50 29 75 39 56 29 64 40 52 5c 55 78 7a 7c 21 29 4b");
  Scramble s{};
  std::copy(bytes.begin(), bytes.end(), s.begin());
  return s;
}

std::string digest_hex(const Sha1Digest& d) {
  return to_hex(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

// Expected values computed independently with Python's hashlib:
//   s1 = sha1(b"secret"); s2 = sha1(s1)
//   token = xor(s1, sha1(scramble + s2))
// s2 is also what MySQL's PASSWORD('secret') shows as *14E65567ABDB5135D0CFD9A70B3032C179A49EE7.
constexpr std::string_view kSecretDoubleSha1 =
    "14 e6 55 67 ab db 51 35 d0 cf d9 a7 0b 30 32 c1 79 a4 9e e7";
constexpr std::string_view kSecretToken =
    "75 2e 52 52 87 c3 81 86 8e 48 f7 c4 a5 07 0a 2e 42 91 c8 54";
// sha1(sha1(b"")), also from hashlib.
constexpr std::string_view kEmptyDoubleSha1 =
    "be 1b de c0 aa 74 b4 dc b0 79 94 3e 70 52 80 96 cc a9 85 f8";

Sha1Digest digest_from_hex(std::string_view h) {
  const std::string bytes = from_hex(h);
  Sha1Digest d{};
  std::copy(bytes.begin(), bytes.end(), d.begin());
  return d;
}

TEST(NativePassword, DoubleSha1MatchesKnownVector) {
  EXPECT_EQ(digest_hex(double_sha1("secret")), hex(kSecretDoubleSha1));
  EXPECT_EQ(digest_hex(double_sha1("")), hex(kEmptyDoubleSha1));
}

TEST(NativePassword, TokenMatchesKnownVector) {
  EXPECT_EQ(to_hex(native_password_token("secret", docs_scramble())), hex(kSecretToken));
}

TEST(NativePassword, EmptyPasswordSendsNoToken) {
  EXPECT_EQ(native_password_token("", docs_scramble()), "");
}

TEST(NativePassword, VerifiesTheRightPassword) {
  const std::string token = from_hex(kSecretToken);
  EXPECT_TRUE(
      verify_native_password(digest_from_hex(kSecretDoubleSha1), docs_scramble(), as_bytes(token)));
}

TEST(NativePassword, RejectsAWrongPasswordOrScramble) {
  const Sha1Digest stored = double_sha1("secret");
  const std::string wrong = native_password_token("Secret", docs_scramble());
  EXPECT_FALSE(verify_native_password(stored, docs_scramble(), as_bytes(wrong)));
  Scramble other = docs_scramble();
  other[0] ^= 1;
  const std::string token = from_hex(kSecretToken);
  EXPECT_FALSE(verify_native_password(stored, other, as_bytes(token)));
}

TEST(NativePassword, RejectsTokensOfTheWrongLength) {
  const Sha1Digest stored = double_sha1("secret");
  const std::string token = from_hex(kSecretToken);
  EXPECT_FALSE(verify_native_password(stored, docs_scramble(), as_bytes(token).first(19)));
  const std::string longer = token + "x";
  EXPECT_FALSE(verify_native_password(stored, docs_scramble(), as_bytes(longer)));
}

TEST(NativePassword, EmptyTokenMatchesOnlyTheEmptyPassword) {
  EXPECT_TRUE(verify_native_password(double_sha1(""), docs_scramble(), {}));
  EXPECT_FALSE(verify_native_password(double_sha1("secret"), docs_scramble(), {}));
  // A non-empty token never matches the empty password.
  const std::string token = from_hex(kSecretToken);
  EXPECT_FALSE(verify_native_password(double_sha1(""), docs_scramble(), as_bytes(token)));
}

TEST(NativePassword, RoundTripsWithAFreshScramble) {
  const Scramble s = make_scramble();
  const std::string token = native_password_token("p\xc3\xa4ss w0rd", s);
  EXPECT_TRUE(verify_native_password(double_sha1("p\xc3\xa4ss w0rd"), s, as_bytes(token)));
}

TEST(Scramble, HasNoNulNoDollarAndSevenBitBytes) {
  for (int i = 0; i < 200; ++i) {
    for (const std::uint8_t b : make_scramble()) {
      EXPECT_NE(b, 0);
      EXPECT_NE(b, '$');
      EXPECT_LT(b, 0x80);
    }
  }
}

TEST(Scramble, DiffersBetweenCalls) { EXPECT_NE(make_scramble(), make_scramble()); }

// caching_sha2_password, computed independently with Python's hashlib:
//   s1 = sha256(b"secret"); s2 = sha256(s1)
//   token = xor(s1, sha256(s2 + scramble))
constexpr std::string_view kSecretDoubleSha256 =
    "38 81 21 9d 08 7d d9 c6 34 37 3f d3 3d fa 33 a2 cb 6b fc 6c 52 0b 64 b8 bb 60 ef 2c eb 53 4a "
    "e7";
constexpr std::string_view kSecretSha2Token =
    "eb f4 e4 d1 4c 75 1e fb 1f 98 f5 10 a2 e8 41 3c 22 08 69 3b b6 3c aa 68 5b c3 2b 63 53 6f 40 "
    "e6";
// sha256(sha256(b"")).
constexpr std::string_view kEmptyDoubleSha256 =
    "5d f6 e0 e2 76 13 59 d3 0a 82 75 05 8e 29 9f cc 03 81 53 45 45 f5 5c f4 3e 41 98 3f 5d 4c 94 "
    "56";

Sha256Digest sha256_from_hex(std::string_view h) {
  const std::string bytes = from_hex(h);
  Sha256Digest d{};
  std::copy(bytes.begin(), bytes.end(), d.begin());
  return d;
}

std::string sha256_hex(const Sha256Digest& d) {
  return to_hex(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

TEST(CachingSha2Password, DoubleSha256MatchesKnownVector) {
  EXPECT_EQ(sha256_hex(double_sha256("secret")), hex(kSecretDoubleSha256));
  EXPECT_EQ(sha256_hex(double_sha256("")), hex(kEmptyDoubleSha256));
}

TEST(CachingSha2Password, TokenMatchesKnownVector) {
  EXPECT_EQ(to_hex(caching_sha2_token("secret", docs_scramble())), hex(kSecretSha2Token));
  EXPECT_EQ(caching_sha2_token("", docs_scramble()), "");
}

TEST(CachingSha2Password, FastAuthenticationVerifiesOnlyTheRightToken) {
  const Sha256Digest stored = sha256_from_hex(kSecretDoubleSha256);
  const std::string token = from_hex(kSecretSha2Token);
  EXPECT_TRUE(verify_caching_sha2_token(stored, docs_scramble(), as_bytes(token)));
  std::string flipped = token;
  flipped[31] = static_cast<char>(flipped[31] ^ 1);
  EXPECT_FALSE(verify_caching_sha2_token(stored, docs_scramble(), as_bytes(flipped)));
  Scramble other = docs_scramble();
  other[0] = static_cast<std::uint8_t>(other[0] + 1);
  EXPECT_FALSE(verify_caching_sha2_token(stored, other, as_bytes(token)));
  EXPECT_FALSE(
      verify_caching_sha2_token(double_sha256("Secret"), docs_scramble(), as_bytes(token)));
  // A native-length token, a token one byte short or long: never a match.
  for (std::size_t n : {20, 31, 33}) {
    EXPECT_FALSE(verify_caching_sha2_token(stored, docs_scramble(), as_bytes(std::string(n, 'x'))))
        << n;
  }
}

TEST(CachingSha2Password, EmptyTokenOrOneNulMatchesOnlyTheEmptyPassword) {
  const Sha256Digest empty = double_sha256("");
  EXPECT_TRUE(verify_caching_sha2_token(empty, docs_scramble(), as_bytes(std::string_view())));
  EXPECT_TRUE(
      verify_caching_sha2_token(empty, docs_scramble(), as_bytes(std::string_view("\0", 1))));
  EXPECT_FALSE(verify_caching_sha2_token(sha256_from_hex(kSecretDoubleSha256), docs_scramble(),
                                         as_bytes(std::string_view())));
}

TEST(CachingSha2Password, FullAuthenticationChecksTheCleartextPassword) {
  const Sha256Digest stored = sha256_from_hex(kSecretDoubleSha256);
  EXPECT_TRUE(verify_cleartext_password(stored, "secret"));
  EXPECT_FALSE(verify_cleartext_password(stored, "secret "));
  EXPECT_FALSE(verify_cleartext_password(stored, ""));
}

TEST(CachingSha2Password, RoundTripsWithAFreshScramble) {
  const Scramble s = make_scramble();
  EXPECT_TRUE(verify_caching_sha2_token(double_sha256("pa55 word"), s,
                                        as_bytes(caching_sha2_token("pa55 word", s))));
}

}  // namespace
}  // namespace ticketd::mysql
