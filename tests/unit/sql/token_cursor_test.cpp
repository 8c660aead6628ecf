// The token cursor the recognizer and the evaluator share.
#include "server/sql/token_cursor.h"

#include <gtest/gtest.h>

namespace ticketd::sql {
namespace {

TEST(TokenCursor, PeeksAndAdvancesButNeverPastTheEnd) {
  TokenCursor c("SELECT 1");
  EXPECT_TRUE(c.at_keyword("select"));
  EXPECT_EQ(c.peek(1).text, "1");
  EXPECT_EQ(c.peek(9).kind, TokenKind::kEnd);
  EXPECT_EQ(c.advance().text, "SELECT");
  EXPECT_EQ(c.advance().text, "1");
  EXPECT_TRUE(c.at_end());
  EXPECT_EQ(c.advance().kind, TokenKind::kEnd);
  EXPECT_EQ(c.position(), 2u);
  c.seek(100);
  EXPECT_EQ(c.position(), 2u);
}

TEST(TokenCursor, AcceptsKeywordsAllOrNothing) {
  TokenCursor c("SHOW FULL TABLES;");
  EXPECT_FALSE(c.accept_keywords({"SHOW", "TABLES"}));
  EXPECT_EQ(c.position(), 0u);
  EXPECT_TRUE(c.accept_keywords({"SHOW", "FULL"}));
  EXPECT_FALSE(c.accept_keyword("FULL"));
  EXPECT_TRUE(c.accept_keyword("tables"));
  EXPECT_FALSE(c.accept_operator(","));
  EXPECT_TRUE(c.at_operator(";"));
  EXPECT_TRUE(c.accept_operator(";"));
  EXPECT_TRUE(c.at_end());
}

TEST(TokenCursor, AnEmptyTextIsAtItsEnd) {
  TokenCursor c("  -- nothing\n");
  EXPECT_TRUE(c.at_end());
  EXPECT_EQ(c.tokens().size(), 1u);
  EXPECT_FALSE(c.accept_keyword("SELECT"));
}

}  // namespace
}  // namespace ticketd::sql
