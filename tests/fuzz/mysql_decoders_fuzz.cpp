// Every decoder of server/mysql/protocol on arbitrary payloads, and the encoders on values built
// from the input.
//
// Input: a selector byte (which codec), then what that codec reads (see each case). Invariants
// beyond "no crash, no read past the end" (the payload is the fuzzer's exactly sized buffer):
// - where the codec has an encoder, decode -> encode -> decode gives the same value, and every
//   strict prefix of a canonical greeting fails to decode;
// - the command decoders accept exactly the payloads that start with their command byte;
// - COM_STMT_EXECUTE yields one value per placeholder and keeps the remembered parameter types
//   untouched when it fails;
// - a binary value read, written back through write_binary_value and read again is a fixed
//   point (integers and non-NaN floats byte for byte);
// - result sets and prepare responses built from input columns and rows are walkable by a
//   client (tests/fuzz/mysql_reply_check.h) and give the columns and text values back;
// - the sticky errors of PacketReader: after the first failed read every read is empty;
// - verify_native_password accepts the token native_password_token makes, and nothing else.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "server/mysql/protocol/auth.h"
#include "server/mysql/protocol/binary_value.h"
#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/commands.h"
#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/handshake.h"
#include "server/mysql/protocol/packet_reader.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/mysql/protocol/prepared_statement.h"
#include "server/mysql/protocol/result_set.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/mysql_reply_check.h"

namespace {

using namespace ::ticketd::mysql;
using ticketd::fuzz::Input;

ByteView bytes_of(std::string_view s) { return as_bytes(s); }

// Every strict prefix of `payload` fails (each in its own exactly sized buffer); only for small
// payloads, the check is quadratic.
template <class Decode>
void every_strict_prefix_fails(const std::string& payload, Decode decode) {
  if (payload.size() > 300) return;
  for (std::size_t n = 0; n < payload.size(); ++n) {
    const std::vector<std::uint8_t> prefix(payload.begin(), payload.begin() + n);
    FUZZ_CHECK(!decode(ByteView(prefix.data(), prefix.size())).has_value());
  }
}

void handshake_response(std::string_view payload) {
  auto decoded = decode_handshake_response(bytes_of(payload));
  if (!decoded) return;
  if (const auto* ssl = std::get_if<SslRequest>(&*decoded)) {
    FUZZ_CHECK(payload.size() == 32 && (ssl->capabilities & kClientSsl));
    const std::string again = to_payload(*ssl);
    auto back = decode_handshake_response(bytes_of(again));
    FUZZ_CHECK(back && std::holds_alternative<SslRequest>(*back));
    FUZZ_CHECK(std::get<SslRequest>(*back) == *ssl);
    return;
  }
  const auto& r = std::get<HandshakeResponse41>(*decoded);
  FUZZ_CHECK(r.capabilities & kClientProtocol41);
  // A flagged optional field the packet ended before comes back absent. The (client-side)
  // encoder then writes the next flagged field in its place, which any decoder, mysqld's too,
  // reads as the absent one: no round trip for such values.
  const Capabilities caps = r.capabilities;
  const bool db_gap = (caps & kClientConnectWithDb) && !r.database;
  const bool plugin_gap = (caps & kClientPluginAuth) && !r.auth_plugin_name;
  if ((db_gap &&
       ((caps & kClientPluginAuth && r.auth_plugin_name) || caps & kClientConnectAttrs)) ||
      (plugin_gap && caps & kClientConnectAttrs)) {
    return;
  }
  const std::string again = to_payload(r);
  auto back = decode_handshake_response(bytes_of(again));
  FUZZ_CHECK(back && std::holds_alternative<HandshakeResponse41>(*back));
  FUZZ_CHECK(std::get<HandshakeResponse41>(*back) == r);
}

void handshake_v10(std::string_view payload) {
  auto g = decode_handshake_v10(bytes_of(payload));
  if (!g) return;
  const std::string again = to_payload(*g);
  auto back = decode_handshake_v10(bytes_of(again));
  FUZZ_CHECK(back && *back == *g);
  every_strict_prefix_fails(again, [](ByteView b) { return decode_handshake_v10(b); });
}

void auth_switch(std::string_view payload) {
  auto s = decode_auth_switch_request(bytes_of(payload));
  if (s) {
    const std::string again = to_payload(*s);
    FUZZ_CHECK(again == payload);  // the plugin name ends at its NUL, the rest is data
  }
  FUZZ_CHECK(decode_auth_switch_response(bytes_of(payload)) == payload);
}

void ok_packet(Input& in) {
  const Capabilities caps = in.u32();
  const std::string payload(in.rest());
  auto ok = decode_ok_packet(bytes_of(payload), caps);
  if (!ok) return;
  std::string again;
  PacketWriter w(again);
  if (static_cast<std::uint8_t>(payload[0]) == kEofHeader) {
    encode_ok_as_eof(*ok, caps, w);
  } else {
    encode(*ok, caps, w);
  }
  auto back = decode_ok_packet(bytes_of(again), caps);
  FUZZ_CHECK(back && *back == *ok);
  FUZZ_CHECK(again.size() <= payload.size());  // the shortest lenenc forms
}

void err_packet(std::string_view payload) {
  auto err = decode_err_packet(bytes_of(payload));
  if (!err) return;
  // The SQLSTATE is on the wire only with CLIENT_PROTOCOL_41, and then always 5 characters.
  const Capabilities caps = err->sql_state.empty() ? 0 : kClientProtocol41;
  FUZZ_CHECK(err->sql_state.empty() || err->sql_state.size() == 5);
  const std::string again = to_payload(*err, caps);
  FUZZ_CHECK(again == payload);
}

void eof_packet(Input& in) {
  const Capabilities caps = in.u32();
  const std::string payload(in.rest());
  auto eof = decode_eof_packet(bytes_of(payload), caps);
  if (!eof) return;
  const std::string again = to_payload(*eof, caps);
  auto back = decode_eof_packet(bytes_of(again), caps);
  FUZZ_CHECK(back && *back == *eof);
  FUZZ_CHECK(is_eof_packet(bytes_of(again)));
}

void column_definition(std::string_view payload) {
  auto c = decode_column_definition41(bytes_of(payload));
  if (!c) return;
  const std::string again = to_payload(*c);
  auto back = decode_column_definition41(bytes_of(again));
  FUZZ_CHECK(back && *back == *c);
  every_strict_prefix_fails(again, [](ByteView b) { return decode_column_definition41(b); });
}

// Each decoder accepts a payload only when it starts with its own command byte.
void commands(std::string_view payload) {
  const int command = payload.empty() ? -1 : static_cast<std::uint8_t>(payload[0]);
  const ByteView b = bytes_of(payload);
  auto query = decode_com_query(b);
  FUZZ_CHECK(query.has_value() == (command == kComQuery));
  if (query) FUZZ_CHECK(query->query == payload.substr(1));
  auto init = decode_com_init_db(b);
  FUZZ_CHECK(init.has_value() == (command == kComInitDb));
  if (init) FUZZ_CHECK(init->schema == payload.substr(1));
  auto fields = decode_com_field_list(b);
  if (fields) {
    FUZZ_CHECK(command == kComFieldList);
    FUZZ_CHECK(fields->table.size() + 1 + fields->wildcard.size() + 1 == payload.size());
  }
  auto option = decode_com_set_option(b);
  if (option) FUZZ_CHECK(command == kComSetOption && payload.size() >= 3);
  auto prepare = decode_stmt_prepare(b);
  FUZZ_CHECK(prepare.has_value() == (command == kComStmtPrepare));
  if (prepare) FUZZ_CHECK(prepare->query == payload.substr(1));
  auto close = decode_stmt_close(b);
  FUZZ_CHECK(close.has_value() == (command == kComStmtClose && payload.size() >= 5));
  auto reset = decode_stmt_reset(b);
  FUZZ_CHECK(reset.has_value() == (command == kComStmtReset && payload.size() >= 5));
  auto data = decode_stmt_send_long_data(b);
  FUZZ_CHECK(data.has_value() == (command == kComStmtSendLongData && payload.size() >= 7));
  if (data) FUZZ_CHECK(data->data == payload.substr(7));
}

void stmt_execute(Input& in) {
  const std::uint16_t num_params = in.u16() % 2048;
  std::vector<std::uint16_t> remembered(in.u8() % 8 == 0 ? 0 : num_params);
  for (auto& t : remembered) t = in.u16();
  std::vector<std::optional<std::string>> long_data(in.u8() % 4 == 0 ? num_params : 0);
  for (auto& d : long_data) {
    if (in.u8() & 1) d = std::string(in.bytes(in.u8()));
  }
  const std::string payload(in.rest());
  const auto before = remembered;
  auto e = decode_stmt_execute(bytes_of(payload), num_params, remembered, long_data);
  if (!e) {
    FUZZ_CHECK(remembered == before);
    return;
  }
  FUZZ_CHECK(!payload.empty() && static_cast<std::uint8_t>(payload[0]) == kComStmtExecute);
  FUZZ_CHECK(e->params.size() == num_params);
  if (num_params == 0) return;
  // The NULL bitmap (offset 0) starts right after the 10-byte header; then the bound flag.
  const std::size_t bound_at = 10 + (num_params + 7) / 8;
  if (payload[bound_at] != 0) FUZZ_CHECK(remembered.size() == num_params);
  for (std::size_t i = 0; i < num_params; ++i) {
    const bool null_bit = (static_cast<std::uint8_t>(payload[10 + i / 8]) >> (i % 8)) & 1;
    if (null_bit) FUZZ_CHECK(!e->params[i].has_value());
    if (!null_bit && i < long_data.size() && long_data[i]) {
      FUZZ_CHECK(e->params[i] && std::get<std::string>(*e->params[i]) == *long_data[i]);
    }
    (void)to_sql_literal(e->params[i]);
  }
}

// The text form write_binary_value takes for a value read_binary_value produced.
std::string as_text(const ParamValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return std::to_string(*u);
  return to_sql_literal(v);  // floats: the shortest round-trip form
}

bool is_nan(const ParamValue& v) {
  if (const auto* f = std::get_if<float>(&v)) return std::isnan(*f);
  if (const auto* d = std::get_if<double>(&v)) return std::isnan(*d);
  return false;
}

void binary_value(Input& in) {
  const std::uint16_t type = in.u16();
  const std::string payload(in.rest());
  PacketReader r(bytes_of(payload));
  const ParamValue v = read_binary_value(r, type);
  if (!r.ok()) return;
  const std::string consumed = payload.substr(0, r.position());
  ColumnDefinition41 column;
  column.type = static_cast<std::uint8_t>(type & 0xFF);
  column.flags = (type & kParamUnsignedFlag) ? kUnsignedFlag : 0;
  // Write, read: the second read is the canonical value, which must then be a fixed point.
  auto rewrite = [&](const ParamValue& value, std::string& wire) -> std::optional<ParamValue> {
    wire.clear();
    PacketWriter w(wire);
    try {
      write_binary_value(column, as_text(value), w);
    } catch (const std::invalid_argument&) {
      return std::nullopt;  // TIME beyond 9999 hours: read_time's text is wider than a row's
    }
    PacketReader back(bytes_of(wire));
    ParamValue out = read_binary_value(back, type);
    FUZZ_CHECK(back.ok() && back.empty());
    return out;
  };
  std::string wire1;
  std::string wire2;
  const auto once = rewrite(v, wire1);
  if (!once) {
    FUZZ_CHECK(column.type == kTypeTime || is_nan(v));
    return;
  }
  const auto twice = rewrite(*once, wire2);
  FUZZ_CHECK(twice.has_value());
  FUZZ_CHECK(wire1 == wire2);
  const bool integer =
      std::holds_alternative<std::int64_t>(v) || std::holds_alternative<std::uint64_t>(v);
  const bool floating = std::holds_alternative<float>(v) || std::holds_alternative<double>(v);
  if (integer || (floating && !is_nan(v))) {
    FUZZ_CHECK(wire1 == consumed);
    FUZZ_CHECK(*once == v);
  }
  if (const auto* s = std::get_if<std::string>(&v);
      s && column.type != kTypeDate && column.type != kTypeDatetime &&
      column.type != kTypeTimestamp && column.type != kTypeTime) {
    FUZZ_CHECK(std::get<std::string>(*once) == *s);
  }
}

constexpr std::uint8_t kColumnTypes[] = {kTypeTiny,     kTypeShort,     kTypeLong, kTypeLongLong,
                                         kTypeFloat,    kTypeDouble,    kTypeNull, kTypeDate,
                                         kTypeDatetime, kTypeTime,      kTypeYear, kTypeVarString,
                                         kTypeBlob,     kTypeNewDecimal};

// A result set and a prepare response from input columns and rows, walked as a client would.
void result_set(Input& in) {
  const Capabilities caps = in.u32() | kClientProtocol41;
  const bool binary = in.u8() & 1;
  const std::uint16_t status = in.u16() & ~kServerMoreResultsExists;
  const std::size_t ncols = 1 + in.u8() % 16;
  std::vector<ColumnDefinition41> columns(ncols);
  for (auto& c : columns) {
    c.name = std::string(in.bytes(in.u8() % 32));
    c.table = std::string(in.bytes(in.u8() % 8));
    c.type = kColumnTypes[in.u8() % std::size(kColumnTypes)];
    c.flags = in.u16();
    c.column_length = in.u32();
  }
  Rows rows(in.u8() % 32);
  for (auto& row : rows) {
    row.resize(ncols);
    for (std::size_t c = 0; c < ncols; ++c) {
      // A NULL-typed column holds only NULLs (what result_columns declares kNull).
      if (in.u8() % 5 != 0 && columns[c].type != kTypeNull) {
        row[c] = std::string(in.bytes(in.u8() % 24));
      }
    }
  }
  std::vector<std::string> payloads;
  try {
    payloads = encode_result_set(columns, rows, binary, caps, status);
  } catch (const std::invalid_argument&) {
    FUZZ_CHECK(binary);  // a value that does not fit its column's binary type
    return;
  }
  ticketd::fuzz::check_results(payloads, caps, binary);
  for (std::size_t c = 0; c < ncols; ++c) {
    auto def = decode_column_definition41(bytes_of(payloads[1 + c]));
    FUZZ_CHECK(def && *def == columns[c]);
  }
  const std::size_t first_row = 1 + ncols + ((caps & kClientDeprecateEof) ? 0 : 1);
  FUZZ_CHECK(payloads.size() == first_row + rows.size() + 1);
  if (!binary) {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      std::string expected;
      PacketWriter w(expected);
      encode_text_row(rows[k], w);
      FUZZ_CHECK(payloads[first_row + k] == expected);
    }
  }
  // The same payloads framed straight into one buffer.
  std::string framed;
  std::uint8_t seq = 1;
  std::vector<std::string> definitions;
  for (const auto& c : columns) definitions.push_back(to_payload(c));
  std::string scratch;
  append_result_set(framed, seq, columns, definitions, rows, binary, caps, status, scratch);
  FUZZ_CHECK(ticketd::fuzz::unframe_checked(framed, 1) == payloads);
  FUZZ_CHECK(seq == static_cast<std::uint8_t>(1 + payloads.size()));

  const auto prepare =
      encode_prepare_response(7, static_cast<std::uint16_t>(rows.size()), columns, caps, status);
  ticketd::fuzz::check_prepare_reply(prepare, caps);
}

// PacketReader's sticky errors: the first failing read moves to the end, every later read is
// empty or zero, and the cursor never leaves the payload.
void packet_reader(Input& in) {
  const std::string ops(in.bytes(in.u8()));
  const std::string payload(in.rest());
  PacketReader r(bytes_of(payload));
  for (const char op : ops) {
    const bool was_ok = r.ok();
    std::size_t got = 0;
    switch (static_cast<std::uint8_t>(op) % 12) {
      case 0:
        got = r.u8();
        break;
      case 1:
        got = r.u16();
        break;
      case 2:
        got = r.u24();
        break;
      case 3:
        got = r.u32();
        break;
      case 4:
        got = static_cast<std::size_t>(r.u64() != 0);
        break;
      case 5:
        got = static_cast<std::size_t>(r.lenenc_int() != 0);
        break;
      case 6:
        got = r.lenenc_string().size();
        break;
      case 7:
        got = r.null_string().size();
        break;
      case 8:
        got = r.fixed_string(static_cast<std::uint8_t>(op) >> 4).size();
        break;
      case 9:
        got = r.bytes(static_cast<std::uint8_t>(op) >> 4).size();
        break;
      case 10:
        got = r.peek();
        break;
      case 11:
        r.expect_u8(static_cast<std::uint8_t>(op));
        break;
    }
    FUZZ_CHECK(r.position() <= payload.size());
    FUZZ_CHECK(r.position() + r.remaining() == payload.size());
    if (!was_ok) FUZZ_CHECK(got == 0 && !r.ok());
    if (!r.ok()) FUZZ_CHECK(r.empty());
  }
  const std::size_t left = r.remaining();
  FUZZ_CHECK(r.rest().size() == left);
}

void native_password(Input& in) {
  Scramble scramble{};
  for (auto& b : scramble) b = in.u8();
  const std::string password(in.bytes(in.u8() % 64));
  const std::string token(in.rest());
  const Sha1Digest stored = double_sha1(password);
  const std::string right = native_password_token(password, scramble);
  FUZZ_CHECK(verify_native_password(stored, scramble, bytes_of(right)));
  FUZZ_CHECK(right.size() == (password.empty() ? 0u : 20u));
  if (token != right) FUZZ_CHECK(!verify_native_password(stored, scramble, bytes_of(token)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t selector = in.u8();
  switch (selector % 14) {
    case 0:
      handshake_response(in.rest());
      break;
    case 1:
      handshake_v10(in.rest());
      break;
    case 2:
      auth_switch(in.rest());
      break;
    case 3:
      ok_packet(in);
      break;
    case 4:
      err_packet(in.rest());
      break;
    case 5:
      eof_packet(in);
      break;
    case 6:
      column_definition(in.rest());
      break;
    case 7:
      commands(in.rest());
      break;
    case 8:
      stmt_execute(in);
      break;
    case 9:
      binary_value(in);
      break;
    case 10:
      result_set(in);
      break;
    case 11:
      packet_reader(in);
      break;
    case 12:
      native_password(in);
      break;
    case 13: {
      // A payload framed and decoded again comes back whole, whatever its size.
      const std::string payload(in.rest());
      std::uint8_t seq = static_cast<std::uint8_t>(selector >> 4);
      const std::string framed = frame(payload, seq);
      FrameDecoder decoder(payload.size() + 1);
      decoder.feed(framed);
      auto f = decoder.next();
      FUZZ_CHECK(f && f->has_value() && (*f)->payload == payload);
      FUZZ_CHECK((*f)->first_sequence_id == static_cast<std::uint8_t>(selector >> 4));
      break;
    }
  }
  return 0;
}
