#include "server/mysql/protocol/column_definition.h"

#include "server/mysql/protocol/packet_reader.h"
#include "server/mysql/protocol/protocol_errc.h"

namespace ticketd::mysql {
namespace {
// "length of fixed-length fields": charset(2) + length(4) + type(1) + flags(2) + decimals(1)
// + filler(2).
constexpr std::uint64_t kFixedFieldsLength = 0x0C;
}  // namespace

void encode(const ColumnDefinition41& column, PacketWriter& out) {
  out.lenenc_string(column.catalog);
  out.lenenc_string(column.schema);
  out.lenenc_string(column.table);
  out.lenenc_string(column.org_table);
  out.lenenc_string(column.name);
  out.lenenc_string(column.org_name);
  out.lenenc_int(kFixedFieldsLength);
  out.u16(column.character_set);
  out.u32(column.column_length);
  out.u8(column.type);
  out.u16(column.flags);
  out.u8(column.decimals);
  out.zeros(2);
}

Result<ColumnDefinition41> decode_column_definition41(ByteView payload) {
  PacketReader r(payload);
  ColumnDefinition41 c;
  c.catalog = r.lenenc_string();
  c.schema = r.lenenc_string();
  c.table = r.lenenc_string();
  c.org_table = r.lenenc_string();
  c.name = r.lenenc_string();
  c.org_name = r.lenenc_string();
  const std::uint64_t fixed_length = r.lenenc_int();
  if (r.ok() && fixed_length != kFixedFieldsLength) r.fail(ProtocolErrc::kMalformed);
  c.character_set = r.u16();
  c.column_length = r.u32();
  c.type = r.u8();
  c.flags = r.u16();
  c.decimals = r.u8();
  r.skip(2);
  if (!r.ok()) return r.error();
  return c;
}

}  // namespace ticketd::mysql
