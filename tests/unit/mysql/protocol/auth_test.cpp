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

}  // namespace
}  // namespace ticketd::mysql
