// What the MySQL fuzz targets check in a server's answer: framed correctly, numbered from the
// expected sequence id, and made of packets a client can walk (OK, ERR, result sets with their
// column definitions, rows and terminators, prepare responses), each decoding with the codec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/mysql/protocol/binary_value.h"
#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/packet_reader.h"
#include "tests/fuzz/fuzz_support.h"

namespace ticketd::fuzz {

/// Splits framed bytes into logical payloads (joining continuation packets), checking that they
/// are exactly a whole number of packets numbered consecutively from `first_seq`.
inline std::vector<std::string> unframe_checked(std::string_view bytes, std::uint8_t first_seq) {
  std::vector<std::string> payloads;
  std::uint8_t seq = first_seq;
  bool continuing = false;
  std::size_t i = 0;
  while (i < bytes.size()) {
    FUZZ_CHECK(bytes.size() - i >= mysql::kPacketHeaderSize);
    const auto* h = reinterpret_cast<const std::uint8_t*>(bytes.data() + i);
    const std::size_t length = h[0] | (h[1] << 8) | (static_cast<std::size_t>(h[2]) << 16);
    FUZZ_CHECK(h[3] == seq);
    ++seq;
    i += mysql::kPacketHeaderSize;
    FUZZ_CHECK(bytes.size() - i >= length);
    if (!continuing) payloads.emplace_back();
    payloads.back().append(bytes.substr(i, length));
    i += length;
    continuing = length == mysql::kMaxPhysicalPayload;
  }
  FUZZ_CHECK(!continuing);
  return payloads;
}

inline mysql::ByteView view(const std::string& payload) { return mysql::as_bytes(payload); }

inline void check_err(const std::string& payload) {
  auto err = mysql::decode_err_packet(view(payload));
  FUZZ_CHECK(err.has_value());
  FUZZ_CHECK(err->error_code >= 1000);
  FUZZ_CHECK(err->sql_state.size() == 5);
  FUZZ_CHECK(err->message.size() < 512);
}

/// One text or binary row of `columns`.
inline void check_row(const std::string& payload,
                      const std::vector<mysql::ColumnDefinition41>& columns, bool binary) {
  mysql::PacketReader r(view(payload));
  if (!binary) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (r.peek() == mysql::kNullValue) {
        r.skip(1);
      } else {
        (void)r.lenenc_string();  // checked through r.ok() below
      }
    }
  } else {
    FUZZ_CHECK(r.u8() == mysql::kOkHeader);
    const mysql::ByteView bitmap = r.bytes((columns.size() + 7 + 2) / 8);
    FUZZ_CHECK(r.ok());
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::size_t bit = c + 2;
      if (bitmap[bit / 8] & (1U << (bit % 8))) continue;
      FUZZ_CHECK(columns[c].type != mysql::kTypeNull);
      const bool is_unsigned = (columns[c].flags & mysql::kUnsignedFlag) != 0;
      (void)mysql::read_binary_value(
          r, static_cast<std::uint16_t>(columns[c].type |
                                        (is_unsigned ? mysql::kParamUnsignedFlag : 0)));
    }
  }
  FUZZ_CHECK(r.ok());
  FUZZ_CHECK(r.empty());
}

/// The answer to COM_QUERY, COM_INIT_DB or COM_STMT_EXECUTE (`binary`): one or more results
/// (OK or a result set), each but the last flagged SERVER_MORE_RESULTS_EXISTS, or an ERR that
/// ends it.
inline void check_results(const std::vector<std::string>& packets, mysql::Capabilities caps,
                          bool binary) {
  using namespace ::ticketd::mysql;
  const bool deprecate_eof = (caps & kClientDeprecateEof) != 0;
  std::size_t i = 0;
  auto next = [&]() -> const std::string& {
    FUZZ_CHECK(i < packets.size());
    FUZZ_CHECK(!packets[i].empty());
    return packets[i++];
  };
  for (;;) {
    const std::string& first = next();
    const auto header = static_cast<std::uint8_t>(first[0]);
    std::uint16_t status = 0;
    if (header == kErrHeader) {
      check_err(first);
      FUZZ_CHECK(i == packets.size());
      return;
    }
    if (header == kOkHeader) {
      auto ok = decode_ok_packet(view(first), caps);
      FUZZ_CHECK(ok.has_value());
      status = ok->status_flags;
    } else {
      PacketReader r(view(first));
      const std::uint64_t count = r.lenenc_int();
      FUZZ_CHECK(r.ok() && r.empty());
      FUZZ_CHECK(count >= 1 && count <= 4096);
      std::vector<ColumnDefinition41> columns;
      for (std::uint64_t c = 0; c < count; ++c) {
        auto def = decode_column_definition41(view(next()));
        FUZZ_CHECK(def.has_value());
        FUZZ_CHECK(def->catalog == "def");
        columns.push_back(*def);
      }
      if (!deprecate_eof) {
        const std::string& eof = next();
        FUZZ_CHECK(is_eof_packet(view(eof)));
        FUZZ_CHECK(decode_eof_packet(view(eof), caps).has_value());
      }
      for (;;) {
        const std::string& p = next();
        const auto h = static_cast<std::uint8_t>(p[0]);
        if (deprecate_eof && h == kEofHeader && p.size() < kMaxPhysicalPayload) {
          auto ok = decode_ok_packet(view(p), caps);
          FUZZ_CHECK(ok.has_value());
          status = ok->status_flags;
          break;
        }
        if (!deprecate_eof && is_eof_packet(view(p))) {
          auto eof = decode_eof_packet(view(p), caps);
          FUZZ_CHECK(eof.has_value());
          status = eof->status_flags;
          break;
        }
        check_row(p, columns, binary);
      }
    }
    if ((status & kServerMoreResultsExists) == 0) {
      FUZZ_CHECK(i == packets.size());
      return;
    }
  }
}

/// The answer to COM_STMT_PREPARE: COM_STMT_PREPARE_OK, the parameter and column definitions
/// (each group closed by an EOF without CLIENT_DEPRECATE_EOF), or an ERR.
inline void check_prepare_reply(const std::vector<std::string>& packets, mysql::Capabilities caps) {
  using namespace ::ticketd::mysql;
  FUZZ_CHECK(!packets.empty() && !packets[0].empty());
  if (static_cast<std::uint8_t>(packets[0][0]) == kErrHeader) {
    check_err(packets[0]);
    FUZZ_CHECK(packets.size() == 1);
    return;
  }
  PacketReader r(view(packets[0]));
  r.expect_u8(kOkHeader);
  (void)r.u32();  // statement id
  const std::uint16_t columns = r.u16();
  const std::uint16_t params = r.u16();
  r.skip(1);
  (void)r.u16();  // warnings
  FUZZ_CHECK(r.ok() && r.empty());
  const bool deprecate_eof = (caps & kClientDeprecateEof) != 0;
  std::size_t i = 1;
  for (const std::uint16_t group : {params, columns}) {
    if (group == 0) continue;
    for (std::uint16_t k = 0; k < group; ++k) {
      FUZZ_CHECK(i < packets.size());
      FUZZ_CHECK(decode_column_definition41(view(packets[i++])).has_value());
    }
    if (!deprecate_eof) {
      FUZZ_CHECK(i < packets.size());
      FUZZ_CHECK(is_eof_packet(view(packets[i++])));
    }
  }
  FUZZ_CHECK(i == packets.size());
}

/// The answer to COM_FIELD_LIST: column definitions (each followed by a default value), then EOF
/// (or OK-as-EOF with CLIENT_DEPRECATE_EOF); or an ERR.
inline void check_field_list_reply(const std::vector<std::string>& packets,
                                   mysql::Capabilities caps) {
  using namespace ::ticketd::mysql;
  FUZZ_CHECK(!packets.empty());
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const std::string& p = packets[i];
    FUZZ_CHECK(!p.empty());
    const auto h = static_cast<std::uint8_t>(p[0]);
    const bool last = i + 1 == packets.size();
    if (h == kErrHeader) {
      check_err(p);
      FUZZ_CHECK(packets.size() == 1);
    } else if (last) {
      FUZZ_CHECK(h == kEofHeader);
      if (caps & kClientDeprecateEof) {
        FUZZ_CHECK(decode_ok_packet(view(p), caps).has_value());
      } else {
        FUZZ_CHECK(is_eof_packet(view(p)));
      }
    } else {
      FUZZ_CHECK(decode_column_definition41(view(p)).has_value());
    }
  }
}

}  // namespace ticketd::fuzz
