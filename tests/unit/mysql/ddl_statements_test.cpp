// DDL and SHOW of sequences and tables through the executor: a table is a sequence.
#include <gtest/gtest.h>

#include "server/mysql/error_mapping.h"
#include "tests/unit/mysql/executor_fixture.h"

namespace ticketd::mysql {
namespace {

using DdlStatements = testing::ExecutorTest;

std::vector<std::string> names(const ResultSetResult& r) {
  std::vector<std::string> out;
  for (const auto& c : r.columns) out.push_back(c.name);
  return out;
}

TEST_F(DdlStatements, CreateTableMakesASequenceStartingAtAutoIncrement) {
  ok("CREATE TABLE Orders (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, "
     "stub char(1) NOT NULL DEFAULT '', UNIQUE KEY stub (stub)) AUTO_INCREMENT = 500");
  EXPECT_EQ(ok("REPLACE INTO Orders (stub) VALUES ('a')").last_insert_id, 500u);
  auto e = err("CREATE TABLE Orders (id bigint AUTO_INCREMENT PRIMARY KEY)");
  EXPECT_EQ(e.code, kErTableExists);
  EXPECT_EQ(e.message, "Table 'Orders' already exists");
  auto again = ok("CREATE TABLE IF NOT EXISTS Orders (id bigint AUTO_INCREMENT PRIMARY KEY)");
  EXPECT_EQ(again.warnings, 1u);
  ASSERT_EQ(session_.warnings.size(), 1u);
  EXPECT_EQ(session_.warnings[0].code, kErTableExists);
}

TEST_F(DdlStatements, CreateTableNeedsExactlyOneAutoIncrementColumn) {
  EXPECT_EQ(err("CREATE TABLE T (a int)").code, kErNotSupportedYet);
  auto e = err("CREATE TABLE T (a int AUTO_INCREMENT, b int AUTO_INCREMENT, PRIMARY KEY (a))");
  EXPECT_EQ(e.code, kErWrongAutoKey);
  EXPECT_EQ(e.sql_state, "42000");
}

TEST_F(DdlStatements, CreateSequenceChecksItsOptions) {
  ok("CREATE SEQUENCE s START WITH 10 INCREMENT BY 5");
  EXPECT_EQ(value("SELECT NEXTVAL(s)"), "10");
  EXPECT_EQ(value("SELECT NEXTVAL(s)"), "15");
  EXPECT_EQ(err("CREATE SEQUENCE d INCREMENT BY -1").code, kErNotSupportedYet);
  EXPECT_EQ(err("CREATE SEQUENCE d INCREMENT BY 70000").message, "INCREMENT must be at most 65535");
  EXPECT_EQ(err("CREATE SEQUENCE d START WITH 10 MAXVALUE 5").message,
            "MAXVALUE is less than START");
  EXPECT_EQ(err("CREATE OR REPLACE SEQUENCE d").code, kErNotSupportedYet);
}

TEST_F(DdlStatements, DropLeavesATombstoneSoRecreatingResumes) {
  ok("REPLACE INTO Tickets64 (stub) VALUES ('a')");
  ok("DROP TABLE Tickets64");
  EXPECT_EQ(err("REPLACE INTO Tickets64 (stub) VALUES ('a')").code, kErNoSuchTable);
  ok("CREATE TABLE Tickets64 (id bigint AUTO_INCREMENT PRIMARY KEY)");
  EXPECT_GT(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 1u);
}

TEST_F(DdlStatements, DropOfMissingNamesIsAnErrorOrANote) {
  auto e = err("DROP TABLE Nope");
  EXPECT_EQ(e.code, kErBadTable);
  EXPECT_EQ(e.message, "Unknown table 'tickets.Nope'");
  e = err("DROP SEQUENCE Nope");
  EXPECT_EQ(e.code, kErUnknownSequence);
  EXPECT_EQ(e.message, "Unknown SEQUENCE: 'tickets.Nope'");
  auto r = ok("DROP TABLE IF EXISTS Nope, Nope2");
  EXPECT_EQ(r.warnings, 2u);
}

TEST_F(DdlStatements, AlterTableMovesForwardOnly) {
  ok("ALTER TABLE Tickets64 AUTO_INCREMENT = 1000");
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 1000u);
  EXPECT_EQ(err("ALTER SEQUENCE Tickets64 RESTART").code, kErNotSupportedYet);
  EXPECT_EQ(err("TRUNCATE TABLE Tickets64").code, kErNotSupportedYet);
}

TEST_F(DdlStatements, AlterSequenceIncrementByRestartWithRestrides) {
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 1u);  // ceiling 10
  // The offset follows from RESTART WITH: 1000 ≡ 1 (mod 3).
  ok("ALTER SEQUENCE Tickets64 INCREMENT BY 3 RESTART WITH 1000");
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 1000u);
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 1003u);
  const auto info = service_.find("Tickets64")->info();
  EXPECT_EQ(info.spec.increment, 3u);
  EXPECT_EQ(info.spec.offset, 1u);
  // A multiple of the increment is offset = increment.
  ok("ALTER SEQUENCE Tickets64 INCREMENT BY 4 RESTART WITH 2000");
  EXPECT_EQ(service_.find("Tickets64")->info().spec.offset, 4u);
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 2000u);

  const struct {
    std::string_view sql;
    std::uint16_t code;
    std::string_view message_part;
  } refused[] = {
      // Not above the durable ceiling: values up to it may have been issued.
      {"ALTER SEQUENCE Tickets64 INCREMENT BY 3 RESTART WITH 2001", kErWrongArguments,
       "below the durable ceiling"},
      {"ALTER SEQUENCE Tickets64 INCREMENT BY 3", kErNotSupportedYet, "without RESTART WITH"},
      {"ALTER SEQUENCE Tickets64 RESTART WITH 9000", kErNotSupportedYet, "other than"},
      {"ALTER SEQUENCE Tickets64 INCREMENT BY 3 RESTART WITH 9000 CACHE 5", kErNotSupportedYet,
       "other than"},
      {"ALTER SEQUENCE Tickets64 INCREMENT BY -3 RESTART WITH 9000", kErNotSupportedYet,
       "descending"},
      {"ALTER SEQUENCE Tickets64 INCREMENT BY 70000 RESTART WITH 9000", kErWrongArguments,
       "at most 65535"},
      {"ALTER SEQUENCE Tickets64 INCREMENT BY 3 RESTART WITH 0", kErWrongArguments, "at least 1"},
      {"ALTER SEQUENCE Nope INCREMENT BY 3 RESTART WITH 9000", kErNoSuchTable, "Nope"},
  };
  for (const auto& c : refused) {
    auto e = err(c.sql);
    EXPECT_EQ(e.code, c.code) << c.sql << ": " << e.message;
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << c.sql << ": " << e.message;
  }
  ok("ALTER SEQUENCE IF EXISTS Nope INCREMENT BY 3 RESTART WITH 9000");
  // Nothing refused changed the grid.
  EXPECT_EQ(service_.find("Tickets64")->info().spec.increment, 4u);
  EXPECT_EQ(ok("REPLACE INTO Tickets64 (stub) VALUES ('a')").last_insert_id, 2004u);
}

TEST_F(DdlStatements, ShowStatementsDescribeTheFlickrSchema) {
  auto tables = rows("SHOW TABLES");
  EXPECT_EQ(names(tables), std::vector<std::string>{"Tables_in_tickets"});
  ASSERT_EQ(tables.rows.size(), 1u);
  EXPECT_EQ(tables.rows[0][0], "Tickets64");
  EXPECT_EQ(names(rows("SHOW FULL TABLES")),
            (std::vector<std::string>{"Tables_in_tickets", "Table_type"}));
  auto create = rows("SHOW CREATE TABLE Tickets64");
  EXPECT_EQ(names(create), (std::vector<std::string>{"Table", "Create Table"}));
  EXPECT_TRUE(create.rows[0][1]->starts_with("CREATE TABLE `Tickets64`"));
  auto columns = rows("SHOW COLUMNS FROM Tickets64");
  EXPECT_EQ(columns.columns.size(), 6u);
  ASSERT_EQ(columns.rows.size(), 2u);
  EXPECT_EQ(columns.rows[0][0], "id");
  EXPECT_EQ(rows("SHOW COLUMNS FROM Tickets64 LIKE 'st%'").rows.size(), 1u);
  auto status = rows("SHOW TABLE STATUS");
  EXPECT_EQ(status.columns.size(), 8u);
  EXPECT_EQ(status.rows[0][7], "ticketd ticket sequence");
  EXPECT_EQ(err("SHOW TABLES FROM other").code, kErBadDb);
  EXPECT_EQ(err("SHOW CREATE TABLE Nope").code, kErNoSuchTable);
}

TEST_F(DdlStatements, ShowAndDropCoverEveryKind) {
  add_gapless("Invoices");
  ASSERT_TRUE(service_.add_uuidv7("Events", std::make_shared<UuidV7Generator>(clock_)));
  TimerQueue retries;
  SnowflakeOptions o;
  o.name = "Flakes";
  o.worker_id = 7;
  auto flakes = SnowflakeGenerator::open(std::move(o), store_, committer_, clock_);
  ASSERT_TRUE(flakes);
  ASSERT_TRUE(service_.add_snowflake(*flakes, retries, clock_));

  auto tables = rows("SHOW TABLES");
  std::vector<std::string> listed;
  for (const auto& row : tables.rows) listed.push_back(*row[0]);
  EXPECT_EQ(listed, (std::vector<std::string>{"Events", "Flakes", "Invoices", "Tickets64"}));
  auto status = rows("SHOW TABLE STATUS");
  ASSERT_EQ(status.rows.size(), 4u);
  EXPECT_EQ(status.rows[0][7], "ticketd uuidv7 sequence");
  EXPECT_EQ(status.rows[0][5], std::nullopt);  // no AUTO_INCREMENT: not a counter
  EXPECT_EQ(status.rows[1][7], "ticketd snowflake sequence (worker 7, 41/10/12 bits)");
  EXPECT_EQ(status.rows[2][7], "ticketd gapless sequence (order relaxed)");
  EXPECT_EQ(status.rows[2][5], "1");

  EXPECT_EQ(rows("SHOW CREATE TABLE Invoices").rows[0][1],
            "CREATE TABLE `Invoices` (\n  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
            "  `stub` char(1) NOT NULL DEFAULT '',\n  PRIMARY KEY (`id`),\n"
            "  UNIQUE KEY `stub` (`stub`)\n) ENGINE=InnoDB AUTO_INCREMENT=1 DEFAULT "
            "CHARSET=utf8mb4 COMMENT='ticketd gapless sequence (order relaxed)'");
  EXPECT_EQ(rows("SHOW CREATE SEQUENCE Invoices").rows[0][1],
            "CREATE SEQUENCE `Invoices` start with 1 minvalue 1 maxvalue 9223372036854775807 "
            "increment by 1 nocache nocycle ENGINE=InnoDB COMMENT='ticketd gapless sequence "
            "(order relaxed)'");
  EXPECT_EQ(rows("SHOW CREATE TABLE Events").rows[0][1],
            "CREATE TABLE `Events` (\n  `id` char(36) NOT NULL,\n  PRIMARY KEY (`id`)\n) "
            "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='ticketd uuidv7 sequence'");
  EXPECT_EQ(rows("SHOW CREATE SEQUENCE Flakes").rows[0][1],
            "CREATE SEQUENCE `Flakes` ENGINE=InnoDB COMMENT='ticketd snowflake sequence "
            "(worker 7, 41/10/12 bits)'");
  EXPECT_EQ(rows("DESCRIBE Events").rows.size(), 1u);
  EXPECT_EQ(rows("SHOW CREATE SEQUENCE Tickets64").rows[0][1],
            "CREATE SEQUENCE `Tickets64` start with 1 minvalue 1 maxvalue 9223372036854775807 "
            "increment by 1 cache 10 nocycle ENGINE=InnoDB");

  ok("DROP TABLE Events, Invoices");
  ok("DROP SEQUENCE Flakes");
  EXPECT_FALSE(service_.exists("Events"));
  EXPECT_FALSE(service_.exists("Invoices"));
  EXPECT_FALSE(service_.exists("Flakes"));
  EXPECT_EQ(rows("SHOW TABLES").rows.size(), 1u);
  retries.stop();
}

}  // namespace
}  // namespace ticketd::mysql
