#include "server/mysql/protocol/generic_packets.h"

#include "server/mysql/protocol/packet_reader.h"
#include "server/mysql/protocol/protocol_errc.h"

namespace ticketd::mysql {
namespace {

void encode_ok_body(const OkPacket& ok, Capabilities caps, PacketWriter& out) {
  out.lenenc_int(ok.affected_rows);
  out.lenenc_int(ok.last_insert_id);
  if (caps & kClientProtocol41) {
    out.u16(ok.status_flags);
    out.u16(ok.warnings);
  } else if (caps & kClientTransactions) {
    out.u16(ok.status_flags);
  }
  if (caps & kClientSessionTrack) {
    // Like mysqld's net_send_ok: the lenenc info is omitted entirely when empty (and there is no
    // session state to report); clients treat a packet that ends here as "no info".
    if (!ok.info.empty()) out.lenenc_string(ok.info);
  } else {
    out.raw(ok.info);
  }
}

}  // namespace

void encode(const OkPacket& ok, Capabilities caps, PacketWriter& out) {
  out.u8(kOkHeader);
  encode_ok_body(ok, caps, out);
}

void encode_ok_as_eof(const OkPacket& ok, Capabilities caps, PacketWriter& out) {
  out.u8(kEofHeader);
  encode_ok_body(ok, caps, out);
}

void encode(const ErrPacket& err, Capabilities caps, PacketWriter& out) {
  out.u8(kErrHeader);
  out.u16(err.error_code);
  if (caps & kClientProtocol41) {
    out.u8('#');
    std::string state = err.sql_state.substr(0, 5);
    state.resize(5, '0');
    out.raw(state);
  }
  out.raw(err.message);
}

void encode(const EofPacket& eof, Capabilities caps, PacketWriter& out) {
  out.u8(kEofHeader);
  if (caps & kClientProtocol41) {
    out.u16(eof.warnings);
    out.u16(eof.status_flags);
  }
}

Result<OkPacket> decode_ok_packet(ByteView payload, Capabilities caps) {
  PacketReader r(payload);
  const std::uint8_t header = r.u8();
  if (r.ok() && header != kOkHeader && header != kEofHeader) {
    return make_error_code(ProtocolErrc::kUnexpectedPacket);
  }
  OkPacket ok;
  ok.affected_rows = r.lenenc_int();
  ok.last_insert_id = r.lenenc_int();
  if (caps & kClientProtocol41) {
    ok.status_flags = r.u16();
    ok.warnings = r.u16();
  } else if (caps & kClientTransactions) {
    ok.status_flags = r.u16();
  }
  if (caps & kClientSessionTrack) {
    if (!r.empty()) ok.info = r.lenenc_string();
  } else {
    ok.info = r.rest();
  }
  if (!r.ok()) return r.error();
  return ok;
}

Result<ErrPacket> decode_err_packet(ByteView payload) {
  PacketReader r(payload);
  const std::uint8_t header = r.u8();
  if (r.ok() && header != kErrHeader) return make_error_code(ProtocolErrc::kUnexpectedPacket);
  ErrPacket err;
  err.error_code = r.u16();
  err.sql_state.clear();
  if (r.ok() && !r.empty() && r.peek() == '#') {
    r.skip(1);
    err.sql_state = r.fixed_string(5);
  }
  err.message = r.rest();
  if (!r.ok()) return r.error();
  return err;
}

Result<EofPacket> decode_eof_packet(ByteView payload, Capabilities caps) {
  PacketReader r(payload);
  const std::uint8_t header = r.u8();
  if (r.ok() && header != kEofHeader) return make_error_code(ProtocolErrc::kUnexpectedPacket);
  EofPacket eof;
  if (caps & kClientProtocol41) {
    eof.warnings = r.u16();
    eof.status_flags = r.u16();
  }
  if (!r.ok()) return r.error();
  return eof;
}

bool is_eof_packet(ByteView payload) noexcept {
  return !payload.empty() && payload[0] == kEofHeader && payload.size() < 9;
}

}  // namespace ticketd::mysql
