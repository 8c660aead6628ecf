#include "server/sql/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace ticketd::sql {
namespace {

// Renders tokens as "kind:value" joined by spaces, which keeps the cases one line each.
std::string lex(std::string_view sql) {
  std::string out;
  for (const Token& t : tokenize(sql)) {
    if (!out.empty()) out += ' ';
    switch (t.kind) {
      case TokenKind::kWord:
        out += "w:" + t.value;
        break;
      case TokenKind::kQuotedIdentifier:
        out += "q:" + t.value;
        break;
      case TokenKind::kString:
        out += "s:" + t.value;
        break;
      case TokenKind::kNumber:
        out += "n:" + t.value;
        break;
      case TokenKind::kPlaceholder:
        out += "?";
        break;
      case TokenKind::kUserVariable:
        out += "@" + t.value;
        break;
      case TokenKind::kSystemVariable:
        out += "@@" + (t.scope.empty() ? "" : t.scope + ".") + t.value;
        break;
      case TokenKind::kOperator:
        out += "op:" + t.value;
        break;
      case TokenKind::kEnd:
        out += "end";
        break;
      case TokenKind::kError:
        out += "error:" + std::string(t.text);
        break;
    }
  }
  return out;
}

struct LexCase {
  std::string_view sql;
  std::string_view tokens;
};

constexpr LexCase kLexCases[] = {
    {"", "end"},
    {"SELECT 1", "w:SELECT n:1 end"},
    {"select\t\r\n1", "w:select n:1 end"},
    {"a -- comment\nb", "w:a w:b end"},
    {"a --\tcomment", "w:a end"},
    {"a --", "w:a end"},
    {"1--1", "n:1 op:- op:- n:1 end"},  // MySQL needs whitespace after "--"
    {"a # comment\nb", "w:a w:b end"},
    {"a /* x */ b /**/ c", "w:a w:b w:c end"},
    {"a /*+ NO_INDEX(t) */ b", "w:a w:b end"},
    {"/*!40101 SET NAMES utf8 */", "w:SET w:NAMES w:utf8 end"},
    {"/*!SET x=1*/;", "w:SET w:x op:= n:1 op:; end"},
    {"/*M!100101 SET x=1 */", "w:SET w:x op:= n:1 end"},
    {"/*!50503 SELECT 2*/", "w:SELECT n:2 end"},
    {"`a``b` `select`", "q:a`b q:select end"},
    {"'it''s' 'a\\'b' \"d\"\"q\" \"x\\\"y\"", "s:it's s:a'b s:d\"q s:x\"y end"},
    {"'\\n\\t\\\\\\%\\_\\q'", "s:\n\t\\\\%\\_q end"},
    {"'a\"b' \"a'b\"", "s:a\"b s:a'b end"},
    {"`a\\b`", "q:a\\b end"},
    {"42 1.5 .5 1e3 1.5E-3 0x1F 0b101 1.",
     "n:42 n:1.5 n:.5 n:1e3 n:1.5E-3 n:0x1F n:0b101 n:1. end"},
    {"1abc 123_tbl 0xZZ t1", "w:1abc w:123_tbl w:0xZZ w:t1 end"},
    {"db.t db.`t`", "w:db op:. w:t w:db op:. q:t end"},
    {"? ?,?", "? ? op:, ? end"},
    {"@x @X.y @'a b' @`c` @\"d\"", "@x @x.y @a b @c @d end"},
    {"@@version_comment @@SESSION.sql_mode @@global.x @@local.y @@Session",
     "@@version_comment @@session.sql_mode @@global.x @@local.y @@session end"},
    {"a:=1 b<=>c d<=e f>=g h<>i j!=k l||m n&&o p<<q r>>s t->u v->>w",
     "w:a op::= n:1 w:b op:<=> w:c w:d op:<= w:e w:f op:>= w:g w:h op:<> w:i w:j op:!= w:k "
     "w:l op:|| w:m w:n op:&& w:o w:p op:<< w:q w:r op:>> w:s w:t op:-> w:u w:v op:->> w:w end"},
    {"(a,b);", "op:( w:a op:, w:b op:) op:; end"},
    {"naïve", "w:naïve end"},
    {"'unterminated", "error:'unterminated"},
    {"SELECT `x", "w:SELECT error:`x"},
    {"a /* open", "w:a error:/* open"},
    {"@'open", "error:@'open"},
};

TEST(Lexer, TokenizesEachCase) {
  for (const LexCase& c : kLexCases) EXPECT_EQ(lex(c.sql), c.tokens) << c.sql;
}

TEST(Lexer, TokensPointIntoTheQuery) {
  const std::string_view sql = "SELECT  'a''b' AS `x`";
  const std::vector<Token> tokens = tokenize(sql);
  ASSERT_EQ(tokens.size(), 5u);
  EXPECT_EQ(tokens[1].offset, 8u);
  EXPECT_EQ(tokens[1].text, "'a''b'");
  EXPECT_EQ(tokens[1].end(), 14u);
  EXPECT_EQ(tokens[3].text, "`x`");
  EXPECT_EQ(tokens[4].kind, TokenKind::kEnd);
  EXPECT_EQ(tokens[4].offset, sql.size());
}

TEST(Lexer, MatchesKeywordsCaseInsensitivelyButNotQuoted) {
  const std::vector<Token> tokens = tokenize("SeLeCt `select` 'select'");
  EXPECT_TRUE(tokens[0].is_keyword("SELECT"));
  EXPECT_FALSE(tokens[1].is_keyword("SELECT"));
  EXPECT_FALSE(tokens[2].is_keyword("SELECT"));
}

TEST(Lexer, KeepsReturningEndAfterTheEnd) {
  Lexer lexer("x");
  EXPECT_EQ(lexer.next().kind, TokenKind::kWord);
  EXPECT_EQ(lexer.next().kind, TokenKind::kEnd);
  EXPECT_EQ(lexer.next().kind, TokenKind::kEnd);
}

}  // namespace
}  // namespace ticketd::sql
