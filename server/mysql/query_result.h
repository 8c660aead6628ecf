// What executing one statement produces, before it is encoded as MySQL packets.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <initializer_list>
#include <memory>
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

// The same types as the codec's (server/mysql/protocol/result_set.h): a row keeps two values
// and a result set one row inline.
using Row = boost::container::small_vector<std::optional<std::string>, 2>;
using Rows = boost::container::small_vector<Row, 1>;

/// The columns of a result set, shared and immutable: a statement's columns are built once per
/// connection (the executor keeps them with the recognized statement) and ServerConnection
/// keeps their encoded definitions by identity, so a repeated SELECT allocates for neither.
class ColumnList {
 public:
  ColumnList() = default;
  ColumnList(std::vector<Column> columns)  // NOLINT: implicit, like the vector it replaces
      : columns_(std::make_shared<const std::vector<Column>>(std::move(columns))) {}
  ColumnList(std::initializer_list<Column> columns) : ColumnList(std::vector<Column>(columns)) {}

  [[nodiscard]] const std::vector<Column>& get() const { return columns_ ? *columns_ : none(); }
  [[nodiscard]] std::size_t size() const { return get().size(); }
  [[nodiscard]] bool empty() const { return get().empty(); }
  [[nodiscard]] const Column& operator[](std::size_t i) const { return get()[i]; }
  [[nodiscard]] auto begin() const { return get().begin(); }
  [[nodiscard]] auto end() const { return get().end(); }
  /// Two lists with the same identity hold the same columns (null for an empty list).
  [[nodiscard]] const void* identity() const { return columns_.get(); }

 private:
  static const std::vector<Column>& none() {
    static const std::vector<Column> none;
    return none;
  }
  std::shared_ptr<const std::vector<Column>> columns_;
};

struct ResultSetResult {
  ColumnList columns;
  Rows rows;
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
