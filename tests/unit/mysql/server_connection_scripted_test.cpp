// ServerConnection against a scripted CommandHandler: whole conversations in bytes, with the
// protocol decisions alone under test (no engine, no sockets).
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/handshake.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/mysql/server_connection.h"
#include "tests/support/scripted_command_handler.h"
#include "tests/unit/mysql/conversation_support.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::kModernClient;
using testing::ScriptedCommandHandler;
using testing::to_hex;
using testing::unframe;

class ScriptedConversation : public ::testing::Test {
 protected:
  ScriptedConversation() {
    login_.users["app"] = UserAccount::with_password(AuthPlugin::kNativePassword, "s3cret");
  }

  ServerConnection::Output send(std::string_view payload, std::uint8_t seq = 0) {
    std::string framed;
    append_frame(framed, payload, seq);
    conn_->feed(framed);
    std::promise<ServerConnection::Output> p;
    EXPECT_TRUE(
        conn_->process_next([&p](ServerConnection::Output o) { p.set_value(std::move(o)); }));
    return p.get_future().get();
  }

  void login() {
    auto greeting = unframe(conn_->greeting());
    ASSERT_EQ(greeting.size(), 1u);
    auto hello = decode_handshake_v10(as_bytes(greeting[0].payload));
    ASSERT_TRUE(hello);
    HandshakeResponse41 r;
    r.capabilities = kModernClient;
    r.max_packet_size = 1 << 24;
    r.character_set = kCharsetUtf8mb4GeneralCi;
    r.username = "app";
    r.auth_response = native_password_token("s3cret", hello->auth_plugin_data);
    r.database = "tickets";
    r.auth_plugin_name = std::string(kNativePasswordPlugin);
    std::string payload;
    PacketWriter w(payload);
    encode(r, w);
    auto ok = unframe(send(payload, 1).bytes);
    ASSERT_EQ(ok.size(), 1u);
    EXPECT_EQ(to_hex(ok[0].payload), "00 00 00 02 00 00 00");
    ASSERT_TRUE(conn_->authenticated());
  }

  static std::string query(std::string_view sql) {
    return std::string(1, static_cast<char>(kComQuery)) + std::string(sql);
  }

  ScriptedCommandHandler handler_;
  LoginPolicy login_;
  std::unique_ptr<ServerConnection> conn_ =
      std::make_unique<ServerConnection>(handler_, login_, 9, "127.0.0.1", ConnectionHooks{});
};

TEST_F(ScriptedConversation, AnOkResultIsEncodedByteForByte) {
  handler_.answer("REPLACE INTO T (stub) VALUES ('a')", OkResult{2, 300, 1, {}});
  login();
  auto packets = unframe(send(query("REPLACE INTO T (stub) VALUES ('a')")).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 1);
  // OK, affected rows 2, last insert id 300 (lenenc fc 2c 01), AUTOCOMMIT, 1 warning.
  EXPECT_EQ(to_hex(packets[0].payload), "00 02 fc 2c 01 02 00 01 00");
  EXPECT_EQ(handler_.calls(), std::vector<std::string>{"REPLACE INTO T (stub) VALUES ('a')"});
  EXPECT_EQ(handler_.databases(), std::vector<std::string>{"tickets"});
}

TEST_F(ScriptedConversation, AResultSetIsCountColumnsRowsAndOkAsEof) {
  handler_.answer("SELECT x", ResultSetResult{{Column{"x", ColumnKind::kUnsignedBigint, ""},
                                               Column{"y", ColumnKind::kVarString, ""}},
                                              {{"42", std::nullopt}, {"7", "seven"}}});
  login();
  auto packets = unframe(send(query("SELECT x")).bytes);
  ASSERT_EQ(packets.size(), 6u);  // count, 2 definitions, 2 rows, OK-as-EOF
  EXPECT_EQ(to_hex(packets[0].payload), "02");
  auto x = decode_column_definition41(as_bytes(packets[1].payload));
  ASSERT_TRUE(x);
  EXPECT_EQ(x->name, "x");
  EXPECT_EQ(x->type, kTypeLongLong);
  EXPECT_NE(x->flags & kUnsignedFlag, 0);
  auto y = decode_column_definition41(as_bytes(packets[2].payload));
  ASSERT_TRUE(y);
  EXPECT_EQ(y->type, kTypeVarString);
  EXPECT_EQ(to_hex(packets[3].payload), "02 34 32 fb");              // "42", NULL
  EXPECT_EQ(to_hex(packets[4].payload), "01 37 05 73 65 76 65 6e");  // "7", "seven"
  EXPECT_EQ(to_hex(packets[5].payload), "fe 00 00 02 00 00 00");
  for (std::size_t i = 0; i < packets.size(); ++i) EXPECT_EQ(packets[i].seq, i + 1);
}

TEST_F(ScriptedConversation, AnErrResultIsAnErrPacketAndTheConnectionStays) {
  handler_.answer("SELECT nope", ErrResult{1146, "42S02", "Table 'tickets.nope' doesn't exist"});
  login();
  auto out = send(query("SELECT nope"));
  EXPECT_FALSE(out.close);
  auto packets = unframe(out.bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(to_hex(packets[0].payload.substr(0, 9)), "ff 7a 04 23 34 32 53 30 32");
  EXPECT_EQ(packets[0].payload.substr(9), "Table 'tickets.nope' doesn't exist");
  // Unscripted text gets the handler's 1064; the connection still answers.
  auto err = decode_err_packet(as_bytes(unframe(send(query("SELEKT")).bytes)[0].payload));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error_code, 1064);
}

TEST_F(ScriptedConversation, MultiStatementsReachTheHandlerOneByOneInOrder) {
  handler_.answer("A", OkResult{1, 5, 0, {}});
  handler_.answer("B", OkResult{1, 6, 0, {}});
  login();
  auto packets = unframe(send(query("A; B")).bytes);
  ASSERT_EQ(packets.size(), 2u);
  auto first = decode_ok_packet(as_bytes(packets[0].payload), kModernClient);
  auto second = decode_ok_packet(as_bytes(packets[1].payload), kModernClient);
  ASSERT_TRUE(first && second);
  EXPECT_NE(first->status_flags & kServerMoreResultsExists, 0);
  EXPECT_EQ(second->status_flags & kServerMoreResultsExists, 0);
  EXPECT_EQ(first->last_insert_id, 5u);
  EXPECT_EQ(second->last_insert_id, 6u);
  EXPECT_EQ(handler_.calls(), (std::vector<std::string>{"A", "B"}));
}

TEST_F(ScriptedConversation, AnAnswerFromAnotherThreadCompletesTheCommand) {
  handler_.defer("SLOW");
  login();
  std::string framed;
  std::uint8_t seq = 0;
  append_frame(framed, query("SLOW"), seq);
  conn_->feed(framed);
  std::promise<ServerConnection::Output> p;
  ASSERT_TRUE(conn_->process_next([&p](ServerConnection::Output o) { p.set_value(std::move(o)); }));
  auto f = p.get_future();
  // Nothing is sent before the handler answers.
  EXPECT_EQ(f.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  std::thread committer([this] {
    EXPECT_TRUE(handler_.complete_deferred(OkResult{1, 77, 0, {}}));
  });
  committer.join();
  auto packets = unframe(f.get().bytes);
  ASSERT_EQ(packets.size(), 1u);
  auto ok = decode_ok_packet(as_bytes(packets[0].payload), kModernClient);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->last_insert_id, 77u);
}

TEST_F(ScriptedConversation, PingNeedsNoHandlerResetAndTheEndReleaseTheSession) {
  login();
  auto ping = unframe(send(std::string(1, static_cast<char>(kComPing))).bytes);
  ASSERT_EQ(ping.size(), 1u);
  EXPECT_EQ(to_hex(ping[0].payload), "00 00 00 02 00 00 00");
  EXPECT_TRUE(handler_.calls().empty());
  auto reset = unframe(send(std::string(1, static_cast<char>(kComResetConnection))).bytes);
  ASSERT_EQ(reset.size(), 1u);
  EXPECT_EQ(static_cast<std::uint8_t>(reset[0].payload[0]), 0x00);
  EXPECT_EQ(handler_.sessions_ended(), 1);
  auto quit = send(std::string(1, static_cast<char>(kComQuit)));
  EXPECT_TRUE(quit.close);
  EXPECT_TRUE(quit.bytes.empty());
  conn_.reset();  // the connection ends: whatever the session holds is released
  EXPECT_EQ(handler_.sessions_ended(), 2);
}

TEST_F(ScriptedConversation, InitDbGoesToTheHandlerAsAStatement) {
  login();
  std::string payload(1, static_cast<char>(kComInitDb));
  payload += "tickets";
  auto ok = unframe(send(payload).bytes);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(static_cast<std::uint8_t>(ok[0].payload[0]), 0x00);
  ASSERT_EQ(handler_.calls().size(), 1u);
  EXPECT_EQ(handler_.calls()[0].front(), '<');  // a Statement, not text
}

}  // namespace
}  // namespace ticketd::mysql
