#include "server/http/auth.h"

#include <gtest/gtest.h>

namespace ticketd::http {
namespace {

TEST(HttpAuthHelpers, ConstantTimeEqualsComparesContentAndLength) {
  EXPECT_TRUE(constant_time_equals("abc", "abc"));
  EXPECT_TRUE(constant_time_equals("", ""));
  EXPECT_FALSE(constant_time_equals("abc", "abd"));
  EXPECT_FALSE(constant_time_equals("abc", "abcd"));
  EXPECT_FALSE(constant_time_equals("abc", ""));
  EXPECT_FALSE(constant_time_equals(std::string_view("a\0b", 3), "a"));
}

TEST(HttpAuthHelpers, BearerTokenParsing) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("BEARER\tabc "), "abc");
  EXPECT_EQ(bearer_token("bearer  a b"), "a b");
  EXPECT_FALSE(bearer_token("Bearerabc"));
  EXPECT_FALSE(bearer_token("Bearer "));
  EXPECT_FALSE(bearer_token("Basic abc"));
  EXPECT_FALSE(bearer_token(""));
}

TEST(HttpAuthHelpers, AuthorizedChecksEveryToken) {
  const std::vector<TokenVerifier> tokens{"one", "two"};
  EXPECT_TRUE(authorized(tokens, "Bearer one"));
  EXPECT_TRUE(authorized(tokens, "Bearer two"));
  EXPECT_FALSE(authorized(tokens, "Bearer three"));
  EXPECT_FALSE(authorized({}, "Bearer one"));
}

}  // namespace
}  // namespace ticketd::http

namespace ticketd::http {
namespace {

TEST(TokenVerifier, AcceptsTheTokenInClearOrAsItsSha256) {
  // sha256(b"0123456789abcdef-token"), computed with Python's hashlib.
  const std::vector<TokenVerifier> tokens{
      "sha256:3c18109ce815143332983177dfecc23e848446a79ddcca321f551496e0de9c70",
      "another-token-in-clear"};
  EXPECT_TRUE(authorized(tokens, "Bearer 0123456789abcdef-token"));
  EXPECT_TRUE(authorized(tokens, "Bearer another-token-in-clear"));
  EXPECT_FALSE(authorized(tokens, "Bearer 0123456789abcdef-toke"));
  // The hashed entry is not itself a token.
  EXPECT_FALSE(authorized(
      tokens, "Bearer sha256:3c18109ce815143332983177dfecc23e848446a79ddcca321f551496e0de9c70"));
}

TEST(TokenVerifier, UpperCaseHexIsTheSameDigest) {
  const std::vector<TokenVerifier> tokens{
      "sha256:3C18109CE815143332983177DFECC23E848446A79DDCCA321F551496E0DE9C70"};
  EXPECT_TRUE(authorized(tokens, "Bearer 0123456789abcdef-token"));
}

TEST(TokenDigest, IsTheSha256OfTheToken) {
  const TokenDigest d = token_digest("0123456789abcdef-token");
  EXPECT_EQ(d[0], 0x3c);
  EXPECT_EQ(d[31], 0x70);
}

}  // namespace
}  // namespace ticketd::http
