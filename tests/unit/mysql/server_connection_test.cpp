// ServerConnection conversations scripted in bytes: a client built from the codec's client-side
// encoders talks to a ServerConnection over an engine on a memory store. No sockets.
#include "server/mysql/server_connection.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "server/mysql/error_mapping.h"
#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/handshake.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/mysql/query_executor.h"
#include "storage/memory_counter_store.h"
#include "tests/support/fake_clock.h"
#include "tests/unit/mysql/conversation_support.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::kModernClient;
using testing::unframe;

class Conversation : public ::testing::Test {
 protected:
  explicit Conversation(ServerSettings settings = {})
      : committer_(store_), service_(store_, committer_), settings_(std::move(settings)) {
    EXPECT_TRUE(service_.ensure_configured(SequenceSpec{.name = "Tickets64", .cache = 10}));
    login_.users["app"] = UserAccount::with_password(AuthPlugin::kNativePassword, "s3cret");
  }

  // Sends one payload with the given sequence id; returns the server's reply packets.
  ServerConnection::Output send(std::string_view payload, std::uint8_t seq = 0) {
    std::string framed;
    append_frame(framed, payload, seq);
    conn_.feed(framed);
    std::promise<ServerConnection::Output> p;
    EXPECT_TRUE(
        conn_.process_next([&p](ServerConnection::Output o) { p.set_value(std::move(o)); }));
    return p.get_future().get();
  }

  HandshakeV10 greet() {
    auto packets = unframe(conn_.greeting());
    EXPECT_EQ(packets.size(), 1u);
    EXPECT_EQ(packets[0].seq, 0);
    auto hello = decode_handshake_v10(as_bytes(packets[0].payload));
    EXPECT_TRUE(hello);
    return *hello;
  }

  std::string login_payload(const HandshakeV10& hello, Capabilities caps, std::string password,
                            std::optional<std::string> plugin = std::string(kNativePasswordPlugin),
                            std::string user = "app", std::string database = "tickets") {
    HandshakeResponse41 r;
    r.capabilities = caps;
    r.max_packet_size = 1 << 24;
    r.character_set = kCharsetUtf8mb4GeneralCi;
    r.username = std::move(user);
    r.auth_response = native_password_token(password, hello.auth_plugin_data);
    r.database = std::move(database);
    r.auth_plugin_name = plugin;
    std::string out;
    PacketWriter w(out);
    encode(r, w);
    return out;
  }

  void login(Capabilities caps = kModernClient) {
    auto hello = greet();
    auto out = send(login_payload(hello, caps, "s3cret"), 1);
    auto packets = unframe(out.bytes);
    ASSERT_EQ(packets.size(), 1u);
    EXPECT_EQ(packets[0].seq, 2);
    EXPECT_EQ(static_cast<std::uint8_t>(packets[0].payload[0]), 0x00) << "expected OK";
    ASSERT_TRUE(conn_.authenticated());
  }

  std::string query(std::string_view sql) {
    std::string p(1, static_cast<char>(kComQuery));
    p += sql;
    return p;
  }

  MemoryCounterStore store_;
  GroupCommitter committer_;
  TicketService service_;
  ticketd::testing::FakeClock clock_;
  ServerSettings settings_;
  QueryExecutor executor_{service_, settings_, clock_};
  LoginPolicy login_;
  std::vector<std::string> failed_users_;  // what on_auth_failure reported
  ServerConnection conn_{
      executor_, login_, 7, "127.0.0.1",
      ConnectionHooks{[this](std::string_view user) { failed_users_.emplace_back(user); }, {}}};
};

TEST_F(Conversation, GreetingAdvertisesNativePasswordAndNoSsl) {
  auto hello = greet();
  EXPECT_EQ(hello.auth_plugin_name, kNativePasswordPlugin);
  EXPECT_EQ(hello.connection_id, 7u);
  EXPECT_TRUE(hello.server_version.starts_with("8.0."));
  EXPECT_EQ(hello.capabilities & kClientSsl, 0u);
  EXPECT_NE(hello.capabilities & kClientDeprecateEof, 0u);
  EXPECT_NE(hello.capabilities & kClientPluginAuthLenencClientData, 0u);
  for (auto b : hello.auth_plugin_data) EXPECT_NE(b, 0);
}

TEST_F(Conversation, FlickrRecipeOkPacketCarriesTheTicketByteForByte) {
  login();
  EXPECT_TRUE(failed_users_.empty());
  auto packets = unframe(send(query("REPLACE INTO Tickets64 (stub) VALUES ('a')")).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 1);
  // OK, affected rows 2, last insert id 1, status AUTOCOMMIT, no warnings.
  EXPECT_EQ(testing::to_hex(packets[0].payload), "00 02 01 02 00 00 00");
  packets = unframe(send(query("SELECT LAST_INSERT_ID()")).bytes);
  // DEPRECATE_EOF: column count, one column definition, one row, OK-as-EOF terminator.
  ASSERT_EQ(packets.size(), 4u);
  EXPECT_EQ(testing::to_hex(packets[0].payload), "01");
  auto col = decode_column_definition41(as_bytes(packets[1].payload));
  ASSERT_TRUE(col);
  EXPECT_EQ(col->name, "LAST_INSERT_ID()");
  EXPECT_EQ(col->type, kTypeLongLong);
  EXPECT_NE(col->flags & kUnsignedFlag, 0);
  EXPECT_EQ(testing::to_hex(packets[2].payload), "01 31");  // lenenc "1"
  EXPECT_EQ(static_cast<std::uint8_t>(packets[3].payload[0]), 0xFE);
}

TEST_F(Conversation, WithoutDeprecateEofResultSetsUseEofPackets) {
  login(kModernClient & ~kClientDeprecateEof);
  auto packets = unframe(send(query("SELECT 1, 'x'")).bytes);
  // count, 2 columns, EOF, row, EOF
  ASSERT_EQ(packets.size(), 6u);
  EXPECT_TRUE(is_eof_packet(as_bytes(packets[3].payload)));
  EXPECT_TRUE(is_eof_packet(as_bytes(packets[5].payload)));
  for (std::size_t i = 0; i < packets.size(); ++i) EXPECT_EQ(packets[i].seq, i + 1);
}

TEST_F(Conversation, ClientAskingForCachingSha2IsSwitchedToNativePassword) {
  auto hello = greet();
  auto out = send(login_payload(hello, kModernClient, "s3cret", "caching_sha2_password"), 1);
  auto packets = unframe(out.bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 2);
  auto sw = decode_auth_switch_request(as_bytes(packets[0].payload));
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->plugin_name, kNativePasswordPlugin);
  auto ok = unframe(send(native_password_token("s3cret", hello.auth_plugin_data), 3).bytes);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].seq, 4);
  EXPECT_TRUE(conn_.authenticated());
}

TEST_F(Conversation, OldStyleResponseWithOneByteAuthLengthAndNoPluginName) {
  auto hello = greet();
  // PHP mysqlnd / Go style: no PLUGIN_AUTH_LENENC_CLIENT_DATA, no plugin name.
  auto out = send(
      login_payload(hello, kModernClient & ~kClientPluginAuthLenencClientData & ~kClientPluginAuth,
                    "s3cret", std::nullopt),
      1);
  EXPECT_EQ(static_cast<std::uint8_t>(unframe(out.bytes)[0].payload[0]), 0x00);
  EXPECT_TRUE(conn_.authenticated());
}

TEST_F(Conversation, WrongPasswordIs1045AndCloses) {
  auto hello = greet();
  auto out = send(login_payload(hello, kModernClient, "wrong"), 1);
  EXPECT_TRUE(out.close);
  auto err = decode_err_packet(as_bytes(unframe(out.bytes)[0].payload));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error_code, 1045);
  EXPECT_EQ(err->sql_state, "28000");
  EXPECT_EQ(err->message, "Access denied for user 'app'@'127.0.0.1' (using password: YES)");
  EXPECT_FALSE(conn_.authenticated());
}

TEST_F(Conversation, AnUnknownUserIsRefusedLikeAWrongPasswordAndTheHookGetsTheName) {
  auto hello = greet();
  auto out = send(
      login_payload(hello, kModernClient, "s3cret", std::string(kNativePasswordPlugin), "nobody"),
      1);
  EXPECT_TRUE(out.close);
  auto err = decode_err_packet(as_bytes(unframe(out.bytes)[0].payload));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error_code, 1045);
  EXPECT_EQ(err->message, "Access denied for user 'nobody'@'127.0.0.1' (using password: YES)");
  EXPECT_EQ(failed_users_, std::vector<std::string>{"nobody"});
  EXPECT_FALSE(conn_.authenticated());
}

TEST_F(Conversation, AWrongPasswordReportsTheUserToTheHook) {
  auto hello = greet();
  (void)send(login_payload(hello, kModernClient, "wrong"), 1);
  EXPECT_EQ(failed_users_, std::vector<std::string>{"app"});
}

TEST_F(Conversation, GarbageHandshakeIsRefusedNeverACrash) {
  greet();
  auto out = send("\x01\x02\x03", 1);
  EXPECT_TRUE(out.close);
  auto err = decode_err_packet(as_bytes(unframe(out.bytes)[0].payload));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error_code, 1043);
}

TEST_F(Conversation, MultiStatementsFlagMoreResultsUntilTheLast) {
  login();
  auto packets = unframe(
      send(query("REPLACE INTO Tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID()")).bytes);
  ASSERT_EQ(packets.size(), 5u);  // OK, then count, column, row, OK-as-EOF
  auto ok = decode_ok_packet(as_bytes(packets[0].payload), kModernClient);
  ASSERT_TRUE(ok);
  EXPECT_NE(ok->status_flags & kServerMoreResultsExists, 0);
  EXPECT_EQ(ok->last_insert_id, 1u);
}

TEST_F(Conversation, AnErrorEndsAMultiStatementAndTheConnectionStays) {
  login();
  auto packets = unframe(send(query("SELECT 1; SELEKT 2; SELECT 3")).bytes);
  auto err = decode_err_packet(as_bytes(packets.back().payload));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error_code, 1064);
  EXPECT_EQ(unframe(send(query("SELECT 4")).bytes).size(), 4u);
}

TEST_F(Conversation, UnknownCommandIs1047AndTheConnectionStays) {
  login();
  auto out = send(std::string(1, '\x05'));  // COM_CREATE_DB
  EXPECT_FALSE(out.close);
  auto err = decode_err_packet(as_bytes(unframe(out.bytes)[0].payload));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error_code, 1047);
  auto ping = unframe(send(std::string(1, static_cast<char>(kComPing))).bytes);
  EXPECT_EQ(static_cast<std::uint8_t>(ping[0].payload[0]), 0x00);
}

TEST_F(Conversation, PreparedStatementRemembersParameterTypes) {
  login();
  std::string prep(1, static_cast<char>(kComStmtPrepare));
  prep += "REPLACE INTO Tickets64 (stub) VALUES (?)";
  auto packets = unframe(send(prep).bytes);
  ASSERT_GE(packets.size(), 2u);  // PREPARE_OK + one param definition (no EOF: deprecated)
  EXPECT_EQ(static_cast<std::uint8_t>(packets[0].payload[0]), 0x00);
  const std::string id = packets[0].payload.substr(1, 4);
  // First execute: new-params-bound with type VAR_STRING, value 'a'.
  std::string exec1 = std::string(1, static_cast<char>(kComStmtExecute)) + id +
                      std::string("\x00\x01\x00\x00\x00", 5) + std::string("\x00", 1) +
                      std::string("\x01", 1) + std::string("\xfd\x00", 2) +
                      "\x01"
                      "a";
  auto ok1 = decode_ok_packet(as_bytes(unframe(send(exec1).bytes)[0].payload), kModernClient);
  ASSERT_TRUE(ok1);
  EXPECT_EQ(ok1->last_insert_id, 1u);
  // Second execute: no types (they must be remembered), value 'b'.
  std::string exec2 = std::string(1, static_cast<char>(kComStmtExecute)) + id +
                      std::string("\x00\x01\x00\x00\x00", 5) + std::string("\x00", 1) +
                      std::string("\x00", 1) +
                      "\x01"
                      "b";
  auto ok2 = decode_ok_packet(as_bytes(unframe(send(exec2).bytes)[0].payload), kModernClient);
  ASSERT_TRUE(ok2);
  EXPECT_EQ(ok2->last_insert_id, 2u);
}

TEST_F(Conversation, OversizedPacketIs1153AndCloses) {
  login();
  std::string big(1, static_cast<char>(kComQuery));
  big += std::string(settings_.max_allowed_packet + 10, 'x');
  auto out = send(big);
  EXPECT_TRUE(out.close);
  auto err = decode_err_packet(as_bytes(unframe(out.bytes)[0].payload));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error_code, 1153);
}

TEST_F(Conversation, ResetConnectionForgetsSessionState) {
  login();
  send(query("REPLACE INTO Tickets64 (stub) VALUES ('a')"));
  EXPECT_EQ(conn_.session().last_insert_id, 1u);
  auto out = unframe(send(std::string(1, static_cast<char>(kComResetConnection))).bytes);
  EXPECT_EQ(static_cast<std::uint8_t>(out[0].payload[0]), 0x00);
  EXPECT_EQ(conn_.session().last_insert_id, 0u);
  EXPECT_EQ(conn_.session().database, "tickets");
}

// Gapless numbers follow the transaction: held after BEGIN (status IN_TRANS), released by
// COM_RESET_CONNECTION and by ROLLBACK, made final by COMMIT.
TEST_F(Conversation, GaplessNumbersFollowTheTransaction) {
  auto g = GaplessSequence::open(SequenceSpec{.name = "Invoices", .kind = SequenceKind::kGapless},
                                 GaplessOptions{}, store_, committer_, clock_);
  ASSERT_TRUE(g);
  EXPECT_TRUE(service_.add_gapless(*g));
  login();
  auto ok = [](const ServerConnection::Output& o) {
    auto p = unframe(o.bytes);
    EXPECT_EQ(p.size(), 1u);
    EXPECT_EQ(static_cast<std::uint8_t>(p[0].payload[0]), 0x00) << p[0].payload.substr(3);
    return decode_ok_packet(as_bytes(p[0].payload), kModernClient);
  };
  ok(send(query("BEGIN")));
  auto reserved = ok(send(query("REPLACE INTO Invoices (stub) VALUES ('a')")));
  ASSERT_TRUE(reserved);
  EXPECT_EQ(reserved->last_insert_id, 1u);
  EXPECT_NE(reserved->status_flags & 0x0001, 0) << "SERVER_STATUS_IN_TRANS";
  EXPECT_EQ((*g)->audit().pending.size(), 1u);
  ok(send(std::string(1, static_cast<char>(kComResetConnection))));
  EXPECT_EQ((*g)->audit().released, std::vector<std::uint64_t>{1});

  ok(send(query("BEGIN")));
  EXPECT_EQ(ok(send(query("REPLACE INTO Invoices (stub) VALUES ('a')")))->last_insert_id, 1u);
  ok(send(query("ROLLBACK")));
  EXPECT_EQ((*g)->audit().released, std::vector<std::uint64_t>{1});

  ok(send(query("BEGIN")));
  EXPECT_EQ(ok(send(query("REPLACE INTO Invoices (stub) VALUES ('a')")))->last_insert_id, 1u);
  auto committed = ok(send(query("COMMIT")));
  ASSERT_TRUE(committed);
  EXPECT_EQ(committed->status_flags & 0x0001, 0);
  EXPECT_EQ((*g)->audit().committed_through, 1u);
  // Autocommit: one statement reserves and commits.
  EXPECT_EQ(ok(send(query("REPLACE INTO Invoices (stub) VALUES ('a')")))->last_insert_id, 2u);
  EXPECT_EQ((*g)->audit().committed_through, 2u);
}

// ---- hostile input (issue 11) ----------------------------------------------------------------

std::optional<ErrPacket> last_err(const ServerConnection::Output& o) {
  auto packets = unframe(o.bytes);
  if (packets.empty() || static_cast<std::uint8_t>(packets.back().payload[0]) != 0xFF) {
    return std::nullopt;
  }
  auto e = decode_err_packet(as_bytes(packets.back().payload));
  return e ? std::optional(*e) : std::nullopt;
}

std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST_F(Conversation, SetvalToMaxValueExhaustsTheSequenceInsteadOfAnOffByOneError) {
  login();
  auto packets = unframe(send(query("SELECT SETVAL(Tickets64, 9223372036854775807)")).bytes);
  ASSERT_EQ(packets.size(), 4u) << packets.back().payload;
  EXPECT_EQ(packets[2].payload,
            "\x13"
            "9223372036854775807");
  auto next = last_err(send(query("SELECT NEXTVAL(Tickets64)")));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->error_code, kErSequenceRunOut);
  // Already past: NULL, as MariaDB.
  packets = unframe(send(query("SELECT SETVAL(Tickets64, 9223372036854775807)")).bytes);
  ASSERT_EQ(packets.size(), 4u);
  EXPECT_EQ(testing::to_hex(packets[2].payload), "fb");
}

// Statements that answer inline (most NEXTVALs, from the cache) and later (when the cache of 10
// needs a durable write) run one after another without a call per statement.
TEST_F(Conversation, AThousandStatementsRunInOrderAndMoreAreRefusedWhole) {
  login();
  auto packets = unframe(
      send(query(repeat("SELECT NEXTVAL(Tickets64);", ServerConnection::kMaxStatementsPerQuery)))
          .bytes);
  ASSERT_EQ(packets.size(), 4 * ServerConnection::kMaxStatementsPerQuery);
  for (std::size_t i = 0; i < ServerConnection::kMaxStatementsPerQuery; ++i) {
    EXPECT_EQ(packets[4 * i + 2].payload.substr(1), std::to_string(i + 1));
  }
  for (std::size_t n :
       {ServerConnection::kMaxStatementsPerQuery + 1, std::size_t{5000}, std::size_t{10000}}) {
    auto out = send(query(repeat("SELECT 1;", n)));
    EXPECT_EQ(unframe(out.bytes).size(), 1u) << n;
    auto e = last_err(out);
    ASSERT_TRUE(e) << n;
    EXPECT_EQ(e->error_code, kErGeneral);
    EXPECT_EQ(e->message, "Too many statements in one query: at most 1000 are allowed");
  }
  EXPECT_EQ(unframe(send(query("SELECT 4")).bytes).size(), 4u);
  // No statement of a refused query ran.
  packets = unframe(send(query("SELECT NEXTVAL(Tickets64)")).bytes);
  EXPECT_EQ(packets[2].payload.substr(1), "1001");
}

// DROP TABLE IF EXISTS over 100,000 missing names answers inline for each: a loop, not a call
// per name, and at most 1024 notes kept (mysqld's max_error_count).
TEST_F(Conversation, DroppingAHundredThousandMissingTablesIsOneOk) {
  login();
  std::string drop = "DROP TABLE IF EXISTS t0";
  for (int i = 1; i < 100000; ++i) drop += ", t" + std::to_string(i);
  auto packets = unframe(send(query(drop)).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(static_cast<std::uint8_t>(packets[0].payload[0]), 0x00);
  EXPECT_EQ(conn_.session().warnings.size(), 1024u);
}

TEST_F(Conversation, DeepNestingIsASyntaxErrorAndTheConnectionStays) {
  login();
  for (std::size_t depth : {std::size_t{30000}, std::size_t{100000}}) {
    const std::string parens = repeat("(", depth) + "1" + repeat(")", depth);
    for (const std::string& sql :
         {"SET @a = " + parens, "SET @@session.x = " + parens, "SET autocommit = " + parens,
          "SET @a = " + repeat("CONCAT(", depth) + "'a'" + repeat(")", depth),
          "SET @a = " + repeat("IFNULL(", depth) + "NULL" + repeat(", 'a')", depth)}) {
      auto e = last_err(send(query(sql)));
      ASSERT_TRUE(e) << sql.substr(0, 30);
      // Refused by the nesting bound, or (past 262,144 tokens) unlexed by the token budget.
      if (e->error_code == kErGeneral) {
        EXPECT_NE(e->message.find("Statement too long"), std::string::npos) << e->message;
        EXPECT_GT(depth, 30000u);
        continue;
      }
      EXPECT_EQ(e->error_code, kErParse) << sql.substr(0, 30);
      EXPECT_NE(e->message.find("nested more than 64 levels"), std::string::npos) << e->message;
    }
  }
  EXPECT_FALSE(conn_.session().user_variables.contains("a"));
  EXPECT_EQ(unframe(send(query("SELECT 4")).bytes).size(), 4u);
}

TEST_F(Conversation, SessionVariableDoublingStopsAtMaxAllowedPacket) {
  login();
  ASSERT_FALSE(last_err(send(query("SET @@session.v = '" + std::string(40, 'x') + "'"))));
  int step = 0;
  std::optional<ErrPacket> e;
  for (; step < 30 && !e; ++step) e = last_err(send(query("SET @@session.v = CONCAT(@@v, @@v)")));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErWarnAllowedPacketOverflowed);
  EXPECT_EQ(e->message, "Result of SET 'v' was larger than max_allowed_packet (16777216)");
  // 40 * 2^18 bytes fit in 16 MiB; the 19th doubling does not.
  EXPECT_EQ(step, 19);
  EXPECT_EQ(conn_.session().variables.at("v").size(), 40u << 18);
  EXPECT_EQ(conn_.session().memory.used(), conn_.session().variable_bytes);
}

TEST_F(Conversation, ASessionHoldsAtMost1024UserVariables) {
  login();
  std::string set = "SET @v0 = 1";
  for (std::size_t i = 1; i < kMaxSessionVariables; ++i) set += ", @v" + std::to_string(i) + " = 1";
  ASSERT_FALSE(last_err(send(query(set))));
  auto e = last_err(send(query("SET @one_more = 1")));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErGeneral);
  EXPECT_EQ(conn_.session().user_variables.size(), kMaxSessionVariables);
  ASSERT_FALSE(last_err(send(query("SET @v0 = 2"))));  // replacing one is fine
}

// @@x is looked up directly: with a 4 MiB session variable, 20,000 references to another one
// copy nothing big (each used to copy every session variable).
TEST_F(Conversation, VariableReferencesDoNotCopyOtherVariables) {
  login();
  ASSERT_FALSE(last_err(send(query("SET @@session.big = '" + std::string(1 << 22, 'b') + "'"))));
  std::string refs = "SET @@session.y = CONCAT(@@version";
  for (int i = 0; i < 20000; ++i) refs += ", @@version";
  refs += ")";
  const auto start = std::chrono::steady_clock::now();
  ASSERT_FALSE(last_err(send(query(refs))));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(Conversation, LongNamesInAuthErrorsAreClipped) {
  auto hello = greet();
  const std::string user(60000, 'u');
  auto e = last_err(send(
      login_payload(hello, kModernClient, "s3cret", std::string(kNativePasswordPlugin), user), 1));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErAccessDenied);
  EXPECT_EQ(e->message, "Access denied for user '" + std::string(64, 'u') +
                            "'@'127.0.0.1' (using password: YES)");
}

TEST_F(Conversation, LongDatabaseNamesInErrorsAreClipped) {
  auto hello = greet();
  auto e = last_err(
      send(login_payload(hello, kModernClient, "s3cret", std::string(kNativePasswordPlugin), "app",
                         std::string(60000, 'd')),
           1));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErBadDb);
  EXPECT_EQ(e->message, "Unknown database '" + std::string(64, 'd') + "'");
}

TEST_F(Conversation, ErrorMessagesAreCutToMysqlErrmsgSize) {
  login();
  auto e = last_err(send(query("SET autocommit = '" + std::string(2000, 'a') + "'")));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, 1231);
  EXPECT_LE(e->message.size(), kMysqlErrmsgSize - 1);
}

// COM_STMT_PREPARE describes the columns COM_STMT_EXECUTE then sends, byte for byte: both read
// the statement table. A prepared `SELECT 1` was described as VAR_STRING and executed as
// BIGINT, which drivers that type their buffers from the prepare answer (mysql2, JDBC's
// server-side prepares) decoded wrongly.
TEST_F(Conversation, PreparedStatementsDescribeTheColumnsExecutionSends) {
  auto g = GaplessSequence::open(SequenceSpec{.name = "Invoices", .kind = SequenceKind::kGapless},
                                 GaplessOptions{}, store_, committer_, clock_);
  ASSERT_TRUE(g);
  EXPECT_TRUE(service_.add_gapless(*g));
  login();
  const std::string_view statements[] = {
      "SELECT 1",
      "SELECT 'a', NULL, 1.5, -7 AS minus",
      "SELECT @@version, @@max_allowed_packet, @@autocommit, @@session.sql_mode",
      "SELECT LAST_INSERT_ID(), CONNECTION_ID(), DATABASE(), USER(), NOW()",
      "SELECT NEXTVAL(Tickets64), LASTVAL(Tickets64), SETVAL(Tickets64, 500)",
      "SELECT NEXTVAL(Invoices)",
      "SELECT NEXT 3 VALUES FROM Tickets64",
      "SHOW VARIABLES LIKE 'version%'",
      "SHOW STATUS",
      "SHOW WARNINGS",
      "SHOW ERRORS",
      "SHOW TABLES",
      "SHOW FULL TABLES",
      "SHOW CREATE TABLE Tickets64",
      "SHOW CREATE SEQUENCE Tickets64",
      "SHOW COLUMNS FROM Tickets64",
      "SHOW TABLE STATUS",
      "SHOW DATABASES",
      "SHOW ENGINES",
      "SHOW COLLATION",
      "SHOW CHARACTER SET",
      "SHOW PROCESSLIST",
      "REPLACE INTO Tickets64 (stub) VALUES ('a')",
      "SET @x = 1",
      "BEGIN",
      "COMMIT",
  };
  for (std::string_view sql : statements) {
    std::string prep(1, static_cast<char>(kComStmtPrepare));
    prep += sql;
    auto described = unframe(send(prep).bytes);
    ASSERT_FALSE(described.empty()) << sql;
    ASSERT_EQ(static_cast<std::uint8_t>(described[0].payload[0]), 0x00) << sql;
    const std::string& ok =
        described[0].payload;  // 00, id(4), columns(2), params(2), 00, warnings(2)
    const std::size_t columns =
        static_cast<std::uint8_t>(ok[5]) | (static_cast<std::uint8_t>(ok[6]) << 8);
    ASSERT_EQ(described.size(), 1 + columns) << sql << ": no params, DEPRECATE_EOF";
    std::string exec(1, static_cast<char>(kComStmtExecute));
    exec += ok.substr(1, 4);
    exec += std::string("\x00\x01\x00\x00\x00", 5);  // no cursor, iteration count 1
    auto executed = unframe(send(exec).bytes);
    ASSERT_FALSE(executed.empty()) << sql;
    if (columns == 0) {
      EXPECT_EQ(static_cast<std::uint8_t>(executed[0].payload[0]), 0x00) << sql << ": OK";
      EXPECT_EQ(executed.size(), 1u) << sql;
      continue;
    }
    ASSERT_EQ(static_cast<std::uint8_t>(executed[0].payload[0]), columns) << sql;
    ASSERT_GT(executed.size(), 1 + columns) << sql;
    for (std::size_t i = 0; i < columns; ++i) {
      EXPECT_EQ(testing::to_hex(executed[1 + i].payload), testing::to_hex(described[1 + i].payload))
          << sql << ": column " << i;
    }
  }
}

TEST_F(Conversation, PreparedSelectOneIsDescribedAsBigint) {
  login();
  std::string prep(1, static_cast<char>(kComStmtPrepare));
  auto described = unframe(send(prep + "SELECT 1").bytes);
  ASSERT_EQ(described.size(), 2u);
  auto def = decode_column_definition41(as_bytes(described[1].payload));
  ASSERT_TRUE(def);
  EXPECT_EQ(def->type, kTypeLongLong);
  EXPECT_EQ(def->name, "1");
}

ServerSettings tight_settings() {
  ServerSettings s;
  s.max_allowed_packet = 64 * 1024;
  s.connection_memory_limit = 256 * 1024;
  s.global_connection_memory_limit = 384 * 1024;
  return s;
}

// A connection with a 256 KiB budget and a 64 KiB max_allowed_packet, in a server whose
// connections may keep 384 KiB together.
class TightBudget : public Conversation {
 protected:
  TightBudget() : Conversation(tight_settings()) {}

  std::string prepare(std::string_view sql) {
    std::string p(1, static_cast<char>(kComStmtPrepare));
    p += sql;
    auto packets = unframe(send(p).bytes);
    EXPECT_FALSE(packets.empty());
    if (packets.empty() || packets[0].payload[0] != 0) return {};
    return packets[0].payload.substr(1, 4);
  }
  void long_data(const std::string& id, std::uint16_t param, std::size_t bytes) {
    std::string p(1, static_cast<char>(kComStmtSendLongData));
    p += id;
    p += static_cast<char>(param & 0xFF);
    p += static_cast<char>(param >> 8);
    p += std::string(bytes, 'L');
    auto out = send(p);
    EXPECT_TRUE(out.bytes.empty());  // no reply, by protocol
  }
  ServerConnection::Output execute(const std::string& id, std::size_t params) {
    std::string p(1, static_cast<char>(kComStmtExecute));
    p += id;
    p += std::string("\x00\x01\x00\x00\x00", 5);
    p += std::string((params + 7) / 8, '\0');
    p += '\x01';
    for (std::size_t i = 0; i < params; ++i) p += std::string("\xfb\x00", 2);  // LONG_BLOB
    return send(p);
  }
};

TEST_F(TightBudget, LongDataBeyondTheBudgetFailsTheExecuteAndIsFreed) {
  login();
  const std::string id = prepare("SELECT ?, ?, ?, ?, ?, ?, ?, ?");
  ASSERT_EQ(id.size(), 4u);
  for (std::uint16_t p = 0; p < 8; ++p) long_data(id, p, 60000);  // 480 KB in all
  EXPECT_LE(conn_.session().memory.used(), 256u * 1024);
  const auto out = execute(id, 8);
  auto e = last_err(out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErDaConnLimit);
  EXPECT_EQ(
      e->message.rfind("Connection closed. Connection memory limit 262144 bytes exceeded.", 0), 0u)
      << e->message;
  // The failed long data is gone, and the connection closes after the answer, as in mysqld.
  EXPECT_TRUE(out.close);
  EXPECT_FALSE(conn_.process_next([](ServerConnection::Output) { FAIL() << "answered"; }));
}

TEST_F(TightBudget, LongDataBeyondMaxAllowedPacketFailsTheExecute) {
  login();
  const std::string id = prepare("SELECT ?");
  long_data(id, 0, 40000);
  long_data(id, 0, 40000);  // 80,000 > 65,536: used to be dropped silently
  auto e = last_err(execute(id, 1));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErGeneral);
  EXPECT_EQ(e->message,
            "Parameter of prepared statement which is set through mysql_send_long_data() is "
            "longer than 'max_allowed_packet' bytes");
}

TEST_F(TightBudget, PreparedStatementTextsCountAndCloseGivesThemBack) {
  login();
  const std::string text = "SELECT 1 /*" + std::string(60000, 'x') + "*/";
  const std::string prepare_text = std::string(1, static_cast<char>(kComStmtPrepare)) + text;
  const auto prepare_four = [&] {
    std::vector<std::string> ids;
    for (int i = 0; i < 4; ++i) {
      auto out = send(prepare_text);
      EXPECT_FALSE(last_err(out));
      ids.push_back(unframe(out.bytes)[0].payload.substr(1, 4));
    }
    return ids;
  };
  // Four texts of 60,013 bytes and their metadata fit in 256 KiB; closing gives all back.
  for (const auto& id : prepare_four()) {
    std::string close(1, static_cast<char>(kComStmtClose));
    EXPECT_TRUE(send(close + id).bytes.empty());
  }
  EXPECT_EQ(conn_.session().memory.used(), 0u);
  EXPECT_EQ(executor_.global_memory().used(), 0u);
  // A statement that fails to prepare keeps nothing.
  auto bad = last_err(send(std::string(1, static_cast<char>(kComStmtPrepare)) + "SELEKT 1"));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->error_code, kErParse);
  EXPECT_EQ(conn_.session().memory.used(), 0u);
  // A fifth does not fit: refused, and the connection closes.
  (void)prepare_four();
  const auto out = send(prepare_text);
  auto e = last_err(out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErDaConnLimit);
  EXPECT_TRUE(out.close);
}

TEST_F(TightBudget, AllConnectionsShareTheGlobalBudget) {
  login();
  // Another connection's account holds 200 KiB of the 384 KiB.
  const std::string text = "SELECT 1 /*" + std::string(60000, 'x') + "*/";
  auto other_memory = executor_.connection_memory();
  ASSERT_EQ(other_memory.try_charge(200 * 1024), ConnectionMemory::Verdict::kOk);
  std::optional<ErrPacket> e;
  ServerConnection::Output out;
  int prepared = 0;
  for (; prepared < 10 && !e; ++prepared) {
    out = send(std::string(1, static_cast<char>(kComStmtPrepare)) + text);
    e = last_err(out);
  }
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErDaGlobalConnLimit);
  EXPECT_EQ(prepared, 4);  // 3 fit in the 184 KiB the other connection left
  EXPECT_TRUE(out.close);
}

TEST_F(TightBudget, SessionVariablesCountAgainstTheBudget) {
  login();
  const std::string value(50000, 'v');
  for (int i = 0; i < 5; ++i) {
    ASSERT_FALSE(last_err(send(query("SET @v" + std::to_string(i) + " = '" + value + "'"))));
  }
  EXPECT_EQ(conn_.session().memory.used(), conn_.session().variable_bytes);
  ASSERT_FALSE(last_err(send(query("SET @v0 = NULL, @v1 = NULL"))));
  EXPECT_EQ(conn_.session().memory.used(), conn_.session().variable_bytes);
  ASSERT_FALSE(last_err(send(query("SET @v0 = '" + value + "'"))));
  ASSERT_FALSE(last_err(send(query("SET @v1 = '" + value + "'"))));
  // A sixth of about 50 KB does not fit in 256 KiB: refused, and the connection closes.
  const auto out = send(query("SET @v5 = '" + value + "'"));
  auto e = last_err(out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErDaConnLimit);
  EXPECT_TRUE(out.close);
}

TEST_F(TightBudget, BufferedInputCountsAndPastTheBudgetIsRefusedAndClosed) {
  // Packets received but not yet answered (pipelined, or one in progress) held memory that no
  // budget saw: sixty clients half-way through a 16 MiB packet kept 996 MiB (issue 27.12).
  login();
  const std::string packet = query("SELECT 1 /*" + std::string(60000, 'x') + "*/");
  std::string framed;
  std::uint8_t seq = 0;
  append_frame(framed, packet, seq);
  conn_.feed(framed);
  conn_.feed(framed);
  const auto two = conn_.session().memory.used();
  EXPECT_GT(two, 0u);  // past the fixed 80 KiB every connection may buffer
  for (int i = 0; i < 3; ++i) conn_.feed(framed);
  EXPECT_GT(conn_.session().memory.used(), two);
  conn_.feed(framed);  // six packets: 360 KB, past the 256 KiB budget
  std::optional<ServerConnection::Output> out;
  ASSERT_TRUE(conn_.process_next([&out](ServerConnection::Output o) { out = std::move(o); }));
  ASSERT_TRUE(out);
  auto e = last_err(*out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error_code, kErDaConnLimit);
  EXPECT_TRUE(out->close);
  EXPECT_FALSE(conn_.process_next([](ServerConnection::Output) { FAIL() << "answered"; }));
}

}  // namespace
}  // namespace ticketd::mysql
