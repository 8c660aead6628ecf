// The statement table's traits: who needs the leader, which columns a result set has.
#include "server/sql/statement_traits.h"

#include <gtest/gtest.h>

#include "server/sql/recognizer.h"

namespace ticketd::sql {
namespace {

using enum ColumnType;

TEST(StatementTraits, SaysWhichStatementsNeedTheLeader) {
  struct Case {
    std::string_view sql;
    bool needs_leader;
  };
  const Case cases[] = {
      {"REPLACE INTO Tickets64 (stub) VALUES ('a')", true},
      {"UPDATE Tickets64 SET id = LAST_INSERT_ID(id + 1)", true},
      {"SELECT NEXT 5 VALUES FROM Tickets64", true},
      {"SELECT NEXTVAL(s)", true},
      {"SELECT 1, LASTVAL(s)", true},
      {"SELECT SETVAL(s, 10)", true},
      {"SELECT 1", false},
      {"SELECT @@version, LAST_INSERT_ID()", false},
      {"CREATE SEQUENCE s", true},
      {"ALTER SEQUENCE s RESTART", true},
      {"DROP SEQUENCE s", true},
      {"SHOW CREATE SEQUENCE s", true},
      {"CREATE TABLE t (id bigint AUTO_INCREMENT PRIMARY KEY)", true},
      {"ALTER TABLE t AUTO_INCREMENT = 5", true},
      {"DROP TABLE t", true},
      {"TRUNCATE TABLE t", true},
      {"SHOW TABLES", true},
      {"SHOW CREATE TABLE t", true},
      {"DESCRIBE t", true},
      {"SHOW TABLE STATUS", true},
      {"SET NAMES utf8mb4", false},
      {"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", false},
      {"SHOW VARIABLES", false},
      {"SHOW STATUS", false},
      {"SHOW WARNINGS", false},
      {"SHOW ERRORS", false},
      {"SHOW DATABASES", false},
      {"SHOW ENGINES", false},
      {"SHOW COLLATION", false},
      {"SHOW CHARACTER SET", false},
      {"SHOW PROCESSLIST", false},
      {"USE tickets", false},
      {"BEGIN", false},
      {"COMMIT", false},
      {"ROLLBACK", false},
      {"DO 1", false},
      {"KILL 3", false},
      {"SELEKT 1", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(needs_leader(recognize(c.sql)), c.needs_leader) << c.sql;
  }
}

TEST(StatementTraits, GivesEachStatementItsResultColumns) {
  struct Case {
    std::string_view sql;
    std::vector<ResultColumn> columns;
  };
  const Case cases[] = {
      {"REPLACE INTO Tickets64 (stub) VALUES ('a')", {}},
      {"SELECT 1", {{"1", kInteger, {}, false}}},
      {"SELECT 'a' AS x, NULL, 1.5",
       {{"x", kText, {}, false}, {"NULL", kNull, {}, false}, {"1.5", kText, {}, false}}},
      {"SELECT @@global.max_allowed_packet",
       {{"@@global.max_allowed_packet", kVariableValue, "max_allowed_packet", true}}},
      {"SELECT LAST_INSERT_ID(), NEXTVAL(s), NOW()",
       {{"LAST_INSERT_ID()", kUnsignedInteger, {}, false},
        {"NEXTVAL(s)", kUnsignedInteger, {}, false},
        {"NOW()", kText, {}, false}}},
      {"SELECT NEXT 5 VALUES FROM s", {{"nextval", kUnsignedInteger, {}, false}}},
      {"SHOW TABLES", {{"Tables_in_tickets", kText, {}, false}}},
      {"SHOW FULL TABLES FROM other",
       {{"Tables_in_other", kText, {}, false}, {"Table_type", kText, {}, false}}},
      {"SHOW VARIABLES", {{"Variable_name", kText, {}, false}, {"Value", kText, {}, false}}},
      {"SHOW WARNINGS",
       {{"Level", kText, {}, false}, {"Code", kInteger, {}, false}, {"Message", kText, {}, false}}},
      {"SHOW CREATE TABLE t", {{"Table", kText, {}, false}, {"Create Table", kText, {}, false}}},
      {"SHOW DATABASES", {{"Database", kText, {}, false}}},
      {"BEGIN", {}},
      {"SELEKT 1", {}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(result_columns(recognize(c.sql), ColumnContext{"tickets"}), c.columns) << c.sql;
  }
}

TEST(StatementTraits, EveryKindHasItsOwnRow) {
  for (std::string_view kind :
       {"insert_ticket", "select", "show_tables", "set", "begin", "unrecognized"}) {
    const StatementTraits* row = find_traits(kind);
    ASSERT_NE(row, nullptr) << kind;
    EXPECT_EQ(row->kind, kind);
  }
  EXPECT_EQ(find_traits("no_such_kind"), nullptr);
}

}  // namespace
}  // namespace ticketd::sql
