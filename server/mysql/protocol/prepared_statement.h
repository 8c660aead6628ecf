// Prepared statements: COM_STMT_PREPARE's response and the client's COM_STMT_* commands.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/base/result.h"
#include "server/mysql/protocol/binary_value.h"
#include "server/mysql/protocol/bytes.h"
#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/packet_writer.h"

namespace ticketd::mysql {

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_prepare.html#sect_protocol_com_stmt_prepare_response_ok
struct StmtPrepareOk {
  std::uint32_t statement_id = 0;
  std::uint16_t num_columns = 0;
  std::uint16_t num_params = 0;
  std::uint16_t warnings = 0;

  friend bool operator==(const StmtPrepareOk&, const StmtPrepareOk&) = default;
};

void encode(const StmtPrepareOk& ok, PacketWriter& out);

/// The definition mysqld sends for every '?' placeholder: name "?", VAR_STRING, binary charset,
/// BINARY flag. Clients only count these packets.
ColumnDefinition41 param_definition();

/// The whole COM_STMT_PREPARE response, one string per payload: COM_STMT_PREPARE_OK, then
/// `num_params` parameter definitions and an EOF (if any and no CLIENT_DEPRECATE_EOF), then the
/// result columns and an EOF (same rule). Unlike a result set there is no trailing OK when
/// CLIENT_DEPRECATE_EOF is set.
[[nodiscard]] std::vector<std::string> encode_prepare_response(
    std::uint32_t statement_id, std::uint16_t num_params,
    const std::vector<ColumnDefinition41>& columns, Capabilities client_caps,
    std::uint16_t status_flags);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_prepare.html
struct StmtPrepare {
  std::string query;
};
[[nodiscard]] Result<StmtPrepare> decode_stmt_prepare(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_execute.html
struct StmtExecute {
  std::uint32_t statement_id = 0;
  std::uint8_t flags = 0;  // cursor type; kCursorTypeNoCursor from every common driver
  std::uint32_t iteration_count = 0;
  /// One entry per placeholder; nullopt is NULL.
  std::vector<std::optional<ParamValue>> params;
};

/// Decodes COM_STMT_EXECUTE (payload including the 0x17 byte) for a statement with `num_params`
/// placeholders (from its COM_STMT_PREPARE_OK).
///
/// Parameter types are only sent when new-params-bound-flag is 1, normally on the first execute;
/// later executes reuse them. The caller keeps `remembered_param_types` per statement: it is
/// replaced by the types of a packet that carries them, and used when a packet does not. It is left
/// untouched when decoding fails. A packet without types and nothing remembered gives
/// kMissingParamTypes (unless every parameter is NULL).
///
/// `long_data` holds, per parameter, data received through COM_STMT_SEND_LONG_DATA since the last
/// execute; such parameters carry no value in the packet and decode as that string. Assumes
/// CLIENT_QUERY_ATTRIBUTES was not negotiated (a PARAMETER_COUNT_AVAILABLE flag is kUnsupported).
[[nodiscard]] Result<StmtExecute> decode_stmt_execute(
    ByteView payload, std::uint16_t num_params, std::vector<std::uint16_t>& remembered_param_types,
    const std::vector<std::optional<std::string>>& long_data = {});

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_close.html
struct StmtClose {
  std::uint32_t statement_id = 0;
};
[[nodiscard]] Result<StmtClose> decode_stmt_close(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_reset.html
struct StmtReset {
  std::uint32_t statement_id = 0;
};
[[nodiscard]] Result<StmtReset> decode_stmt_reset(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_send_long_data.html
/// Several packets for one parameter append to each other; the server sends no reply.
struct StmtSendLongData {
  std::uint32_t statement_id = 0;
  std::uint16_t param_id = 0;
  std::string data;
};
[[nodiscard]] Result<StmtSendLongData> decode_stmt_send_long_data(ByteView payload);

}  // namespace ticketd::mysql
