// Result sets in the text (COM_QUERY) and binary (COM_STMT_EXECUTE) protocols.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/packet_writer.h"

namespace ticketd::mysql {

/// One row as text, one entry per column; nullopt is SQL NULL. Inline storage for two values,
/// so the common one- or two-column answer needs no allocation for the row itself.
using Row = boost::container::small_vector<std::optional<std::string>, 2>;
/// The rows of a result set; one row inline (a ticket answer is one row).
using Rows = boost::container::small_vector<Row, 1>;

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query_response_text_resultset_row.html
/// Each value is a string<lenenc>; NULL is the single byte 0xFB.
void encode_text_row(const Row& row, PacketWriter& out);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_binary_resultset.html#sect_protocol_binary_resultset_row
/// Header 0x00, a NULL bitmap whose first two bits are unused (offset 2), then the non-NULL values
/// in the binary form of each column's type, converted from their text (see write_binary_value).
/// Throws std::invalid_argument if the row width differs from `columns` or a value does not fit
/// its column's type.
void encode_binary_row(const std::vector<ColumnDefinition41>& columns, const Row& row,
                       PacketWriter& out);

/// The whole result-set response, one string per payload (frame each with consecutive sequence
/// ids): column count, column definitions, EOF unless the client set CLIENT_DEPRECATE_EOF, the rows
/// (text or binary), then the terminator: EOF, or with CLIENT_DEPRECATE_EOF an OK packet with the
/// 0xFE header. Both carry `status_flags` (add kServerMoreResultsExists for multi-results).
/// Throws std::invalid_argument for zero columns (send an OK packet instead) or a bad row.
/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query_response_text_resultset.html
[[nodiscard]] std::vector<std::string> encode_result_set(
    const std::vector<ColumnDefinition41>& columns, const Rows& rows, bool binary,
    Capabilities client_caps, std::uint16_t status_flags);

/// encode_result_set() framed straight into `out` (sequence ids from `sequence_id`, advanced).
/// `definitions[i]` is encode(columns[i]) done before, so a connection may keep the encoded
/// definitions of a statement it answers again and again; every other payload is built in
/// `scratch`, whose memory is reused. Same packets, same throws.
void append_result_set(std::string& out, std::uint8_t& sequence_id,
                       const std::vector<ColumnDefinition41>& columns,
                       const std::vector<std::string>& definitions, const Rows& rows, bool binary,
                       Capabilities client_caps, std::uint16_t status_flags, std::string& scratch);

}  // namespace ticketd::mysql
