#include "server/mysql/protocol/prepared_statement.h"

#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/packet_reader.h"
#include "server/mysql/protocol/protocol_errc.h"

namespace ticketd::mysql {

void encode(const StmtPrepareOk& ok, PacketWriter& out) {
  out.u8(kOkHeader);
  out.u32(ok.statement_id);
  out.u16(ok.num_columns);
  out.u16(ok.num_params);
  out.u8(0);  // reserved
  out.u16(ok.warnings);
}

ColumnDefinition41 param_definition() {
  ColumnDefinition41 c;
  // Not `c.name = "?"`: GCC 12 at -O2 reports a bogus -Wrestrict for assigning a one-character
  // literal (GCC bug 105329), and the project builds with -Werror.
  c.name = std::string(1, '?');
  c.character_set = kCharsetBinary;
  c.type = kTypeVarString;
  c.flags = kBinaryFlag;
  return c;
}

std::vector<std::string> encode_prepare_response(std::uint32_t statement_id,
                                                 std::uint16_t num_params,
                                                 const std::vector<ColumnDefinition41>& columns,
                                                 Capabilities client_caps,
                                                 std::uint16_t status_flags) {
  const bool deprecate_eof = (client_caps & kClientDeprecateEof) != 0;
  std::vector<std::string> payloads;
  const StmtPrepareOk ok{statement_id, static_cast<std::uint16_t>(columns.size()), num_params, 0};
  payloads.push_back(to_payload(ok));
  if (num_params > 0) {
    const std::string param = to_payload(param_definition());
    payloads.insert(payloads.end(), num_params, param);
    if (!deprecate_eof) payloads.push_back(to_payload(EofPacket{0, status_flags}, client_caps));
  }
  if (!columns.empty()) {
    for (const auto& column : columns) payloads.push_back(to_payload(column));
    if (!deprecate_eof) payloads.push_back(to_payload(EofPacket{0, status_flags}, client_caps));
  }
  return payloads;
}

Result<StmtPrepare> decode_stmt_prepare(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComStmtPrepare);
  StmtPrepare p{std::string(r.rest())};
  if (!r.ok()) return r.error();
  return p;
}

Result<StmtExecute> decode_stmt_execute(ByteView payload, std::uint16_t num_params,
                                        std::vector<std::uint16_t>& remembered_param_types,
                                        const std::vector<std::optional<std::string>>& long_data) {
  PacketReader r(payload);
  r.expect_u8(kComStmtExecute);
  StmtExecute e;
  e.statement_id = r.u32();
  e.flags = r.u8();
  e.iteration_count = r.u32();
  if (!r.ok()) return r.error();
  if (e.flags & kParameterCountAvailable) return make_error_code(ProtocolErrc::kUnsupported);
  if (num_params == 0) return e;

  // Parameters use a NULL bitmap with offset 0 (result rows use 2).
  const ByteView null_bitmap = r.bytes((num_params + 7) / 8);
  // mysqld treats any non-zero value as "types follow".
  const bool new_params_bound = r.u8() != 0;
  std::vector<std::uint16_t> types;
  if (new_params_bound) {
    types.resize(num_params);
    for (auto& type : types) type = r.u16();
  } else {
    types = remembered_param_types;
  }
  if (!r.ok()) return r.error();

  e.params.resize(num_params);
  for (std::size_t i = 0; i < num_params; ++i) {
    if (null_bitmap[i / 8] & (1U << (i % 8))) continue;
    if (i < long_data.size() && long_data[i]) {
      e.params[i] = *long_data[i];
      continue;
    }
    if (types.size() != num_params) return make_error_code(ProtocolErrc::kMissingParamTypes);
    if ((types[i] & 0xFF) == kTypeNull) continue;  // a NULL-typed parameter has no value bytes
    e.params[i] = read_binary_value(r, types[i]);
  }
  if (!r.ok()) return r.error();
  if (new_params_bound) remembered_param_types = std::move(types);
  return e;
}

Result<StmtClose> decode_stmt_close(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComStmtClose);
  StmtClose c{r.u32()};
  if (!r.ok()) return r.error();
  return c;
}

Result<StmtReset> decode_stmt_reset(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComStmtReset);
  StmtReset c{r.u32()};
  if (!r.ok()) return r.error();
  return c;
}

Result<StmtSendLongData> decode_stmt_send_long_data(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComStmtSendLongData);
  StmtSendLongData d;
  d.statement_id = r.u32();
  d.param_id = r.u16();
  d.data = r.rest();
  if (!r.ok()) return r.error();
  return d;
}

}  // namespace ticketd::mysql
