// A whole ServerConnection over the engine on the in-memory store, driven by a script of
// packets: login, queries, prepared statements, long data, resets, broken framing.
//
// Input: records [op][u24 length][bytes], by op % 4:
//   0  a payload, framed with the sequence id a client would use next;
//   1  raw bytes, fed as they are (any framing, sequence ids, several packets at once);
//   2  a login: the bytes decoded as a HandshakeResponse41 get the right token for their user
//      (for "app" and "root", see mysql_engine.h) and are framed after the greeting;
//   3  the right token for the last login's user, as the answer to an auth switch.
// After each record every complete packet is answered.
//
// Invariants: exactly one answer per complete packet (a mirror FrameDecoder fed the same bytes
// says which packets are complete), well framed and numbered after the packet it answers;
// before the login an answer is OK, ERR or an auth switch, a refusal closes; after it, every
// answer is what a client can walk for its command (results with MORE_RESULTS chaining, result
// sets, prepare responses, field lists, nothing for COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA),
// and only COM_QUIT or broken framing closes the connection.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "server/mysql/protocol/auth.h"
#include "server/mysql/protocol/constants.h"
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
using ticketd::fuzz::check_err;
using ticketd::fuzz::Input;
using ticketd::fuzz::unframe_checked;

class Driver {
 public:
  Driver()
      : conn_(engine_.executor, engine_.login, 7, "127.0.0.1"),
        mirror_(ServerConnection::kPreAuthMaxPacket) {
    const auto packets = unframe_checked(conn_.greeting(), 0);
    FUZZ_CHECK(packets.size() == 1);
    auto hello = decode_handshake_v10(as_bytes(packets[0]));
    FUZZ_CHECK(hello.has_value());
    server_caps_ = hello->capabilities;
    scramble_ = hello->auth_plugin_data;
  }

  // False once the connection is closed.
  bool run(std::uint8_t op, std::string_view bytes) {
    switch (op % 4) {
      case 0:
        send(bytes);
        break;
      case 1:
        feed(bytes);
        break;
      case 2:
        login(bytes);
        break;
      case 3: {
        const std::string_view* password = ticketd::fuzz::password_of(last_user_);
        send(native_password_token(password ? *password : "", scramble_));
        break;
      }
    }
    return answer_all();
  }

 private:
  void feed(std::string_view bytes) {
    conn_.feed(bytes);
    mirror_.feed(bytes);
  }

  void send(std::string_view payload) {
    std::string framed;
    std::uint8_t seq = client_seq_;
    append_frame(framed, payload, seq);
    feed(framed);
  }

  void login(std::string_view bytes) {
    std::string payload(bytes);
    auto decoded = decode_handshake_response(as_bytes(payload));
    if (decoded && std::holds_alternative<HandshakeResponse41>(*decoded)) {
      auto& r = std::get<HandshakeResponse41>(*decoded);
      last_user_ = r.username;
      const std::string_view* password = ticketd::fuzz::password_of(r.username);
      r.auth_response = native_password_token(password ? *password : "", scramble_);
      payload.clear();
      PacketWriter w(payload);
      encode(r, w);
    }
    std::string framed;
    std::uint8_t seq = 1;
    append_frame(framed, payload, seq);
    feed(framed);
  }

  bool answer_all() {
    for (;;) {
      const bool was_authenticated = conn_.authenticated();
      auto frame = mirror_.next();
      auto out = answer_next(conn_);
      if (frame && !frame->has_value()) {
        FUZZ_CHECK(!out.has_value());
        return true;
      }
      FUZZ_CHECK(out.has_value());
      if (!frame) {
        // Oversized or out of order: one ERR continuing the client's numbering, then closed.
        const auto packets =
            unframe_checked(out->bytes, static_cast<std::uint8_t>(mirror_.error_sequence_id() + 1));
        FUZZ_CHECK(packets.size() == 1);
        check_err(packets[0]);
        FUZZ_CHECK(out->close);
        return false;
      }
      const Frame& f = **frame;
      const auto packets =
          unframe_checked(out->bytes, static_cast<std::uint8_t>(f.last_sequence_id + 1));
      if (!was_authenticated) {
        if (!check_connection_phase(f.payload, packets, *out)) return false;
      } else if (!check_command(f.payload, packets, *out)) {
        return false;
      }
      if (!was_authenticated && conn_.authenticated()) {
        mirror_.set_max_allowed_packet(engine_.settings.max_allowed_packet);
      }
      client_seq_ = conn_.authenticated() ? 0 : static_cast<std::uint8_t>(f.last_sequence_id + 2);
    }
  }

  bool check_connection_phase(std::string_view payload, const std::vector<std::string>& packets,
                              const ServerConnection::Output& out) {
    FUZZ_CHECK(packets.size() == 1 && !packets[0].empty());
    if (!awaiting_switch_) {
      auto decoded = decode_handshake_response(as_bytes(payload));
      if (decoded && std::holds_alternative<HandshakeResponse41>(*decoded)) {
        client_caps_ = std::get<HandshakeResponse41>(*decoded).capabilities & server_caps_;
      }
    }
    const auto header = static_cast<std::uint8_t>(packets[0][0]);
    if (header == kErrHeader) {
      check_err(packets[0]);
      FUZZ_CHECK(out.close && !conn_.authenticated());
      return false;
    }
    FUZZ_CHECK(!out.close);
    if (header == kOkHeader) {
      FUZZ_CHECK(conn_.authenticated());
      FUZZ_CHECK(decode_ok_packet(as_bytes(packets[0]), client_caps_).has_value());
      return true;
    }
    // An auth switch answers a handshake response that asked for another plugin.
    FUZZ_CHECK(!awaiting_switch_);
    auto sw = decode_auth_switch_request(as_bytes(packets[0]));
    FUZZ_CHECK(sw && sw->plugin_name == kNativePasswordPlugin);
    FUZZ_CHECK(!conn_.authenticated());
    awaiting_switch_ = true;
    return true;
  }

  bool check_command(std::string_view payload, const std::vector<std::string>& packets,
                     const ServerConnection::Output& out) {
    if (payload.empty()) {
      FUZZ_CHECK(packets.size() == 1);
      check_err(packets[0]);
      FUZZ_CHECK(!out.close);
      return true;
    }
    const auto command = static_cast<std::uint8_t>(payload[0]);
    if (command == kComQuit) {
      FUZZ_CHECK(out.close && out.bytes.empty());
      return false;
    }
    FUZZ_CHECK(!out.close);
    switch (command) {
      case kComStmtClose:
      case kComStmtSendLongData:
        FUZZ_CHECK(packets.empty());
        break;
      case kComPing:
      case kComResetConnection:
        FUZZ_CHECK(packets.size() == 1 && packets[0][0] == kOkHeader);
        break;
      case kComInitDb:
      case kComQuery:
        ticketd::fuzz::check_results(packets, client_caps_, false);
        break;
      case kComStmtExecute:
        ticketd::fuzz::check_results(packets, client_caps_, true);
        break;
      case kComStmtPrepare:
        ticketd::fuzz::check_prepare_reply(packets, client_caps_);
        break;
      case kComFieldList:
        ticketd::fuzz::check_field_list_reply(packets, client_caps_);
        break;
      case kComStatistics:
        FUZZ_CHECK(packets.size() == 1);
        FUZZ_CHECK(static_cast<std::uint8_t>(packets[0][0]) != kErrHeader);
        break;
      case kComSetOption:
      case kComStmtReset:
        FUZZ_CHECK(packets.size() == 1 && !packets[0].empty());
        if (static_cast<std::uint8_t>(packets[0][0]) == kErrHeader) {
          check_err(packets[0]);
        } else {
          FUZZ_CHECK(decode_ok_packet(as_bytes(packets[0]), client_caps_).has_value());
        }
        break;
      default:
        FUZZ_CHECK(packets.size() == 1);
        check_err(packets[0]);
        break;
    }
    return true;
  }

  ticketd::fuzz::MysqlEngine engine_;
  ServerConnection conn_;
  FrameDecoder mirror_;
  Capabilities server_caps_ = 0;
  Capabilities client_caps_ = 0;
  Scramble scramble_{};
  std::string last_user_;
  bool awaiting_switch_ = false;
  std::uint8_t client_seq_ = 1;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  Driver driver;
  while (!in.empty()) {
    const std::uint8_t op = in.u8();
    if (!driver.run(op, in.piece24())) break;
  }
  return 0;
}
