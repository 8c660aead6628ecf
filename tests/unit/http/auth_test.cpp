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
  const std::vector<std::string> tokens{"one", "two"};
  EXPECT_TRUE(authorized(tokens, "Bearer one"));
  EXPECT_TRUE(authorized(tokens, "Bearer two"));
  EXPECT_FALSE(authorized(tokens, "Bearer three"));
  EXPECT_FALSE(authorized({}, "Bearer one"));
}

}  // namespace
}  // namespace ticketd::http
