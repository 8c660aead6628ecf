// OK, ERR and EOF: the generic responses that end most commands.
#pragma once

#include <cstdint>
#include <string>

#include "server/base/result.h"
#include "server/mysql/protocol/bytes.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/packet_writer.h"

namespace ticketd::mysql {

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_ok_packet.html
struct OkPacket {
  std::uint64_t affected_rows = 0;
  std::uint64_t last_insert_id = 0;
  std::uint16_t status_flags = 0;
  std::uint16_t warnings = 0;
  /// Human-readable info ("Rows matched: 1 ..."); session-state changes are not produced.
  std::string info;

  friend bool operator==(const OkPacket&, const OkPacket&) = default;
};

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_err_packet.html
struct ErrPacket {
  std::uint16_t error_code = 0;
  /// Exactly 5 characters on the wire; shorter values are padded with '0', longer cut.
  std::string sql_state = "HY000";
  std::string message;

  friend bool operator==(const ErrPacket&, const ErrPacket&) = default;
};

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_eof_packet.html
struct EofPacket {
  std::uint16_t warnings = 0;
  std::uint16_t status_flags = 0;

  friend bool operator==(const EofPacket&, const EofPacket&) = default;
};

/// OK with header 0x00.
void encode(const OkPacket& ok, Capabilities caps, PacketWriter& out);
/// The same fields with header 0xFE: what ends a result set instead of an EOF packet when the
/// client set CLIENT_DEPRECATE_EOF. Clients tell it from a row by the 0xFE first byte together
/// with a payload shorter than 0xFFFFFF (a row starting with 0xFE would be a 9-byte lenenc).
void encode_ok_as_eof(const OkPacket& ok, Capabilities caps, PacketWriter& out);
/// The '#' + SQLSTATE part is only written with CLIENT_PROTOCOL_41 (e.g. not for errors sent
/// before the client's capabilities are known).
void encode(const ErrPacket& err, Capabilities caps, PacketWriter& out);
void encode(const EofPacket& eof, Capabilities caps, PacketWriter& out);

/// Accepts both the 0x00 and the 0xFE header.
[[nodiscard]] Result<OkPacket> decode_ok_packet(ByteView payload, Capabilities caps);
/// Reads the SQLSTATE when the '#' marker is present, whatever the capabilities.
[[nodiscard]] Result<ErrPacket> decode_err_packet(ByteView payload);
[[nodiscard]] Result<EofPacket> decode_eof_packet(ByteView payload, Capabilities caps);

/// The check the docs prescribe: header 0xFE and fewer than 9 bytes, since 0xFE also starts a
/// 9-byte length-encoded integer (a large first column in a row).
bool is_eof_packet(ByteView payload) noexcept;

}  // namespace ticketd::mysql
