// Column metadata sent before result-set rows and in prepare responses.
#pragma once

#include <cstdint>
#include <string>

#include "server/base/result.h"
#include "server/mysql/protocol/bytes.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/packet_writer.h"

namespace ticketd::mysql {

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query_response_text_resultset_column_definition.html
struct ColumnDefinition41 {
  std::string catalog = "def";  // always "def"
  std::string schema;
  std::string table;      // alias
  std::string org_table;  // physical name
  std::string name;       // alias
  std::string org_name;   // physical name
  std::uint16_t character_set = kCharsetUtf8mb4GeneralCi;
  /// Maximum display length; clients size buffers with it, so be generous rather than exact.
  std::uint32_t column_length = 0;
  std::uint8_t type = kTypeVarString;
  std::uint16_t flags = 0;
  /// 0x00 for integers and static strings, 0x1f for dynamic strings/doubles, 0..0x51 for decimals.
  std::uint8_t decimals = 0;

  friend bool operator==(const ColumnDefinition41&, const ColumnDefinition41&) = default;
};

void encode(const ColumnDefinition41& column, PacketWriter& out);
[[nodiscard]] Result<ColumnDefinition41> decode_column_definition41(ByteView payload);

}  // namespace ticketd::mysql
