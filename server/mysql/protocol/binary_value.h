// Values in the binary protocol: prepared-statement parameters and binary result-set rows.
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_binary_resultset.html
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/packet_reader.h"
#include "server/mysql/protocol/packet_writer.h"

namespace ticketd::mysql {

/// A decoded parameter value. Integers keep their signedness (the 0x8000 flag of the type);
/// strings hold raw bytes for the string/blob/decimal types and the canonical text
/// ("2024-01-31 12:00:00.000001", "-838:59:59") for DATE/DATETIME/TIMESTAMP/TIME.
using ParamValue = std::variant<std::int64_t, std::uint64_t, float, double, std::string>;

/// Renders a value so it can be spliced into SQL text: integers and floating-point numbers as
/// numeric literals (shortest round-trip form), strings single-quoted with MySQL's escapes
/// (\0 \n \r \\ \' \" \Z). Non-finite floats render as inf/nan, which the SQL layer will reject.
std::string to_sql_literal(const ParamValue& value);
/// As above; nullopt renders as NULL.
std::string to_sql_literal(const std::optional<ParamValue>& value);

/// Reads one value of a COM_STMT_EXECUTE parameter type (low byte: column type, 0x8000: unsigned)
/// from `r`. Unknown types fail the reader with kUnsupported, bad temporal lengths with
/// kMalformed. Not used for kTypeNull (NULLs come from the bitmap).
ParamValue read_binary_value(PacketReader& r, std::uint16_t param_type);

/// Converts a text value (as it would appear in a text-protocol row) to the binary form of
/// `column`'s type. Throws std::invalid_argument when the text does not fit the type (a bug in the
/// caller's result set: the codec has no way to report it to the client meaningfully).
void write_binary_value(const ColumnDefinition41& column, std::string_view text, PacketWriter& out);

}  // namespace ticketd::mysql
