// Session statements through the executor: SET and its refusals, SHOW of server state, USE,
// KILL and the answers to what the recognizer could not make sense of.
#include <gtest/gtest.h>

#include "server/mysql/error_mapping.h"
#include "server/mysql/server_variables.h"
#include "tests/unit/mysql/executor_fixture.h"

namespace ticketd::mysql {
namespace {

using SessionStatements = testing::ExecutorTest;

TEST_F(SessionStatements, SetRecordsWhatSelectReadsBack) {
  ok("SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci, @a = 'x', sql_mode = "
     "concat(@@sql_mode, ',STRICT_ALL_TABLES')");
  EXPECT_EQ(value("SELECT @a"), "x");
  EXPECT_EQ(value("SELECT @@collation_connection"), "utf8mb4_unicode_ci");
  EXPECT_EQ(value("SELECT @@sql_mode"),
            "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION,STRICT_ALL_TABLES");
  EXPECT_EQ(session_.memory.used(), session_.variable_bytes);
}

TEST_F(SessionStatements, SetRefusalsChangeNothing) {
  struct Case {
    std::string sql;
    std::uint16_t code;
    std::string_view state;
  };
  const Case cases[] = {
      {"SET GLOBAL wait_timeout = 1", kErSpecificAccessDenied, "42000"},
      {"SET @a = 1, auto_increment_increment = 2", kErNotSupportedYet, "42000"},
      {"SET @a = 1, autocommit = 'maybe'", kErWrongValueForVar, "42000"},
      {"SET @a = 1, @" + std::string(65, 'v') + " = 2", kErTooLongIdent, "42000"},
      {"SET @a = 1, " + std::string(65, 'v') + " = 2", kErTooLongIdent, "42000"},
  };
  for (const auto& c : cases) {
    auto e = err(c.sql);
    EXPECT_EQ(e.code, c.code) << c.sql;
    EXPECT_EQ(e.sql_state, c.state) << c.sql;
  }
  EXPECT_EQ(value("SELECT @a"), std::nullopt);
  EXPECT_EQ(err("SET autocommit = 'maybe'").message,
            "Variable 'autocommit' can't be set to the value of ''maybe''");
  ok("SET auto_increment_increment = 1");  // the server's own value is fine
}

TEST_F(SessionStatements, VariableNamesStopAtMysqldsSixtyFourCharacters) {
  const std::string longest(kMaxIdentifierLength, 'v');
  ok("SET @" + longest + " = 1, " + longest + " = 2");
  EXPECT_EQ(value("SELECT @" + longest), "1");
  // A megabyte-long name is refused before it is kept or matched by LIKE (issue 27.11).
  const std::string huge(1 << 20, 'v');
  auto e = err("SET " + huge + " = 1");
  EXPECT_EQ(e.code, kErTooLongIdent);
  EXPECT_LE(e.message.size(), 200u);  // the name is clipped in the message
  EXPECT_EQ(session_.variables.count(huge), 0u);
}

TEST_F(SessionStatements, ShowVariablesAndStatusAreNameValuePairs) {
  auto v = rows("SHOW VARIABLES LIKE 'max_allowed_packet'");
  ASSERT_EQ(v.columns.size(), 2u);
  EXPECT_EQ(v.columns[0].name, "Variable_name");
  ASSERT_EQ(v.rows.size(), 1u);
  EXPECT_EQ(v.rows[0][1], "16777216");
  auto s = rows("SHOW STATUS WHERE Variable_name = 'Ticketd_role'");
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0][1], "leader");
  clock_.advance(5000);
  EXPECT_EQ(rows("SHOW STATUS LIKE 'Uptime'").rows[0][1], "5");
}

TEST(LikeMatch, FollowsMysqlsWildcardsAndEscapes) {
  struct Case {
    const char* text;
    const char* pattern;
    bool match;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"max_allowed_packet", "max%", true},
           {"max_allowed_packet", "MAX\\_ALLOWED%", true},
           {"maxXallowed_packet", "max\\_allowed%", false},
           {"max_allowed_packet", "%packet", true},
           {"max_allowed_packet", "%pack", false},
           {"max_allowed_packet", "m_x%_p%t", true},
           {"abc", "a%%%%c", true},
           {"abc", "abc_", false},
           {"abc", "%", true},
           {"", "%", true},
           {"", "", true},
           {"", "_", false},
           {"50%", "50\\%", true},
           {"500", "50\\%", false},
           {"a\\", "a\\", true},  // a trailing backslash is itself
           {"aaaaaaaaaaaaaaaaaaab", "%a%a%a%b", true},
           {"aaaaaaaaaaaaaaaaaaaa", "%a%a%a%b", false},
       }) {
    EXPECT_EQ(like_match(c.text, c.pattern), c.match) << c.text << " LIKE " << c.pattern;
  }
}

TEST_F(SessionStatements, HostileLikePatternsAndInListsAreReadOnce) {
  // A megabyte pattern against every variable name: the old matcher backtracked over the whole
  // pattern for each character of each name (issue 27.11); this one reads it once per name.
  std::string pattern;
  for (int i = 0; i < (1 << 19); ++i) pattern += "%a";
  EXPECT_TRUE(rows("SHOW VARIABLES LIKE '" + pattern + "'").rows.empty());
  EXPECT_EQ(rows("SHOW VARIABLES LIKE '" + std::string(1 << 20, '%') + "'").rows.size(),
            rows("SHOW VARIABLES").rows.size());
  // 100,000 names in IN (...) (near the statement's token budget): looked up, not compared one
  // by one for each row.
  std::string in = "SHOW VARIABLES WHERE Variable_name IN (";
  for (int i = 0; i < 100000; ++i) in += "'v" + std::to_string(i) + "',";
  in += "'MAX_ALLOWED_PACKET', 'version')";
  auto r = rows(in);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0][0], "max_allowed_packet");
}

TEST_F(SessionStatements, ShowWarningsKeepsThePreviousStatementsNotes) {
  ok("DROP TABLE IF EXISTS Nope");
  auto w = rows("SHOW WARNINGS");
  ASSERT_EQ(w.rows.size(), 1u);
  EXPECT_EQ(w.columns[1].kind, ColumnKind::kBigint);
  EXPECT_EQ(w.rows[0][0], "Note");
  EXPECT_EQ(w.rows[0][1], "1051");
  EXPECT_EQ(rows("SHOW WARNINGS").rows.size(), 1u);  // SHOW WARNINGS keeps them
  EXPECT_TRUE(rows("SHOW ERRORS").rows.empty());
  ok("DO 1");
  EXPECT_TRUE(rows("SHOW WARNINGS").rows.empty());
}

TEST_F(SessionStatements, ConstantShowsFilterOnTheirFirstColumn) {
  EXPECT_EQ(rows("SHOW DATABASES").rows.size(), 2u);
  EXPECT_EQ(rows("SHOW DATABASES LIKE 'tick%'").rows.size(), 1u);
  EXPECT_EQ(rows("SHOW COLLATION LIKE 'utf8mb4%'").rows.size(), 1u);
  EXPECT_EQ(rows("SHOW CHARACTER SET").rows.size(), 2u);
  EXPECT_EQ(rows("SHOW ENGINES").columns.size(), 6u);
  auto p = rows("SHOW PROCESSLIST");
  ASSERT_EQ(p.rows.size(), 1u);
  EXPECT_EQ(p.rows[0][0], "7");
}

TEST_F(SessionStatements, UseAcceptsTheServedDatabaseOnly) {
  ok("USE information_schema");
  EXPECT_EQ(session_.database, "information_schema");
  ok("USE tickets");
  auto e = err("USE other");
  EXPECT_EQ(e.code, kErBadDb);
  EXPECT_EQ(e.message, "Unknown database 'other'");
}

TEST_F(SessionStatements, AnswersWhatTheRecognizerCouldNotMakeSenseOf) {
  auto e = err("SELEKT 1");
  EXPECT_EQ(e.code, kErParse);
  EXPECT_EQ(e.message,
            "You have an error in your SQL syntax; check the manual that corresponds to your "
            "ticketd server version for the right syntax to use near 'SELEKT 1' at line 1");
  e = err("  /* nothing */ ");
  EXPECT_EQ(e.code, kErEmptyQuery);
  EXPECT_EQ(e.message, "Query was empty");
  e = err("DELETE FROM Tickets64");
  EXPECT_EQ(e.code, kErNotSupportedYet);
  EXPECT_EQ(e.message, "This version of ticketd doesn't yet support 'DELETE FROM Tickets64'");
  e = err("KILL 42");
  EXPECT_EQ(e.code, kErUnknownThreadId);
  EXPECT_EQ(e.message, "Unknown thread id: 42");
}

}  // namespace
}  // namespace ticketd::mysql
