// The connection phase of ServerConnection: greeting, HandshakeResponse41, the switch to
// mysql_native_password, and the login decision.
//
// Input: [flags][response: u24 length + bytes][switch reply: u24 length + bytes]. Flag bit 0
// puts the right token for the response's user into it (when it decodes), so that logins can
// succeed; bit 1 does the same for the auth switch reply; bit 2 feeds the response in two
// pieces; bit 3 takes the response's sequence id from the next input byte.
//
// Invariants: the greeting decodes, offers no TLS, and has a 20-byte scramble of 7-bit bytes
// without NUL or '$'; every answer is one well-framed packet numbered after the client's; the
// login succeeds exactly when the user is known, the token is the one mysql_native_password
// makes from the password and this connection's scramble (no token for an empty password),
// and the database is absent, empty, `tickets` or `information_schema`; a refusal closes the
// connection, a wrong password is ERR 1045 naming the user and whether a password was used,
// and the failure hook hears of it; a client asking for another plugin is switched to
// mysql_native_password with the same scramble; after a login, COM_PING answers OK.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/mysql/protocol/auth.h"
#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/handshake.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/mysql/server_connection.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/mysql_engine.h"
#include "tests/fuzz/mysql_reply_check.h"

namespace {

using namespace ::ticketd::mysql;
using ticketd::fuzz::answer_next;
using ticketd::fuzz::Input;
using ticketd::fuzz::unframe_checked;

// The one packet of an answer, numbered `seq`.
std::string single_packet(const ServerConnection::Output& out, std::uint8_t seq) {
  auto packets = unframe_checked(out.bytes, seq);
  FUZZ_CHECK(packets.size() == 1);
  FUZZ_CHECK(!packets[0].empty());
  return packets[0];
}

bool right_token(std::string_view user, const Scramble& scramble, std::string_view token) {
  const std::string_view* password = ticketd::fuzz::password_of(user);
  if (password == nullptr) return false;
  if (password->empty()) return token.empty();
  return token == native_password_token(*password, scramble);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t flags = in.u8();
  std::string response(in.piece24());
  std::string switch_reply(in.piece24());
  const std::uint8_t response_seq = (flags & 8) ? in.u8() : 1;
  const std::size_t split_at = in.u16();

  ticketd::fuzz::MysqlEngine engine;
  std::vector<std::string> failed_users;
  ServerConnection conn(
      engine.executor, engine.login, 7, "127.0.0.1",
      ConnectionHooks{[&failed_users](std::string_view user) { failed_users.emplace_back(user); },
                      {}});

  const auto greeting_packets = unframe_checked(conn.greeting(), 0);
  FUZZ_CHECK(greeting_packets.size() == 1);
  auto hello = decode_handshake_v10(as_bytes(greeting_packets[0]));
  FUZZ_CHECK(hello.has_value());
  FUZZ_CHECK((hello->capabilities & kClientSsl) == 0);
  FUZZ_CHECK(hello->connection_id == 7);
  FUZZ_CHECK(hello->auth_plugin_name == kNativePasswordPlugin);
  for (const auto b : hello->auth_plugin_data) FUZZ_CHECK(b != 0 && b != '$' && b < 0x80);
  const Scramble scramble = hello->auth_plugin_data;

  auto decoded = decode_handshake_response(as_bytes(response));
  if ((flags & 1) && decoded && std::holds_alternative<HandshakeResponse41>(*decoded)) {
    auto& r = std::get<HandshakeResponse41>(*decoded);
    const std::string_view* password = ticketd::fuzz::password_of(r.username);
    r.auth_response = native_password_token(password ? *password : "", scramble);
    response.clear();
    PacketWriter w(response);
    encode(r, w);
    decoded = decode_handshake_response(as_bytes(response));
  }

  std::string framed;
  std::uint8_t seq = response_seq;
  append_frame(framed, response, seq);
  const std::size_t cut = std::min(split_at, framed.size());
  conn.feed(std::string_view(framed).substr(0, cut));
  auto out = answer_next(conn);
  if (!out) {
    conn.feed(std::string_view(framed).substr(cut));
    out = answer_next(conn);
  }
  FUZZ_CHECK(out.has_value());
  std::uint8_t next_seq = static_cast<std::uint8_t>(response_seq + 1);
  if (response.size() > ServerConnection::kPreAuthMaxPacket) {
    const std::string p = single_packet(*out, next_seq);
    auto err = decode_err_packet(as_bytes(p));
    FUZZ_CHECK(err && err->error_code == 1153);
    FUZZ_CHECK(out->close && !conn.authenticated());
    return 0;
  }
  const std::string first = single_packet(*out, next_seq);
  ++next_seq;

  const auto* r = decoded ? std::get_if<HandshakeResponse41>(&*decoded) : nullptr;
  if (r == nullptr) {
    // Undecodable, pre-4.1, or an SSLRequest (no TLS is offered): refused.
    auto err = decode_err_packet(as_bytes(first));
    FUZZ_CHECK(err && err->error_code == 1043);
    FUZZ_CHECK(out->close && !conn.authenticated());
    FUZZ_CHECK(failed_users.empty());
    return 0;
  }

  std::string token = r->auth_response;
  const bool native = !r->auth_plugin_name || r->auth_plugin_name->empty() ||
                      *r->auth_plugin_name == kNativePasswordPlugin;
  std::string reply_packet = first;
  if (!native) {
    // Switched to mysql_native_password, with the greeting's scramble and mysqld's NUL.
    auto sw = decode_auth_switch_request(as_bytes(first));
    FUZZ_CHECK(sw.has_value());
    FUZZ_CHECK(sw->plugin_name == kNativePasswordPlugin);
    FUZZ_CHECK(sw->plugin_data == std::string(as_chars(scramble)) + '\0');
    FUZZ_CHECK(!out->close && !conn.authenticated());
    if (flags & 2) {
      const std::string_view* password = ticketd::fuzz::password_of(r->username);
      switch_reply = native_password_token(password ? *password : "", scramble);
    }
    if (switch_reply.size() > ServerConnection::kPreAuthMaxPacket) switch_reply.resize(100);
    token = switch_reply;
    std::string framed_reply;
    std::uint8_t reply_seq = next_seq;
    append_frame(framed_reply, switch_reply, reply_seq);
    conn.feed(framed_reply);
    out = answer_next(conn);
    FUZZ_CHECK(out.has_value());
    next_seq = static_cast<std::uint8_t>(next_seq + 1);
    reply_packet = single_packet(*out, next_seq);
    ++next_seq;
  }

  const bool password_ok = right_token(r->username, scramble, token);
  const bool database_ok = !r->database || r->database->empty() || *r->database == "tickets" ||
                           *r->database == "information_schema";
  if (password_ok && database_ok) {
    FUZZ_CHECK(static_cast<std::uint8_t>(reply_packet[0]) == kOkHeader);
    FUZZ_CHECK(decode_ok_packet(as_bytes(reply_packet), r->capabilities).has_value());
    FUZZ_CHECK(!out->close && conn.authenticated());
    FUZZ_CHECK(conn.session().user == r->username);
    FUZZ_CHECK(failed_users.empty());
    // The command phase numbers from 0 again.
    std::string ping;
    std::uint8_t ping_seq = 0;
    append_frame(ping, std::string(1, static_cast<char>(kComPing)), ping_seq);
    conn.feed(ping);
    out = answer_next(conn);
    FUZZ_CHECK(out.has_value() && !out->close);
    const std::string pong = single_packet(*out, 1);
    FUZZ_CHECK(static_cast<std::uint8_t>(pong[0]) == kOkHeader);
    return 0;
  }
  auto err = decode_err_packet(as_bytes(reply_packet));
  FUZZ_CHECK(err.has_value());
  FUZZ_CHECK(out->close && !conn.authenticated());
  if (!password_ok) {
    FUZZ_CHECK(err->error_code == 1045);
    FUZZ_CHECK(err->sql_state == "28000");
    const std::string_view used = token.empty() ? "(using password: NO)" : "(using password: YES)";
    FUZZ_CHECK(err->message.ends_with(used));
    FUZZ_CHECK(failed_users.size() == 1 && failed_users[0] == r->username);
  } else {
    FUZZ_CHECK(err->error_code == 1049);
    FUZZ_CHECK(failed_users.empty());
  }
  // A closed connection answers nothing more.
  conn.feed(std::string_view("\x01\x00\x00\x00\x0e", 5));
  FUZZ_CHECK(!answer_next(conn).has_value());
  return 0;
}
