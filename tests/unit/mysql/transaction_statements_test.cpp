// Transactions through the executor: gapless numbers held until COMMIT, given back by ROLLBACK,
// by SET autocommit = 1's implicit commit and by the end of the session.
#include <gtest/gtest.h>

#include "tests/unit/mysql/executor_fixture.h"

namespace ticketd::mysql {
namespace {

using TransactionStatements = testing::ExecutorTest;

TEST_F(TransactionStatements, CommitMakesHeldNumbersFinal) {
  auto g = add_gapless("Invoices");
  ok("BEGIN");
  EXPECT_TRUE(session_.in_transaction);
  EXPECT_EQ(ok("REPLACE INTO Invoices (stub) VALUES ('a')").last_insert_id, 1u);
  EXPECT_EQ(g->audit().pending.size(), 1u);
  EXPECT_EQ(g->audit().committed, 0u);
  ok("COMMIT");
  EXPECT_FALSE(session_.in_transaction);
  EXPECT_TRUE(g->audit().pending.empty());
  EXPECT_EQ(g->audit().committed, 1u);
}

TEST_F(TransactionStatements, RollbackGivesNumbersBack) {
  auto g = add_gapless("Invoices");
  ok("START TRANSACTION");
  ok("REPLACE INTO Invoices (stub) VALUES ('a')");
  ok("ROLLBACK");
  EXPECT_EQ(g->audit().released, std::vector<std::uint64_t>{1});
  // The released number goes to the next caller: no gap.
  EXPECT_EQ(ok("REPLACE INTO Invoices (stub) VALUES ('a')").last_insert_id, 1u);
}

TEST_F(TransactionStatements, BeginCommitsTheOpenTransactionFirst) {
  auto g = add_gapless("Invoices");
  ok("BEGIN");
  ok("REPLACE INTO Invoices (stub) VALUES ('a')");
  ok("BEGIN");
  EXPECT_TRUE(session_.in_transaction);
  EXPECT_EQ(g->audit().committed, 1u);
}

TEST_F(TransactionStatements, AutocommitOffHoldsUntilAutocommitOn) {
  auto g = add_gapless("Invoices");
  ok("SET autocommit = 0");
  EXPECT_EQ(rows("SELECT NEXTVAL(Invoices)").rows[0][0], "1");
  EXPECT_EQ(g->audit().pending.size(), 1u);
  ok("SET autocommit = 1");  // commits, as in MySQL
  EXPECT_EQ(g->audit().committed, 1u);
  EXPECT_FALSE(session_.in_transaction);
}

TEST_F(TransactionStatements, EndingTheSessionReleasesHeldNumbers) {
  auto g = add_gapless("Invoices");
  ok("BEGIN");
  ok("UPDATE Invoices SET id = LAST_INSERT_ID(id + 1)");
  executor_.end_session(session_);
  EXPECT_EQ(g->audit().released, std::vector<std::uint64_t>{1});
}

TEST_F(TransactionStatements, TicketsNeedNoCommit) {
  ok("BEGIN");
  ok("REPLACE INTO Tickets64 (stub) VALUES ('a')");
  ok("ROLLBACK");
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 2u);
}

}  // namespace
}  // namespace ticketd::mysql
