// Tickets through the executor: the Flickr recipe, the counter UPDATE, NEXT n VALUES, gapless
// numbers in autocommit, and their refusals.
#include <gtest/gtest.h>

#include "server/mysql/error_mapping.h"
#include "tests/unit/mysql/executor_fixture.h"

namespace ticketd::mysql {
namespace {

using TicketStatements = testing::ExecutorTest;

TEST_F(TicketStatements, ReplaceIssuesTheNextTicketAndSetsLastInsertId) {
  auto first = ok("REPLACE INTO Tickets64 (stub) VALUES ('a')");
  EXPECT_EQ(first.affected_rows, 2u);  // delete + insert of the stub row, as MySQL counts it
  EXPECT_EQ(first.last_insert_id, 1u);
  EXPECT_EQ(ok("INSERT INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 2u);
  EXPECT_EQ(session_.last_insert_id, 2u);
  EXPECT_EQ(value("SELECT LAST_INSERT_ID()"), "2");
}

TEST_F(TicketStatements, MultiRowReplaceTakesOneBlockAndReportsIt) {
  auto r = ok("REPLACE INTO Tickets64 (stub) VALUES ('a'), ('b'), ('c')");
  EXPECT_EQ(r.affected_rows, 6u);
  EXPECT_EQ(r.last_insert_id, 1u);  // the first of the block, as MySQL
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 4u);
  ASSERT_EQ(log_.blocks.size(), 1u);
  EXPECT_EQ(log_.blocks[0], (std::pair<std::string, std::uint64_t>{"Tickets64", 3}));
  ASSERT_EQ(log_.issued.size(), 2u);
  EXPECT_EQ(log_.issued[0].second, 3u);
  EXPECT_EQ(log_.issued[1].second, 1u);
}

TEST_F(TicketStatements, UpdateCounterIdiomIssuesAndReportsOneRow) {
  auto r = ok("UPDATE Tickets64 SET id = LAST_INSERT_ID(id + 1)");
  EXPECT_EQ(r.affected_rows, 1u);
  EXPECT_EQ(r.info, "Rows matched: 1  Changed: 1  Warnings: 0");
  EXPECT_EQ(session_.last_insert_id, 1u);
}

TEST_F(TicketStatements, NextValuesReturnsTheFirstOfABlock) {
  auto r = rows("SELECT NEXT 5 VALUES FROM Tickets64");
  ASSERT_EQ(r.columns.size(), 1u);
  EXPECT_EQ(r.columns[0].name, "nextval");
  EXPECT_EQ(r.columns[0].kind, ColumnKind::kUnsignedBigint);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0][0], "1");
  EXPECT_EQ(value("SELECT LASTVAL(Tickets64)"), "5");
  ASSERT_EQ(log_.blocks.size(), 1u);
  EXPECT_EQ(log_.blocks[0].second, 5u);
  // One value is not a block.
  EXPECT_EQ(rows("SELECT NEXT VALUE FROM Tickets64").rows[0][0], "6");
  EXPECT_EQ(log_.blocks.size(), 1u);
}

TEST_F(TicketStatements, RefusesWhatMySqlRefuses) {
  struct Case {
    std::string_view sql;
    std::uint16_t code;
    std::string_view message;
  };
  const Case cases[] = {
      {"REPLACE INTO Nope (stub) VALUES ('a')", kErNoSuchTable,
       "Table 'tickets.Nope' doesn't exist"},
      {"REPLACE INTO other.Tickets64 (stub) VALUES ('a')", kErNoSuchTable,
       "Table 'other.Tickets64' doesn't exist"},
      {"INSERT INTO Tickets64 (stub) VALUES ('a', 'b')", kErWrongValueCount,
       "Column count doesn't match value count at row 1"},
      {"SELECT NEXT 100001 VALUES FROM Tickets64", kErWrongArguments,
       "NEXT n VALUES needs 1 <= n <= 100000"},
      {"UPDATE Tickets64 SET id = LAST_INSERT_ID(id - 1)", kErNotSupportedYet,
       "This version of ticketd doesn't yet support 'UPDATE with a non-increasing "
       "LAST_INSERT_ID'"},
  };
  for (const auto& c : cases) {
    auto e = err(c.sql);
    EXPECT_EQ(e.code, c.code) << c.sql;
    EXPECT_EQ(e.message, c.message) << c.sql;
  }
  session_.database.clear();
  auto e = err("REPLACE INTO Tickets64 (stub) VALUES ('a')");
  EXPECT_EQ(e.code, 1046);
  EXPECT_EQ(e.sql_state, "3D000");
  EXPECT_TRUE(log_.issued.empty());
}

TEST_F(TicketStatements, GaplessTakesOneNumberPerStatement) {
  auto g = add_gapless("Invoices");
  EXPECT_EQ(ok("REPLACE INTO Invoices (stub) VALUES ('a')").last_insert_id, 1u);
  EXPECT_EQ(g->audit().committed, 1u);
  auto e = err("REPLACE INTO Invoices (stub) VALUES ('a'), ('b')");
  EXPECT_EQ(e.code, kErNotSupportedYet);
  EXPECT_TRUE(log_.blocks.empty());
}

}  // namespace
}  // namespace ticketd::mysql
