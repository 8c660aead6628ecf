#include "server/sql/recognizer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/sql/statement.h"

namespace ticketd::sql {
namespace {

// Accepted statements: the SQL and describe() of what it is recognized as. describe() prints the
// kind name and the fields that matter; see statement.cpp for its format.
struct AcceptCase {
  std::string_view sql;
  std::string_view expected;
};

constexpr AcceptCase kAccepted[] = {
    // ---- Flickr ticket servers (code.flickr.net, 2010) and the MySQL manual's counter idiom ----
    {"REPLACE INTO Tickets64 (stub) VALUES ('a');",
     "insert_ticket table=Tickets64 columns=stub rows=1 values=('a') replace"},
    {"replace into `tickets`.`Tickets64` (`stub`) values ('a')",
     "insert_ticket table=tickets.Tickets64 columns=stub rows=1 values=('a') replace"},
    {"REPLACE INTO Tickets32 SET stub='a'",
     "insert_ticket table=Tickets32 columns=stub rows=1 values=('a') replace"},
    {"REPLACE LOW_PRIORITY Tickets64 (stub) VALUE (?)",
     "insert_ticket table=Tickets64 columns=stub rows=1 values=(?) replace"},
    {"INSERT INTO t () VALUES ()", "insert_ticket table=t rows=1 values=()"},
    {"INSERT INTO sequence VALUES (0)", "insert_ticket table=sequence rows=1 values=(0)"},
    {"INSERT INTO t VALUES (NULL, 'a'), (DEFAULT, ?)",
     "insert_ticket table=t rows=2 values=(NULL,'a'),(DEFAULT,?)"},
    {"INSERT INTO t (stub) VALUES ('a'),('b'),('c')",
     "insert_ticket table=t columns=stub rows=3 values=('a'),('b'),('c')"},
    {"INSERT IGNORE INTO t (stub) VALUES (?)",
     "insert_ticket table=t columns=stub rows=1 values=(?) ignore"},
    {"insert into t (id, stub) values (concat('a', 'b'), ('x'))",
     "insert_ticket table=t columns=id,stub rows=1 values=(concat('a', 'b'),('x'))"},
    {"INSERT INTO seq (id) VALUES (1) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id + 1)",
     "insert_ticket table=seq columns=id rows=1 values=(1) odku=id = LAST_INSERT_ID(id + 1)"},
    {"UPDATE sequence SET id=LAST_INSERT_ID(id+1);",
     "update_counter table=sequence column=id delta=1"},
    {"UPDATE sequence SET id = LAST_INSERT_ID( id + 1 )",
     "update_counter table=sequence column=id delta=1"},
    {"update `db`.`counter` set `value`=last_insert_id(`value`+10) where name = 'orders' limit 1",
     "update_counter table=db.counter column=value delta=10 where=name=str:'orders'"},
    {"UPDATE c SET n = LAST_INSERT_ID(n - 2) WHERE k = 7",
     "update_counter table=c column=n delta=-2 where=k=int:7"},

    // ---- SELECT: driver chatter ----
    {"select @@version_comment limit 1",  // mysql / mariadb CLI at connect
     "select [sysvar:version_comment @@version_comment] limit=1"},
    {"SELECT DATABASE(), USER() limit 1",  // mysql CLI `status`
     "select [database DATABASE()] [user USER()] limit=1"},
    {"SELECT LAST_INSERT_ID()", "select [last_insert_id LAST_INSERT_ID()]"},
    {"select last_insert_id()", "select [last_insert_id last_insert_id()]"},
    {"Select Last_Insert_Id() As id", "select [last_insert_id Last_Insert_Id() as id]"},
    {"SELECT @@identity, @@last_insert_id",
     "select [last_insert_id @@identity] [last_insert_id @@last_insert_id]"},
    {"SELECT @@max_allowed_packet",  // go-sql-driver/mysql
     "select [sysvar:max_allowed_packet @@max_allowed_packet]"},
    {"SELECT @@tx_isolation, @@session.tx_read_only",
     "select [sysvar:tx_isolation @@tx_isolation] "
     "[sysvar:session.tx_read_only @@session.tx_read_only]"},
    {"SELECT @@SESSION.transaction_isolation",
     "select [sysvar:session.transaction_isolation @@SESSION.transaction_isolation]"},
    {"SELECT @@global.max_connections, @@local.wait_timeout",
     "select [sysvar:global.max_connections @@global.max_connections] "
     "[sysvar:session.wait_timeout @@local.wait_timeout]"},
    {"SELECT @x, @`Quoted`", "select [uservar:x @x] [uservar:quoted @`Quoted`]"},
    {"SELECT VERSION(), @@version", "select [version VERSION()] [sysvar:version @@version]"},
    {"SELECT SCHEMA(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER, CURRENT_USER()",
     "select [database SCHEMA()] [user SESSION_USER()] [user SYSTEM_USER()] "
     "[current_user CURRENT_USER] [current_user CURRENT_USER()]"},
    {"SELECT CONNECTION_ID() FROM DUAL", "select [connection_id CONNECTION_ID()]"},
    {"SELECT UUID_V7(), uuid_v7() AS u", "select [uuid_v7 UUID_V7()] [uuid_v7 uuid_v7() as u]"},
    {"SELECT ULID(), ulid() AS u", "select [ulid ULID()] [ulid ulid() as u]"},
    {"SELECT NOW(), UTC_TIMESTAMP, UTC_TIMESTAMP(), NOW(3), CURRENT_TIMESTAMP",
     "select [now NOW()] [utc_timestamp UTC_TIMESTAMP] [utc_timestamp UTC_TIMESTAMP()] "
     "[now:3 NOW(3)] [now CURRENT_TIMESTAMP]"},
    {"SELECT 1", "select [literal:int:1 1]"},
    {"/* ping */ SELECT 1", "select [literal:int:1 1]"},  // Connector/J ping
    {"SELECT -1, 'x', NULL, \"dq\" AS `a``b`",
     "select [literal:int:-1 -1] [literal:str:'x' 'x'] [literal:null NULL] "
     "[literal:str:'dq' \"dq\" as a`b]"},
    {"SELECT TRUE, FALSE", "select [literal:int:1 TRUE] [literal:int:0 FALSE]"},
    {"SELECT 18446744073709551615, 1.5, 0x1F",
     "select [literal:dec:18446744073709551615 18446744073709551615] [literal:dec:1.5 1.5] "
     "[literal:dec:0x1F 0x1F]"},
    {"SELECT 1 AS 'one', 2 two, 3 `three`, 4 AS \"four\"",
     "select [literal:int:1 1 as one] [literal:int:2 2 as two] [literal:int:3 3 as three] "
     "[literal:int:4 4 as four]"},
    {"SELECT 1 LIMIT 1 OFFSET 2", "select [literal:int:1 1] limit=1 offset=2"},
    {"SELECT 1 FROM DUAL LIMIT 2, 3", "select [literal:int:1 1] limit=3 offset=2"},
    {"SELECT 1 LIMIT 18446744073709551615", "select [literal:int:1 1] limit=18446744073709551615"},
    {"SELECT SQL_NO_CACHE 1", "select [literal:int:1 1]"},
    {"SELECT 1;;", "select [literal:int:1 1]"},
    {"SELECT\n  LAST_INSERT_ID()  -- the id\n  AS id # done",
     "select [last_insert_id LAST_INSERT_ID() as id]"},
    {"SELECT /* hint */ LAST_INSERT_ID() /* c */", "select [last_insert_id LAST_INSERT_ID()]"},

    // ---- SELECT: sequences ----
    {"SELECT NEXTVAL(s), NEXT VALUE FOR db.s, LASTVAL(s), PREVIOUS VALUE FOR s",
     "select [nextval:s NEXTVAL(s)] [nextval:db.s NEXT VALUE FOR db.s] [lastval:s LASTVAL(s)] "
     "[lastval:s PREVIOUS VALUE FOR s]"},
    {"select nextval(`db`.`seq`) as id", "select [nextval:db.seq nextval(`db`.`seq`) as id]"},
    {"SELECT SETVAL(s, 100)", "select [setval:s,100,1,0 SETVAL(s, 100)]"},
    {"SELECT SETVAL(s, -5, FALSE)", "select [setval:s,-5,0,0 SETVAL(s, -5, FALSE)]"},
    {"SELECT SETVAL(s, 100, 0, 2)", "select [setval:s,100,0,2 SETVAL(s, 100, 0, 2)]"},
    {"SELECT NEXT 1000 VALUES FROM user_seq", "select_next_block sequence=user_seq count=1000"},
    {"select next value from `ks`.`seq`", "select_next_block sequence=ks.seq count=1"},

    // ---- Sequences (MariaDB) ----
    {"CREATE SEQUENCE s", "create_sequence name=s"},
    {"CREATE SEQUENCE s START WITH 100 INCREMENT BY 10 MINVALUE 1 NO MAXVALUE CACHE 1000 "
     "NOCYCLE ENGINE=InnoDB",
     "create_sequence name=s start=100 increment=10 minvalue=1 nomaxvalue cache=1000 nocycle "
     "engine=InnoDB"},
    {"create sequence if not exists db.s start=5 increment=-1 nominvalue maxvalue=100 nocache",
     "create_sequence name=db.s if_not_exists start=5 increment=-1 nominvalue maxvalue=100 "
     "cache=0"},
    {"CREATE SEQUENCE s MAXVALUE = 9223372036854775806 NO MINVALUE START 1 INCREMENT 1 CACHE = 5",
     "create_sequence name=s start=1 increment=1 nominvalue maxvalue=9223372036854775806 cache=5"},
    {"CREATE SEQUENCE s NOMAXVALUE NO CYCLE", "create_sequence name=s nomaxvalue nocycle"},
    {"CREATE OR REPLACE SEQUENCE s", "create_sequence name=s or_replace"},
    {"DROP SEQUENCE s", "drop_sequence names=s"},
    {"DROP SEQUENCE IF EXISTS s, db.t", "drop_sequence names=s,db.t if_exists"},
    {"SHOW CREATE SEQUENCE `db`.`s`", "show_create_sequence name=db.s"},
    {"ALTER SEQUENCE s RESTART WITH 500", "alter_sequence name=s restart restart_with=500"},
    {"ALTER SEQUENCE s RESTART = 7", "alter_sequence name=s restart restart_with=7"},
    {"ALTER SEQUENCE IF EXISTS s RESTART", "alter_sequence name=s if_exists restart"},
    {"ALTER SEQUENCE s INCREMENT BY 2", "alter_sequence name=s increment=2"},
    {"ALTER SEQUENCE Tickets64 INCREMENT BY 3 RESTART WITH 5000000001",
     "alter_sequence name=Tickets64 increment=3 restart restart_with=5000000001"},

    // ---- Tables ----
    {"CREATE TABLE `Tickets64` (\n"
     "  `id` bigint(20) unsigned NOT NULL auto_increment,\n"
     "  `stub` char(1) NOT NULL default '',\n"
     "  PRIMARY KEY  (`id`),\n"
     "  UNIQUE KEY `stub` (`stub`)\n"
     ") ENGINE=MyISAM",
     "create_table name=Tickets64 columns=(id bigint(20) unsigned not_null auto_increment; stub "
     "char(1) not_null default='') indexes=(primary(id); unique stub(stub)) engine=MyISAM"},
    {"CREATE TABLE IF NOT EXISTS Tickets32 (id int(10) unsigned NOT NULL auto_increment, stub "
     "char(1) NOT NULL default '', PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB "
     "AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='tickets', "
     "ROW_FORMAT=DYNAMIC",
     "create_table name=Tickets32 if_not_exists columns=(id int(10) unsigned not_null "
     "auto_increment; stub char(1) not_null default='') indexes=(primary(id); unique stub(stub)) "
     "auto_increment=2 engine=InnoDB charset=utf8mb4 collation=utf8mb4_bin comment='tickets' "
     "ROW_FORMAT=DYNAMIC"},
    {"CREATE TABLE sequence (id INT NOT NULL)",
     "create_table name=sequence columns=(id INT not_null) indexes=()"},
    {"create table t (id bigint unsigned not null primary key auto_increment) engine innodb "
     "auto_increment 1000 default character set = latin1",
     "create_table name=t columns=(id bigint unsigned not_null auto_increment primary_key) "
     "indexes=() auto_increment=1000 engine=innodb charset=latin1"},
    {"CREATE TABLE t (id SERIAL, name varchar(64) CHARACTER SET utf8 COLLATE utf8_bin DEFAULT "
     "NULL COMMENT 'n', d decimal(10,2) DEFAULT -1.5, ts timestamp(3) NOT NULL DEFAULT "
     "CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3), e enum('a','b') DEFAULT 'a', f double "
     "precision, g int GENERATED ALWAYS AS (id + 1) VIRTUAL, KEY idx_name (name(10) DESC) USING "
     "BTREE, INDEX (d), CONSTRAINT fk FOREIGN KEY (name) REFERENCES o (n) ON DELETE CASCADE, "
     "CHECK (id > 0), UNIQUE INDEX ((lower(name))))",
     "create_table name=t columns=(id SERIAL unsigned not_null auto_increment unique; name "
     "varchar(64) default=NULL comment='n'; d decimal(10,2) default=-1.5; ts timestamp(3) "
     "not_null default=CURRENT_TIMESTAMP(3); e enum('a','b') default='a'; f double precision; g "
     "int) indexes=(index idx_name(name); index(d); foreign fk(name); check(); "
     "unique((lower(name))))"},
    {"/*!40101 SET @saved_cs_client = @@character_set_client */",  // mysqldump
     "set [@saved_cs_client=@@character_set_client]"},
    {"ALTER TABLE Tickets64 AUTO_INCREMENT = 1000",
     "alter_table table=Tickets64 auto_increment=1000"},
    {"alter table `db`.`Tickets64` auto_increment 5, ENGINE=InnoDB",
     "alter_table table=db.Tickets64 auto_increment=5 engine=InnoDB"},
    {"DROP TABLE Tickets64", "drop_table names=Tickets64"},
    {"DROP TABLE IF EXISTS Tickets64, db.Tickets32 CASCADE",
     "drop_table names=Tickets64,db.Tickets32 if_exists"},
    {"TRUNCATE TABLE Tickets64", "truncate_table table=Tickets64"},
    {"truncate db.t", "truncate_table table=db.t"},
    {"SHOW TABLES", "show_tables"},
    {"show full tables from db like 'Tick%'", "show_tables full schema=db like='Tick%'"},
    {"SHOW TABLES IN `db` WHERE Tables_in_db = 'x'",
     "show_tables schema=db where=Tables_in_db in(x)"},
    {"SHOW CREATE TABLE db.Tickets64", "show_create_table table=db.Tickets64"},
    {"SHOW FULL COLUMNS FROM Tickets64 FROM db LIKE 'i%'",
     "show_columns table=db.Tickets64 full like='i%'"},
    {"SHOW COLUMNS IN t", "show_columns table=t"},
    {"SHOW FIELDS FROM db.t", "show_columns table=db.t"},
    {"DESCRIBE Tickets64", "show_columns table=Tickets64"},
    {"DESC `Tickets64` id", "show_columns table=Tickets64 like='id'"},
    {"EXPLAIN t 's%'", "show_columns table=t like='s%'"},
    {"SHOW TABLE STATUS LIKE 'Tickets%'", "show_table_status like='Tickets%'"},
    {"SHOW TABLE STATUS FROM db", "show_table_status schema=db"},

    // ---- SET ----
    {"SET NAMES utf8mb4", "set [names=utf8mb4]"},         // mysqlclient, PHP, Go
    {"set names 'utf8mb4' collate 'utf8mb4_unicode_ci'",  // Laravel
     "set [names='utf8mb4' collate=utf8mb4_unicode_ci]"},
    {"SET NAMES DEFAULT", "set [names=DEFAULT]"},
    {"SET CHARACTER SET utf8", "set [charset=utf8]"},
    {"SET CHARSET latin1", "set [charset=latin1]"},
    {"/*!40101 SET NAMES utf8 */", "set [names=utf8]"},
    {"SET AUTOCOMMIT = 0", "set [autocommit=0 -> int:0]"},  // PyMySQL
    {"set autocommit=ON", "set [autocommit=ON -> word:ON]"},
    {"SET autocommit = off", "set [autocommit=off -> word:off]"},
    {"SET autocommit = true, sql_mode = 'STRICT_ALL_TABLES'",
     "set [autocommit=true -> int:1] [sql_mode='STRICT_ALL_TABLES' -> str:'STRICT_ALL_TABLES']"},
    {"SET SESSION sql_mode = concat(@@sql_mode, ',STRICT_TRANS_TABLES')",
     "set [session.sql_mode=concat(@@sql_mode, ',STRICT_TRANS_TABLES')]"},
    {"SET SESSION sql_mode=(SELECT REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', ''))",
     "set [session.sql_mode=(SELECT REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', ''))]"},
    {"SET @@session.time_zone = '+00:00'", "set [session.time_zone='+00:00' -> str:'+00:00']"},
    {"SET @@SQL_SELECT_LIMIT := DEFAULT", "set [sql_select_limit=DEFAULT -> default]"},
    {"SET character_set_results = NULL",  // Connector/J
     "set [character_set_results=NULL -> null]"},
    {"SET @x = 5, @`y` = -3, @z := 'a'",
     "set [@x=5 -> int:5] [@y=-3 -> int:-3] [@z='a' -> str:'a']"},
    {"SET GLOBAL max_connections = 100, wait_timeout = 10, SESSION a = 1",
     "set [global.max_connections=100 -> int:100] [global.wait_timeout=10 -> int:10] "
     "[session.a=1 -> int:1]"},
    {"SET LOCAL x = 1", "set [session.x=1 -> int:1]"},
    {"SET PERSIST x = 1.5", "set [persist.x=1.5 -> dec:1.5]"},
    {"SET PERSIST_ONLY x = 1", "set [persist_only.x=1 -> int:1]"},
    {"SET @@global.x = @@session.y", "set [global.x=@@session.y]"},
    {"SET NAMES utf8mb4, autocommit = 1", "set [names=utf8mb4] [autocommit=1 -> int:1]"},
    {"set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES'), "
     "session_track_schema=1",  // MariaDB Connector/J
     "set [autocommit=1 -> int:1] [sql_mode=concat(@@sql_mode,',STRICT_TRANS_TABLES')] "
     "[session_track_schema=1 -> int:1]"},
    {"/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;",  // mysqldump
     "set [@old_unique_checks=@@UNIQUE_CHECKS] [unique_checks=0 -> int:0]"},
    {"SET keycache.key_buffer_size = 1024", "set [keycache.key_buffer_size=1024 -> int:1024]"},
    {"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
     "set_transaction scope=session isolation='READ COMMITTED'"},
    {"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
     "set_transaction isolation='REPEATABLE READ'"},
    {"set session transaction read only", "set_transaction scope=session read_only=1"},
    {"SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE",
     "set_transaction scope=global isolation='SERIALIZABLE' read_only=0"},

    // ---- SHOW ----
    {"SHOW VARIABLES", "show_variables"},
    {"SHOW GLOBAL VARIABLES LIKE 'max_allowed_packet'",
     "show_variables scope=global like='max_allowed_packet'"},
    {"SHOW SESSION VARIABLES LIKE 'sql_mode'", "show_variables scope=session like='sql_mode'"},
    {"SHOW VARIABLES LIKE 'lower_case_table_names'",  // SQLAlchemy
     "show_variables like='lower_case_table_names'"},
    {"/* mysql-connector-java-5.1.49 ( Revision: ad86f36e100e104cd926c6b81c8cab9565750116 ) */"
     "SHOW VARIABLES WHERE Variable_name ='language' OR Variable_name = 'net_write_timeout' OR "
     "Variable_name = 'interactive_timeout'",
     "show_variables where=Variable_name in(interactive_timeout,language,net_write_timeout)"},
    {"SHOW VARIABLES WHERE Variable_name in ('max_allowed_packet', 'system_time_zone')",
     "show_variables where=Variable_name in(max_allowed_packet,system_time_zone)"},
    {"SHOW STATUS LIKE 'Uptime'", "show_status like='Uptime'"},
    {"SHOW GLOBAL STATUS", "show_status scope=global"},
    {"show session status", "show_status scope=session"},
    {"SHOW WARNINGS", "show_warnings"},
    {"SHOW WARNINGS LIMIT 10", "show_warnings limit=10"},
    {"SHOW WARNINGS LIMIT 5, 10", "show_warnings limit=10 offset=5"},
    {"SHOW ERRORS", "show_errors"},
    {"SHOW ERRORS LIMIT 1", "show_errors limit=1"},
    {"show databases", "show_databases"},
    {"SHOW DATABASES LIKE 'tic%'", "show_databases like='tic%'"},
    {"SHOW SCHEMAS", "show_databases"},
    {"SHOW ENGINES", "show_engines"},
    {"SHOW STORAGE ENGINES", "show_engines"},
    {"SHOW COLLATION LIKE 'utf8mb4%'", "show_collation like='utf8mb4%'"},
    {"SHOW CHARACTER SET", "show_character_set"},
    {"SHOW CHARSET WHERE Charset = 'utf8mb4'", "show_character_set where=Charset in(utf8mb4)"},
    {"SHOW PROCESSLIST", "show_processlist"},
    {"SHOW FULL PROCESSLIST", "show_processlist full"},

    // ---- transactions and the rest ----
    {"USE tickets", "use schema=tickets"},
    {"use `my db`;", "use schema=my db"},
    {"BEGIN", "begin"},
    {"begin work", "begin"},
    {"START TRANSACTION", "begin"},
    {"START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT",
     "begin read_only consistent_snapshot"},
    {"START TRANSACTION READ WRITE", "begin"},
    {"COMMIT", "commit"},
    {"commit work;", "commit"},
    {"ROLLBACK", "rollback"},
    {"ROLLBACK WORK", "rollback"},
    {"DO 1", "do expr=1"},
    {"DO SLEEP(1), 2", "do expr=SLEEP(1), 2"},
    {"KILL 42", "kill id=42"},
    {"KILL QUERY 42", "kill query id=42"},
    {"KILL CONNECTION 7", "kill id=7"},
    {"KILL 007", "kill id=7"},
};

TEST(Recognizer, RecognizesEveryAcceptedStatement) {
  for (const AcceptCase& c : kAccepted) {
    const Statement s = recognize(c.sql);
    EXPECT_EQ(describe(s), c.expected) << c.sql;
    EXPECT_TRUE(describe(s).starts_with(statement_kind_name(s))) << c.sql;
  }
}

// Rejected statements: syntax errors carry the rest of the query from the offending token, as
// MySQL's ER_PARSE_ERROR does; unsupported statements name what is not supported.
struct RejectCase {
  std::string_view sql;
  UnrecognizedKind kind;
  std::string_view near;
};

constexpr auto kSyntax = UnrecognizedKind::kSyntaxError;
constexpr auto kUnsupported = UnrecognizedKind::kUnsupported;

constexpr RejectCase kRejected[] = {
    // Lexical errors.
    {"SELECT 'unterminated", kSyntax, "'unterminated"},
    {"SELECT 1 /* unterminated", kSyntax, "/* unterminated"},
    {"SELECT `x", kSyntax, "`x"},
    // Not SQL, or misspelt.
    {"FOO BAR", kSyntax, "FOO BAR"},
    {"SELEC 1", kSyntax, "SELEC 1"},
    {"SHOW VARIABLS", kSyntax, "SHOW VARIABLS"},
    {"(SELECT 1)", kSyntax, "(SELECT 1)"},
    // Malformed statements ticketd knows.
    {"SELECT 1; SELECT 2", kSyntax, "SELECT 2"},
    {"SELECT 1,", kSyntax, ""},
    {"SELECT 1 +", kSyntax, ""},
    {"SELECT (1", kSyntax, ""},
    {"SELECT 1)", kSyntax, ")"},
    {"SELECT 1 AS", kSyntax, ""},
    {"SELECT 1 LIMIT x", kSyntax, "x"},
    {"INSERT INTO t (stub) VALUES ('a'", kSyntax, ""},
    {"INSERT INTO t (stub) VALUES ('a',)", kSyntax, ")"},
    {"INSERT INTO t (stub)", kSyntax, ""},
    {"REPLACE INTO", kSyntax, ""},
    {"CREATE TABLE t (id int", kSyntax, ""},
    {"CREATE TABLE t (id int BOGUS)", kSyntax, "BOGUS)"},
    {"CREATE TABLE t id int", kSyntax, "id int"},
    {"CREATE SEQUENCE s START WITH x", kSyntax, "x"},
    {"CREATE SEQUENCE s START WITH 9223372036854775808", kSyntax, "9223372036854775808"},
    {"CREATE SEQUENCE s START WITH -9223372036854775809", kSyntax, "-9223372036854775809"},
    {"SELECT 1 LIMIT 18446744073709551616", kSyntax, "18446744073709551616"},
    {"KILL 18446744073709551616", kSyntax, "18446744073709551616"},
    {"CREATE SEQUENCE s BOGUS 1", kSyntax, "BOGUS 1"},
    {"CREATE SEQUENCE", kSyntax, ""},
    {"ALTER SEQUENCE s", kSyntax, ""},
    {"DROP TABLE", kSyntax, ""},
    {"SET x", kSyntax, ""},
    {"SET = 1", kSyntax, "= 1"},
    {"SET x = ", kSyntax, ""},
    {"SET TRANSACTION ISOLATION LEVEL SOMETIMES", kSyntax, "SOMETIMES"},
    {"SHOW VARIABLES LIKE", kSyntax, ""},
    {"SHOW COLUMNS Tickets64", kSyntax, "Tickets64"},
    {"SHOW TABLES extra", kSyntax, "extra"},
    {"START TRANSACTION SOMEHOW", kSyntax, "SOMEHOW"},
    {"KILL", kSyntax, ""},
    {"USE", kSyntax, ""},
    {"COMMIT NOW", kSyntax, "NOW"},
    {"SELECT NEXT 0 VALUES FROM s", kSyntax, "0 VALUES FROM s"},
    // Valid MySQL that ticketd does not support.
    {"SELECT * FROM Tickets64", kUnsupported, "SELECT * FROM Tickets64"},
    {"SELECT 1 FROM t;", kUnsupported, "SELECT 1 FROM t"},
    {"SELECT LAST_INSERT_ID() + 1", kUnsupported, "SELECT LAST_INSERT_ID() + 1"},
    {"SELECT LAST_INSERT_ID(5)", kUnsupported, "SELECT LAST_INSERT_ID(5)"},
    {"SELECT NOW(7)", kUnsupported, "SELECT NOW(7)"},
    {"SELECT USER", kUnsupported, "SELECT USER"},
    {"SELECT CAST('test plain returns' AS CHAR(60)) AS anon_1", kUnsupported,
     "SELECT CAST('test plain returns' AS CHAR(60)) AS anon_1"},  // SQLAlchemy
    {"SELECT NEXT VALUE FOR s FROM t", kUnsupported, "SELECT NEXT VALUE FOR s FROM t"},
    {"SELECT 1 FROM DUAL WHERE 1 = 1", kUnsupported, "SELECT 1 FROM DUAL WHERE 1 = 1"},
    {"UPDATE t SET id = id + 1", kUnsupported, "UPDATE t SET id = id + 1"},
    {"UPDATE t SET id = LAST_INSERT_ID(other + 1)", kUnsupported,
     "UPDATE t SET id = LAST_INSERT_ID(other + 1)"},
    {"UPDATE t SET id = LAST_INSERT_ID(id + 1) WHERE a = 1 AND b = 2", kUnsupported,
     "UPDATE t SET id = LAST_INSERT_ID(id + 1) WHERE a = 1 AND b = 2"},
    {"INSERT INTO t (stub) SELECT 'a'", kUnsupported, "INSERT INTO t (stub) SELECT 'a'"},
    {"INSERT INTO t VALUES (1) AS new", kUnsupported, "INSERT INTO t VALUES (1) AS new"},
    {"CREATE SEQUENCE s CYCLE", kUnsupported, "CYCLE"},
    {"CREATE SEQUENCE s START WITH 1 CYCLE CACHE 10", kUnsupported, "CYCLE"},
    {"CREATE TABLE t LIKE u", kUnsupported, "LIKE u"},
    {"CREATE TABLE t (id int) PARTITION BY HASH(id)", kUnsupported, "PARTITION BY HASH(id)"},
    {"CREATE TABLE t AS SELECT 1", kUnsupported, "AS SELECT 1"},
    {"ALTER TABLE t ADD COLUMN x int", kUnsupported, "ADD COLUMN x int"},
    {"SHOW VARIABLES WHERE Value > 5", kUnsupported, "WHERE Value > 5"},
    {"SHOW VARIABLES WHERE Variable_name = 'a' AND x = 'b'", kUnsupported,
     "WHERE Variable_name = 'a' AND x = 'b'"},
    {"EXPLAIN SELECT 1", kUnsupported, "EXPLAIN SELECT 1"},
    {"ROLLBACK TO SAVEPOINT a", kUnsupported, "ROLLBACK TO SAVEPOINT a"},
    {"SAVEPOINT a", kUnsupported, "SAVEPOINT a"},
    {"RELEASE SAVEPOINT a", kUnsupported, "RELEASE SAVEPOINT a"},
    {"FLUSH PRIVILEGES", kUnsupported, "FLUSH PRIVILEGES"},
    {"delete from Tickets64 where id < 100", kUnsupported, "DELETE from Tickets64"},
    {"CREATE DATABASE tickets", kUnsupported, "CREATE DATABASE tickets"},
    {"CREATE TEMPORARY TABLE t (id int)", kUnsupported, "CREATE TEMPORARY TABLE"},
    {"DROP DATABASE tickets", kUnsupported, "DROP DATABASE tickets"},
    {"GRANT ALL ON *.* TO 'x'@'%'", kUnsupported, "GRANT ALL ON"},
    {"SHOW GRANTS", kUnsupported, "SHOW GRANTS"},
    {"SHOW INDEX FROM t", kUnsupported, "SHOW INDEX FROM"},
    {"SHOW CREATE DATABASE db", kUnsupported, "SHOW CREATE DATABASE"},
    {"LOCK TABLES t WRITE", kUnsupported, "LOCK TABLES t"},
    {"SET PASSWORD = 'x'", kUnsupported, "SET PASSWORD"},
};

TEST(Recognizer, RejectsWithSyntaxErrorOrUnsupported) {
  for (const RejectCase& c : kRejected) {
    const Statement s = recognize(c.sql);
    const auto* u = std::get_if<Unrecognized>(&s);
    ASSERT_NE(u, nullptr) << c.sql << " -> " << describe(s);
    EXPECT_EQ(u->kind, c.kind) << c.sql << " -> " << describe(s);
    EXPECT_EQ(u->near, c.near) << c.sql;
  }
}

// Like the codec prefix tests: every prefix of every case is recognized as something, without
// crashing or reading past the end (run under ASan/UBSan).
TEST(Recognizer, HandlesEveryPrefixOfEveryCase) {
  std::vector<std::string_view> all;
  for (const AcceptCase& c : kAccepted) all.push_back(c.sql);
  for (const RejectCase& c : kRejected) all.push_back(c.sql);
  for (std::string_view sql : all) {
    for (std::size_t n = 0; n <= sql.size(); ++n) {
      const std::string prefix(sql.substr(0, n));  // a copy, so ASan sees reads past its end
      const Statement s = recognize(prefix);
      EXPECT_FALSE(describe(s).empty()) << prefix;
      EXPECT_FALSE(statement_kind_name(s).empty()) << prefix;
    }
  }
}

TEST(Recognizer, ReportsEmptyQueryForWhitespaceAndComments) {
  for (std::string_view sql : {"", "   ", "\n\t", "-- only a comment", "# hash", "/* block */"}) {
    const Statement s = recognize(sql);
    const auto* u = std::get_if<Unrecognized>(&s);
    ASSERT_NE(u, nullptr) << sql;
    EXPECT_EQ(u->kind, UnrecognizedKind::kEmptyQuery) << sql;
    EXPECT_EQ(statement_kind_name(s), "empty_query");
  }
}

TEST(Recognizer, ReportsTheLineOfASyntaxError) {
  const Statement s = recognize("SELECT\n  1\n  FROM\n  WHERE");
  const auto& u = std::get<Unrecognized>(s);
  EXPECT_EQ(u.kind, UnrecognizedKind::kUnsupported);
  EXPECT_EQ(u.line, 1u);
  const Statement e_statement = recognize("SELECT 1,\n2,\n)");
  const auto& e = std::get<Unrecognized>(e_statement);
  EXPECT_EQ(e.kind, UnrecognizedKind::kSyntaxError);
  EXPECT_EQ(e.near, ")");
  EXPECT_EQ(e.line, 3u);
}

TEST(Recognizer, KeepsFlickrSchemaColumnsAndKeys) {
  const Statement s = recognize(
      "CREATE TABLE `Tickets64` (\n"
      "  `id` bigint(20) unsigned NOT NULL auto_increment,\n"
      "  `stub` char(1) NOT NULL default '',\n"
      "  PRIMARY KEY  (`id`),\n"
      "  UNIQUE KEY `stub` (`stub`)\n"
      ") ENGINE=InnoDB AUTO_INCREMENT=1000");
  const auto& t = std::get<CreateTable>(s);
  EXPECT_EQ(t.name, (TableName{"", "Tickets64"}));
  EXPECT_FALSE(t.if_not_exists);
  ASSERT_EQ(t.columns.size(), 2u);
  EXPECT_EQ(t.columns[0].name, "id");
  EXPECT_EQ(t.columns[0].type, "bigint(20)");
  EXPECT_EQ(t.columns[0].type_name, "bigint");
  EXPECT_TRUE(t.columns[0].is_unsigned);
  EXPECT_TRUE(t.columns[0].is_auto_increment);
  EXPECT_FALSE(t.columns[0].is_nullable);
  EXPECT_EQ(t.columns[1].name, "stub");
  EXPECT_EQ(t.columns[1].type_name, "char");
  EXPECT_FALSE(t.columns[1].is_auto_increment);
  EXPECT_EQ(t.columns[1].default_value, "''");
  ASSERT_EQ(t.indexes.size(), 2u);
  EXPECT_EQ(t.indexes[0].kind, IndexKind::kPrimary);
  EXPECT_EQ(t.indexes[0].columns, std::vector<std::string>{"id"});
  EXPECT_EQ(t.indexes[1].kind, IndexKind::kUnique);
  EXPECT_EQ(t.indexes[1].name, "stub");
  EXPECT_EQ(t.auto_increment_start, 1000u);
  EXPECT_EQ(t.options.engine, "InnoDB");
}

// Connector/J 8.0 sends this right after connecting and maps the result columns by alias.
TEST(Recognizer, NamesConnectorJVariableColumnsByAlias) {
  const Statement s = recognize(
      "/* mysql-connector-java-8.0.33 (Revision: 7d6b0800528b6b25c68b52dc10d6c1c8429c100c) "
      "*/SELECT  @@session.auto_increment_increment AS auto_increment_increment, "
      "@@character_set_client AS character_set_client, @@character_set_connection AS "
      "character_set_connection, @@character_set_results AS character_set_results, "
      "@@character_set_server AS character_set_server, @@collation_server AS collation_server, "
      "@@collation_connection AS collation_connection, @@init_connect AS init_connect, "
      "@@interactive_timeout AS interactive_timeout, @@license AS license, "
      "@@lower_case_table_names AS lower_case_table_names, @@max_allowed_packet AS "
      "max_allowed_packet, @@net_write_timeout AS net_write_timeout, @@performance_schema AS "
      "performance_schema, @@query_cache_size AS query_cache_size, @@query_cache_type AS "
      "query_cache_type, @@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, "
      "@@time_zone AS time_zone, @@transaction_isolation AS transaction_isolation, @@wait_timeout "
      "AS wait_timeout");
  const auto& select = std::get<Select>(s);
  ASSERT_EQ(select.items.size(), 21u);
  for (const SelectItem& item : select.items) {
    EXPECT_EQ(item.kind, SelectItemKind::kSystemVariable) << item.text;
    EXPECT_EQ(item.column_name(), item.variable);
  }
  EXPECT_EQ(select.items[0].scope, VariableScope::kSession);
  EXPECT_EQ(select.items[0].text, "@@session.auto_increment_increment");
  EXPECT_EQ(select.items[1].scope, VariableScope::kDefault);
}

TEST(Recognizer, UsesTheItemTextAsColumnNameWithoutAlias) {
  const Statement select_statement = recognize("select @@version_comment limit 1");
  const auto& select = std::get<Select>(select_statement);
  ASSERT_EQ(select.items.size(), 1u);
  EXPECT_EQ(select.items[0].column_name(), "@@version_comment");
  EXPECT_EQ(select.items[0].variable, "version_comment");
  EXPECT_EQ(select.limit, 1u);
  const Statement lid_statement = recognize("SELECT  LAST_INSERT_ID( ) ;");
  const auto& lid = std::get<Select>(lid_statement);
  EXPECT_EQ(lid.items[0].column_name(), "LAST_INSERT_ID( )");
}

TEST(Recognizer, KeepsAssignmentDetails) {
  const Statement set_statement =
      recognize("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci, @@GLOBAL.Max_Connections = 5");
  const auto& set = std::get<SetStatement>(set_statement);
  ASSERT_EQ(set.assignments.size(), 2u);
  EXPECT_EQ(set.assignments[0].target, AssignmentTarget::kNames);
  EXPECT_EQ(set.assignments[0].value, (Literal{LiteralKind::kWord, "utf8mb4", 0}));
  EXPECT_EQ(set.assignments[0].collation, "utf8mb4_general_ci");
  EXPECT_EQ(set.assignments[1].target, AssignmentTarget::kSystemVariable);
  EXPECT_EQ(set.assignments[1].scope, VariableScope::kGlobal);
  EXPECT_EQ(set.assignments[1].name, "max_connections");
  EXPECT_EQ(set.assignments[1].value, (Literal{LiteralKind::kInteger, "5", 5}));
}

TEST(Recognizer, KeepsSequenceOptionValues) {
  const Statement create_statement =
      recognize("CREATE SEQUENCE s START WITH -9223372036854775808 INCREMENT BY -1");
  const auto& create = std::get<CreateSequence>(create_statement);
  EXPECT_EQ(create.options.start, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(create.options.increment, -1);
  EXPECT_FALSE(create.options.cache.has_value());
  EXPECT_FALSE(create.options.min_value.has_value());
}

TEST(Recognizer, NamesEveryKind) {
  EXPECT_EQ(statement_kind_name(recognize("REPLACE INTO t (stub) VALUES ('a')")), "insert_ticket");
  EXPECT_EQ(statement_kind_name(recognize("SELECT 1")), "select");
  EXPECT_EQ(statement_kind_name(recognize("SET autocommit=1")), "set");
  EXPECT_EQ(statement_kind_name(recognize("SELEC 1")), "syntax_error");
  EXPECT_EQ(statement_kind_name(recognize("DELETE FROM t")), "unsupported");
}

}  // namespace
}  // namespace ticketd::sql
