#include "server/sql/query_text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace ticketd::sql {
namespace {

struct SplitCase {
  std::string_view sql;
  std::vector<std::string_view> pieces;
};

TEST(SplitStatements, SplitsAtTopLevelSemicolons) {
  const SplitCase cases[] = {
      {"", {}},
      {"  ", {}},
      {";;", {}},
      {"SELECT 1", {"SELECT 1"}},
      {"SELECT 1;", {"SELECT 1"}},
      {" SELECT 1 ;  SELECT 2 ; ", {"SELECT 1", "SELECT 2"}},
      {"SELECT 1;;SELECT 2", {"SELECT 1", "SELECT 2"}},
      {"SELECT ';' ; SELECT \"a;b\"", {"SELECT ';'", "SELECT \"a;b\""}},
      {"SELECT 'it''s;' ; SELECT 'a\\';b'", {"SELECT 'it''s;'", "SELECT 'a\\';b'"}},
      {"SELECT `a;b`; SELECT 2", {"SELECT `a;b`", "SELECT 2"}},
      {"SELECT 1 /* ; */; SELECT 2 -- ;\n", {"SELECT 1 /* ; */", "SELECT 2 -- ;"}},
      {"SELECT 1; -- trailing comment", {"SELECT 1"}},
      {"SELECT 1; # trailing; comment", {"SELECT 1"}},
      {"/* ping */ SELECT 1; /* c */ SELECT 2", {"/* ping */ SELECT 1", "/* c */ SELECT 2"}},
      {"/*!40101 SET NAMES utf8 */;\nSET autocommit=0;",
       {"/*!40101 SET NAMES utf8 */", "SET autocommit=0"}},
      {"SET NAMES utf8mb4;\nREPLACE INTO Tickets64 (stub) VALUES ('a');\nSELECT LAST_INSERT_ID();",
       {"SET NAMES utf8mb4", "REPLACE INTO Tickets64 (stub) VALUES ('a')",
        "SELECT LAST_INSERT_ID()"}},
      // An unterminated string keeps the rest together, for recognize() to report.
      {"SELECT 1; SELECT 'open; SELECT 2", {"SELECT 1", "SELECT 'open; SELECT 2"}},
      {"SELECT 1; /* open", {"SELECT 1", "/* open"}},
  };
  for (const SplitCase& c : cases) EXPECT_EQ(split_statements(c.sql), c.pieces) << c.sql;
}

TEST(SplitStatements, ReturnsViewsIntoTheQuery) {
  const std::string sql = "SELECT 1; SELECT 2";
  const std::vector<std::string_view> pieces = split_statements(sql);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1].data(), sql.data() + 10);
}

struct PlaceholderCase {
  std::string_view sql;
  std::size_t count;
};

TEST(SplitStatements, StopsOnePieceAfterTheCap) {
  std::string many;
  for (int i = 0; i < 10000; ++i) many += "SELECT 1;";
  EXPECT_EQ(split_statements(many).size(), 10000u);
  EXPECT_EQ(split_statements(many, 1000).size(), 1001u);
  EXPECT_EQ(split_statements("SELECT 1; SELECT 2", 2).size(), 2u);
}

TEST(Placeholders, CountsOnlyPlaceholdersOutsideStringsAndComments) {
  const PlaceholderCase cases[] = {
      {"SELECT 1", 0},
      {"REPLACE INTO Tickets64 (stub) VALUES (?)", 1},
      {"INSERT INTO t VALUES (?,?),(?, ?)", 4},
      {"SELECT '?', \"?\", `?`", 0},
      {"SELECT ? -- ?\n, ? # ?\n /* ? */", 2},
      {"SELECT 'it''s ?', ?", 1},
      {"SELECT 'a\\'?', ?", 1},
      {"/*!40101 SELECT ? */", 1},
      {"SELECT ?, 'open ?", 1},
  };
  for (const PlaceholderCase& c : cases) EXPECT_EQ(count_placeholders(c.sql), c.count) << c.sql;
}

struct SubstituteCase {
  std::string_view sql;
  std::vector<std::string> literals;
  std::string_view expected;
};

TEST(Placeholders, SubstitutesRenderedLiteralsInOrder) {
  const SubstituteCase cases[] = {
      {"SELECT 1", {}, "SELECT 1"},
      {"REPLACE INTO Tickets64 (stub) VALUES (?)",
       {"'a'"},
       "REPLACE INTO Tickets64 (stub) VALUES ('a')"},
      {"SELECT ?,?", {"1", "NULL"}, "SELECT 1,NULL"},
      {"SELECT '?', ? /* ? */, `?`", {"'x'"}, "SELECT '?', 'x' /* ? */, `?`"},
      {"SELECT ?, ?", {"'it''s ?'", "2"}, "SELECT 'it''s ?', 2"},
      {"SELECT ?, ?", {"1"}, "SELECT 1, ?"},  // missing literals leave the placeholder
      {"SELECT ?", {"1", "2"}, "SELECT 1"},
      {"SELECT NEXT ? VALUES FROM s", {"1000"}, "SELECT NEXT 1000 VALUES FROM s"},
  };
  for (const SubstituteCase& c : cases) {
    EXPECT_EQ(substitute_placeholders(c.sql, c.literals), c.expected) << c.sql;
  }
}

}  // namespace
}  // namespace ticketd::sql
