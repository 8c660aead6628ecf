// SELECT through the executor: driver chatter, sequence functions, and the column types the
// statement table gives them.
#include <gtest/gtest.h>

#include "server/mysql/error_mapping.h"
#include "server/mysql/result_columns.h"
#include "server/sql/recognizer.h"
#include "server/sql/token_cursor.h"
#include "tests/unit/mysql/executor_fixture.h"

namespace ticketd::mysql {
namespace {

using SelectStatement = testing::ExecutorTest;

TEST_F(SelectStatement, TypesEachItemAsTheStatementTableDescribesIt) {
  struct Case {
    std::string_view sql;
    ColumnKind kind;
    std::optional<std::string> value;
  };
  const Case cases[] = {
      {"SELECT 1", ColumnKind::kBigint, "1"},
      {"SELECT -5", ColumnKind::kBigint, "-5"},
      {"SELECT 'x'", ColumnKind::kVarString, "x"},
      {"SELECT 1.5", ColumnKind::kVarString, "1.5"},
      {"SELECT NULL", ColumnKind::kNull, std::nullopt},
      {"SELECT @@max_allowed_packet", ColumnKind::kBigint, "16777216"},
      {"SELECT @@version_comment", ColumnKind::kVarString, "ticketd durable ticket server"},
      {"SELECT @undefined", ColumnKind::kVarString, std::nullopt},
      {"SELECT LAST_INSERT_ID()", ColumnKind::kUnsignedBigint, "0"},
      {"SELECT CONNECTION_ID()", ColumnKind::kUnsignedBigint, "7"},
      {"SELECT DATABASE()", ColumnKind::kVarString, "tickets"},
      {"SELECT USER()", ColumnKind::kVarString, "app@127.0.0.1"},
      {"SELECT NOW()", ColumnKind::kVarString, "2026-01-01 00:00:00"},
      {"SELECT NEXTVAL(Tickets64)", ColumnKind::kUnsignedBigint, "1"},
      {"SELECT LASTVAL(Tickets64)", ColumnKind::kUnsignedBigint, "1"},
      {"SELECT SETVAL(Tickets64, 100)", ColumnKind::kUnsignedBigint, "100"},
  };
  for (const auto& c : cases) {
    auto r = rows(c.sql);
    ASSERT_EQ(r.columns.size(), 1u) << c.sql;
    EXPECT_EQ(r.columns[0].kind, c.kind) << c.sql;
    ASSERT_EQ(r.rows.size(), 1u) << c.sql;
    EXPECT_EQ(r.rows[0][0], c.value) << c.sql;
    // What execution sent is what COM_STMT_PREPARE describes.
    auto described = result_columns(sql::recognize(c.sql), settings_, session_);
    ASSERT_EQ(described.size(), 1u) << c.sql;
    EXPECT_EQ(described[0].kind, r.columns[0].kind) << c.sql;
    EXPECT_EQ(described[0].name, r.columns[0].name) << c.sql;
  }
}

// MySQL's DATETIME text in UTC from the injected clock, the milliseconds dropped.
TEST_F(SelectStatement, NowAndUtcTimestampReadTheClockAsDatetimeText) {
  clock_.set(1767225600000 + 86399999);  // 2026-01-01T23:59:59.999Z
  auto r = rows("SELECT NOW(), UTC_TIMESTAMP()");
  ASSERT_EQ(r.rows.size(), 1u);
  ASSERT_EQ(r.rows[0].size(), 2u);
  EXPECT_EQ(r.rows[0][0], "2026-01-01 23:59:59");
  EXPECT_EQ(r.rows[0][1], "2026-01-01 23:59:59");
}

TEST_F(SelectStatement, NamesColumnsByAliasOrText) {
  auto r = rows("SELECT @@version AS v, last_insert_id()");
  ASSERT_EQ(r.columns.size(), 2u);
  EXPECT_EQ(r.columns[0].name, "v");
  EXPECT_EQ(r.columns[1].name, "last_insert_id()");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].size(), 2u);
}

TEST_F(SelectStatement, NextValAfterTheCachedCeilingWaitsForTheEngine) {
  // cache 10: the eleventh value needs a durable write (completed on the committer thread).
  for (int i = 1; i <= 12; ++i) {
    EXPECT_EQ(value("SELECT NEXTVAL(Tickets64)"), std::to_string(i));
  }
  EXPECT_EQ(log_.issued.size(), 12u);
  EXPECT_TRUE(log_.blocks.empty());
}

TEST_F(SelectStatement, LimitZeroKeepsTheColumnsAndDropsTheRow) {
  auto r = rows("SELECT @@version_comment LIMIT 0");
  EXPECT_EQ(r.columns.size(), 1u);
  EXPECT_TRUE(r.rows.empty());
}

TEST_F(SelectStatement, RefusesUnknownVariablesAndSequences) {
  auto e = err("SELECT @@no_such_variable");
  EXPECT_EQ(e.code, kErUnknownSystemVariable);
  EXPECT_EQ(e.message, "Unknown system variable 'no_such_variable'");
  e = err("SELECT LASTVAL(Nope)");
  EXPECT_EQ(e.code, kErNoSuchTable);
  EXPECT_EQ(e.message, "Table 'tickets.Nope' doesn't exist");
  e = err("SELECT UUID_V7()");  // no generator in this executor
  EXPECT_EQ(e.code, kErNotSupportedYet);
  e = err("SELECT ULID()");
  EXPECT_EQ(e.code, kErNotSupportedYet);
  e = err("SELECT SETVAL(Tickets64, -1)");
  EXPECT_EQ(e.code, kErNotSupportedYet);
}

TEST_F(SelectStatement, TypesSessionOverridesByTheirValue) {
  session_.variables["short_number"] = "12345";
  session_.variables["long_number"] = std::string(25, '9');  // past BIGINT: text
  session_.variables["word"] = "ON";
  auto r = rows("SELECT @@short_number, @@long_number, @@word");
  ASSERT_EQ(r.columns.size(), 3u);
  EXPECT_EQ(r.columns[0].kind, ColumnKind::kBigint);
  EXPECT_EQ(r.columns[1].kind, ColumnKind::kVarString);
  EXPECT_EQ(r.columns[2].kind, ColumnKind::kVarString);
}

TEST_F(SelectStatement, ASelectListOfMoreThan4096ItemsIsRefusedBeforeItRuns) {
  // A 14 MiB `SELECT 1,1,...` ran 86 s and took 6.8 GB (issue 27.12): refused as mysqld's
  // ER_TOO_MANY_FIELDS, without parsing the rest.
  std::string sql = "SELECT 1";
  for (int i = 1; i < 4096; ++i) sql += ",1";
  EXPECT_EQ(rows(sql).columns.size(), 4096u);
  auto e = err(sql + ",1");
  EXPECT_EQ(e.code, kErTooManyFields);
  EXPECT_EQ(e.sql_state, "42000");
  // 14 MiB of it is over the token budget: refused before it is even lexed whole.
  std::string huge = sql;
  for (int i = 0; i < 7000000; ++i) huge += ",1";
  EXPECT_EQ(err(huge).code, kErGeneral);
}

TEST_F(SelectStatement, AStatementOfMoreTokensThanTheBudgetIsRefusedUnlexed) {
  std::string in = "SHOW VARIABLES WHERE Variable_name IN ('a'";
  for (std::size_t i = 0; i < sql::kMaxStatementTokens / 2; ++i) in += ",'a'";
  auto e = err(in + ")");
  EXPECT_EQ(e.code, kErGeneral);
  EXPECT_NE(e.message.find("at most 262144 tokens"), std::string::npos) << e.message;
}

TEST_F(SelectStatement, AHugeVariableNamedManyTimesIsRefusedNotCopied) {
  session_.variables["v"] = std::string(1 << 20, '7');
  std::string sql = "SELECT @@v";
  for (int i = 0; i < 4000; ++i) sql += ", @@v";  // within the 4,096 columns of a select list
  auto e = err(sql);
  EXPECT_EQ(e.code, kErWarnAllowedPacketOverflowed);
}

TEST_F(SelectStatement, SetvalBehindTheSequenceIsNull) {
  EXPECT_EQ(value("SELECT SETVAL(Tickets64, 50)"), "50");
  EXPECT_EQ(value("SELECT SETVAL(Tickets64, 10)"), std::nullopt);
  EXPECT_EQ(value("SELECT NEXTVAL(Tickets64)"), "51");
}

}  // namespace
}  // namespace ticketd::mysql
