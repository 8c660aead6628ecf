#include "server/mysql/error_mapping.h"

#include <gtest/gtest.h>

#include <vector>

#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "storage/counter_store.h"

namespace ticketd::mysql {
namespace {

// Every value of every engine error enum the executor can see, written out by hand: a value
// added to an enum without a row here and in error_mapping.cpp fails this test.
TEST(MySqlErrorMapping, EveryEngineErrorHasARow) {
  struct Case {
    ErrorCode code;
    std::uint16_t mysql_errno;
    const char* state;
  };
  const Case cases[] = {
      {TicketErrc::kUnknownSequence, 1146, "42S02"},
      {TicketErrc::kAlreadyExists, 1050, "42S01"},
      {TicketErrc::kExhausted, 4084, "HY000"},
      {TicketErrc::kInvalidArgument, 1210, "HY000"},
      {TicketErrc::kStorageFailed, 1105, "HY000"},
      {TicketErrc::kRetryLater, 1205, "HY000"},
      {TicketErrc::kShuttingDown, 1053, "08S01"},
      {TicketErrc::kWrongKind, 1235, "42000"},
      {TicketErrc::kReservationNotFound, 1180, "HY000"},
      {TicketErrc::kReservationEnded, 1180, "HY000"},
      {TicketErrc::kQueueTimeout, 1205, "HY000"},
      {TicketErrc::kNotLeader, 1290, "HY000"},
      {StorageErrc::kIo, 1105, "HY000"},
      {StorageErrc::kNoSpace, 1105, "HY000"},
      {StorageErrc::kCorruption, 1105, "HY000"},
      {StorageErrc::kLocked, 1105, "HY000"},
      {StorageErrc::kFenced, 1290, "HY000"},
      {StorageErrc::kClosed, 1053, "08S01"},
      {StorageErrc::kOutcomeUnknown, 1180, "HY000"},
      {SnowflakeErrc::kClockMovedBackwards, 1105, "HY000"},
      {SnowflakeErrc::kWorkerLeaseLost, 1290, "HY000"},
      {WorkerErrc::kUnknownPool, 1105, "HY000"},
      {WorkerErrc::kUnknownLease, 1105, "HY000"},
      {WorkerErrc::kLeaseExpired, 1105, "HY000"},
      {WorkerErrc::kLeaseReleased, 1105, "HY000"},
      {WorkerErrc::kPoolFull, 1105, "HY000"},
  };
  // The last enumerators, so an appended value is noticed here too.
  static_assert(static_cast<int>(TicketErrc::kNotLeader) == 12);
  static_assert(static_cast<int>(StorageErrc::kOutcomeUnknown) == 7);
  static_assert(static_cast<int>(SnowflakeErrc::kWorkerLeaseLost) == 2);
  static_assert(static_cast<int>(WorkerErrc::kPoolFull) == 5);
  for (const auto& c : cases) {
    const auto row = engine_error_row(c.code);
    ASSERT_TRUE(row) << "no row for " << c.code.category().name() << " " << c.code.message();
    EXPECT_EQ(row->mysql_errno, c.mysql_errno) << c.code.message();
    EXPECT_EQ(row->sql_state, c.state) << c.code.message();
    auto e = to_err(Error{c.code, "detail"}, "tickets.T");
    EXPECT_EQ(e.code, c.mysql_errno) << c.code.message();
    EXPECT_EQ(e.sql_state, c.state) << c.code.message();
  }
  EXPECT_FALSE(engine_error_row(ErrorCode(99, ticket_category())));
  EXPECT_EQ(to_err(Error{TicketErrc::kUnknownSequence, {}}, "tickets.T").message,
            "Table 'tickets.T' doesn't exist");
  EXPECT_EQ(to_err(Error{TicketErrc::kStorageFailed, "no space"}, "x").message, "no space");
  EXPECT_EQ(to_err(Error{SnowflakeErrc::kWorkerLeaseLost, "lease of worker 3 lost"}, "x").message,
            "lease of worker 3 lost");
}

TEST(MySqlErrorMapping, AFencedWriteReadsAsNotTheLeader) {
  auto e = to_err(Error{StorageErrc::kFenced, "term 4 superseded"}, "x");
  EXPECT_EQ(e.code, kErOptionPreventsStatement);
  EXPECT_EQ(e.message,
            "The ticketd server is running with the --read-only option (not the leader: term 4 "
            "superseded) so it cannot execute this statement");
}

TEST(MySqlErrorMapping, EveryStatementErrorHasARowAndItsShape) {
  struct Case {
    StatementErrc code;
    std::vector<std::string_view> args;
    std::uint16_t mysql_errno;
    const char* state;
    std::string_view message;
  };
  const Case cases[] = {
      {StatementErrc::kNoDatabaseSelected, {}, 1046, "3D000", "No database selected"},
      {StatementErrc::kNoSuchTable, {"db.t"}, 1146, "42S02", "Table 'db.t' doesn't exist"},
      {StatementErrc::kBadDb, {"x"}, 1049, "42000", "Unknown database 'x'"},
      {StatementErrc::kTableExists, {"t"}, 1050, "42S01", "Table 't' already exists"},
      {StatementErrc::kBadTable, {"db.t"}, 1051, "42S02", "Unknown table 'db.t'"},
      {StatementErrc::kUnknownSequence, {"db.s"}, 4091, "42S02", "Unknown SEQUENCE: 'db.s'"},
      {StatementErrc::kNotSupported,
       {"X"},
       1235,
       "42000",
       "This version of ticketd doesn't yet support 'X'"},
      {StatementErrc::kWrongValueCount,
       {"3"},
       1136,
       "21S01",
       "Column count doesn't match value count at row 3"},
      {StatementErrc::kWrongArguments, {"too big"}, 1210, "HY000", "too big"},
      {StatementErrc::kUnknownSystemVariable, {"v"}, 1193, "HY000", "Unknown system variable 'v'"},
      {StatementErrc::kTooLongIdent, {"v"}, 1059, "42000", "Identifier name 'v' is too long"},
      {StatementErrc::kWrongAutoKey,
       {},
       1075,
       "42000",
       "Incorrect table definition; there can be only one auto column and it must be defined "
       "as a key"},
      {StatementErrc::kGlobalVariableDenied,
       {},
       1227,
       "42000",
       "Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN "
       "privilege(s) for this operation"},
      {StatementErrc::kSessionOverrideRefused,
       {"auto_increment_offset", "1"},
       1235,
       "42000",
       "ticketd does not allow changing auto_increment_offset per session (the server's value "
       "is 1): a session override would break the guarantee that servers with different "
       "offsets never issue the same value"},
      {StatementErrc::kWrongValueForVariable,
       {"autocommit", "x"},
       1231,
       "42000",
       "Variable 'autocommit' can't be set to the value of 'x'"},
      {StatementErrc::kUnknownThreadId, {"9"}, 1094, "HY000", "Unknown thread id: 9"},
      {StatementErrc::kEmptyQuery, {}, 1065, "42000", "Query was empty"},
      {StatementErrc::kParseError,
       {"SELEKT", "2"},
       1064,
       "42000",
       "You have an error in your SQL syntax; check the manual that corresponds to your "
       "ticketd server version for the right syntax to use near 'SELEKT' at line 2"},
  };
  static_assert(static_cast<int>(StatementErrc::kParseError) == 17, "a new value needs a case");
  for (const auto& c : cases) {
    ErrResult e;
    switch (c.args.size()) {
      case 0:
        e = to_err(c.code);
        break;
      case 1:
        e = to_err(c.code, {c.args[0]});
        break;
      default:
        e = to_err(c.code, {c.args[0], c.args[1]});
        break;
    }
    EXPECT_EQ(e.code, c.mysql_errno) << c.message;
    EXPECT_EQ(e.sql_state, c.state) << c.message;
    EXPECT_EQ(e.message, c.message);
  }
}

TEST(MySqlErrorMapping, EveryFrontEndLimitHasARow) {
  struct Case {
    LimitErrc code;
    std::uint16_t mysql_errno;
    const char* state;
  };
  const Case cases[] = {
      {LimitErrc::kTooManyStatements, 1105, "HY000"}, {LimitErrc::kNestedTooDeep, 1064, "42000"},
      {LimitErrc::kValueTooLarge, 1301, "HY000"},     {LimitErrc::kTooManyVariables, 1105, "HY000"},
      {LimitErrc::kLongDataTooLarge, 1105, "HY000"},  {LimitErrc::kConnectionMemory, 4082, "HY000"},
      {LimitErrc::kGlobalMemory, 4081, "HY000"},
  };
  for (const auto& c : cases) {
    auto e = to_err(c.code, "detail");
    EXPECT_EQ(e.code, c.mysql_errno) << static_cast<int>(c.code);
    EXPECT_EQ(e.sql_state, c.state) << static_cast<int>(c.code);
    EXPECT_EQ(e.message, "detail");
  }
}

// The connection layer's refusals: mysqld's numbers, states and words, and whether the
// connection ends after them (a login or framing error does; a bad command does not).
TEST(MySqlErrorMapping, EveryConnectionErrorHasARowItsShapeAndWhetherItCloses) {
  struct Case {
    ConnectionErrc code;
    std::vector<std::string_view> args;
    std::uint16_t mysql_errno;
    const char* state;
    std::string_view message;
    bool close;
  };
  const Case cases[] = {
      {ConnectionErrc::kPacketTooLarge,
       {},
       1153,
       "08S01",
       "Got a packet bigger than 'max_allowed_packet' bytes",
       true},
      {ConnectionErrc::kPacketsOutOfOrder, {}, 1156, "08S01", "Got packets out of order", true},
      {ConnectionErrc::kBadHandshake, {""}, 1043, "08S01", "Bad handshake", true},
      {ConnectionErrc::kBadHandshake,
       {": protocol 4.1 is required"},
       1043,
       "08S01",
       "Bad handshake: protocol 4.1 is required",
       true},
      {ConnectionErrc::kTlsNotConfigured,
       {},
       1043,
       "08S01",
       "SSL connection error: TLS is not configured (mysql.tls)",
       true},
      {ConnectionErrc::kSecureTransportRequired,
       {},
       3159,
       "HY000",
       "Connections using insecure transport are prohibited while --require_secure_transport=ON.",
       true},
      {ConnectionErrc::kAccessDenied,
       {"u", "127.0.0.1", " (using password: YES)"},
       1045,
       "28000",
       "Access denied for user 'u'@'127.0.0.1' (using password: YES)",
       true},
      {ConnectionErrc::kLoginsThrottled,
       {"u", "h"},
       3955,
       "HY000",
       "Access denied for user 'u'@'h': too many failed logins of this user from this address "
       "are being answered; try again later",
       true},
      {ConnectionErrc::kUnknownCommand, {}, 1047, "08S01", "Unknown command", false},
      {ConnectionErrc::kMalformedCommand,
       {"COM_QUERY"},
       1064,
       "42000",
       "malformed COM_QUERY",
       false},
      {ConnectionErrc::kTooManyPreparedStatements,
       {"16382"},
       1461,
       "42000",
       "Can't create more than max_prepared_stmt_count statements (current value: 16382)",
       false},
      {ConnectionErrc::kTooManyPlaceholders,
       {},
       1390,
       "HY000",
       "Prepared statement contains too many placeholders",
       false},
      {ConnectionErrc::kUnknownStatementHandler,
       {" (7) given to mysqld_stmt_execute"},
       1243,
       "HY000",
       "Unknown prepared statement handler (7) given to mysqld_stmt_execute",
       false},
      {ConnectionErrc::kWrongExecuteArguments,
       {},
       1210,
       "HY000",
       "Incorrect arguments to mysqld_stmt_execute",
       false},
  };
  for (const auto& c : cases) {
    std::initializer_list<std::string_view> none{};
    const auto e = c.args.empty()       ? to_err(c.code, none)
                   : c.args.size() == 1 ? to_err(c.code, {c.args[0]})
                   : c.args.size() == 2 ? to_err(c.code, {c.args[0], c.args[1]})
                                        : to_err(c.code, {c.args[0], c.args[1], c.args[2]});
    EXPECT_EQ(e.err.code, c.mysql_errno) << c.message;
    EXPECT_EQ(e.err.sql_state, c.state) << c.message;
    EXPECT_EQ(e.err.message, c.message);
    EXPECT_EQ(e.close, c.close) << c.message;
  }
}

TEST(MySqlErrorMapping, MemoryVerdictsNameTheLimitAndTheUse) {
  MemoryBudget global(1000);
  ConnectionMemory memory(600, &global);
  ASSERT_EQ(memory.try_charge(500), ConnectionMemory::Verdict::kOk);
  EXPECT_EQ(to_err(ConnectionMemory::Verdict::kConnectionLimit, memory).message,
            "Connection closed. Connection memory limit 600 bytes exceeded. Consumed 500 bytes.");
  auto g = to_err(ConnectionMemory::Verdict::kGlobalLimit, memory);
  EXPECT_EQ(g.code, 4081);
  EXPECT_EQ(g.message,
            "Connection closed. Global connection memory limit 1000 bytes exceeded. Consumed 500 "
            "bytes.");
}

TEST(MySqlErrorMapping, ClipsNamesWithoutSplittingACharacter) {
  EXPECT_EQ(clip_for_message("short"), "short");
  EXPECT_EQ(clip_for_message(std::string(100, 'n')), std::string(64, 'n'));
  // 63 ASCII bytes and a 2-byte character across the cut: the character goes whole.
  EXPECT_EQ(clip_for_message(std::string(63, 'a') + "\xc3\xa9tail"), std::string(63, 'a'));
  EXPECT_EQ(clip_utf8("\xe2\x82\xac\xe2\x82\xac", 4), "\xe2\x82\xac");
}

}  // namespace
}  // namespace ticketd::mysql
