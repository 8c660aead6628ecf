// The executor's own work: the serving gate (read from the statement table), the statement
// timing hook and its wiring to the daemon's metrics (frontend="mysql").
#include "server/mysql/query_executor.h"

#include <gtest/gtest.h>

#include "server/metrics/metrics.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/metrics_hooks.h"
#include "tests/unit/mysql/executor_fixture.h"

namespace ticketd::mysql {
namespace {

// A standby: the gate is closed, the leader is elsewhere.
class StandbyExecutor : public testing::ExecutorTest {
 protected:
  StandbyExecutor() : ExecutorTest(ServerSettings{}, true) {}
};

TEST_F(StandbyExecutor, RefusesWhatNeedsTheLeaderNamingIt) {
  for (std::string_view sql : {
           "REPLACE INTO Tickets64 (stub) VALUES ('a')",
           "UPDATE Tickets64 SET id = LAST_INSERT_ID(id + 1)",
           "SELECT NEXT 3 VALUES FROM Tickets64",
           "SELECT NEXTVAL(Tickets64)",
           "SELECT 1, LASTVAL(Tickets64)",
           "CREATE SEQUENCE s",
           "DROP TABLE Tickets64",
           "SHOW TABLES",
           "SHOW CREATE TABLE Tickets64",
           "SHOW COLUMNS FROM Tickets64",
           "SHOW TABLE STATUS",
       }) {
    auto e = err(sql);
    EXPECT_EQ(e.code, kErOptionPreventsStatement) << sql;
    EXPECT_EQ(e.sql_state, "HY000") << sql;
    EXPECT_NE(e.message.find("leader is at 10.0.0.9:3306"), std::string::npos) << e.message;
  }
  EXPECT_TRUE(log_.issued.empty());
}

TEST_F(StandbyExecutor, AnswersSessionChatter) {
  EXPECT_EQ(value("SELECT 1"), "1");
  EXPECT_EQ(value("SELECT @@version_comment"), "ticketd durable ticket server");
  ok("SET NAMES utf8mb4");
  auto s = rows("SHOW STATUS LIKE 'Ticketd_leader_mysql'");
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0][1], "10.0.0.9:3306");
  ok("BEGIN");
  ok("COMMIT");
}

using Executor = testing::ExecutorTest;

TEST_F(Executor, ReportsEveryStatementByKindOnceItIsAnswered) {
  ok("REPLACE INTO Tickets64 (stub) VALUES ('a')");
  rows("SELECT LAST_INSERT_ID()");
  err("SELEKT 1");
  for (int i = 0; i < 11; ++i) value("SELECT NEXTVAL(Tickets64)");  // some wait for the engine
  ok("SET @a = 1");
  ASSERT_EQ(log_.statements.size(), 15u);
  EXPECT_EQ(log_.statements[0], "insert_ticket");
  EXPECT_EQ(log_.statements[1], "select");
  EXPECT_EQ(log_.statements[2], "syntax_error");
  EXPECT_EQ(log_.statements[13], "select");
  EXPECT_EQ(log_.statements[14], "set");
}

TEST_F(Executor, MetricsHooksRecordDurationsAndBlocksWithTheMySqlFrontend) {
  metrics::Metrics metrics(service_, committer_, clock_);
  QueryExecutor executor(service_, settings_, clock_, metrics_hooks(metrics));
  const auto run_on = [&](std::string_view sql) {
    std::promise<QueryResult> answer;
    executor.execute(session_, sql, [&answer](QueryResult r) { answer.set_value(std::move(r)); });
    return answer.get_future().get();
  };
  EXPECT_TRUE(std::holds_alternative<OkResult>(
      run_on("REPLACE INTO Tickets64 (stub) VALUES ('a'), ('b'), ('c')")));
  EXPECT_TRUE(
      std::holds_alternative<ResultSetResult>(run_on("SELECT NEXT 4 VALUES FROM Tickets64")));
  EXPECT_TRUE(
      std::holds_alternative<OkResult>(run_on("REPLACE INTO Tickets64 (stub) VALUES ('a')")));
  const std::string text = metrics.serialize();
  const auto has = [&text](std::string_view line) { return text.find(line) != std::string::npos; };
  EXPECT_TRUE(
      has(R"(ticketd_request_duration_seconds_count{frontend="mysql",route="insert_ticket"} 2)"))
      << text;
  EXPECT_TRUE(has(
      R"(ticketd_request_duration_seconds_count{frontend="mysql",route="select_next_block"} 1)"));
  EXPECT_TRUE(has(R"(ticketd_blocks_leased_total{frontend="mysql",sequence="Tickets64"} 2)"));
  EXPECT_TRUE(has(R"(ticketd_ids_issued_total{frontend="mysql",sequence="Tickets64"} 8)"));
}

}  // namespace
}  // namespace ticketd::mysql
