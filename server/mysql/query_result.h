// What executing one statement produces, before it is encoded as MySQL packets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ticketd::mysql {

/// The column types ticketd reports. Encoding picks the MySQL type code, flags and length.
enum class ColumnKind {
  kUnsignedBigint,  // IDs: BIGINT UNSIGNED NOT NULL
  kBigint,          // signed integers
  kVarString,       // text
  kNull,            // a NULL literal
};

struct Column {
  std::string name;
  ColumnKind kind = ColumnKind::kVarString;
  std::string table;  // empty for expressions
};

using Row = std::vector<std::optional<std::string>>;

struct ResultSetResult {
  std::vector<Column> columns;
  std::vector<Row> rows;
};

struct OkResult {
  std::uint64_t affected_rows = 0;
  std::uint64_t last_insert_id = 0;
  std::uint16_t warnings = 0;
  std::string info;
};

struct ErrResult {
  std::uint16_t code = 0;
  std::string sql_state;
  std::string message;
};

using QueryResult = std::variant<OkResult, ResultSetResult, ErrResult>;

}  // namespace ticketd::mysql
