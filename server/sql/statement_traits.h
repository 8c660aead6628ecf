// What every statement kind is, besides its syntax: whether only the leader may run it and which
// columns its result set has. Read by execution (the serving gate, the result sets it builds) and
// by COM_STMT_PREPARE (the column definitions it describes), so the two cannot disagree.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/sql/statement.h"

namespace ticketd::sql {

/// The type of a result column, in SQL terms; the MySQL front end picks the wire type.
enum class ColumnType {
  kUnsignedInteger,  // IDs and counters: BIGINT UNSIGNED NOT NULL
  kInteger,          // signed integers: an integer literal, SHOW WARNINGS' Code
  kText,             // strings, timestamps, decimals as written
  kNull,             // the NULL literal
  kVariableValue,    // @@name: numeric or text by the variable, which the front end looks up
};

struct ResultColumn {
  std::string name;
  ColumnType type = ColumnType::kText;
  std::string variable;  // kVariableValue: the lower-case variable name
  bool global = false;   // kVariableValue: @@global.name

  bool operator==(const ResultColumn&) const = default;
};

/// A column whose name and type do not depend on the statement's text.
struct FixedColumn {
  std::string_view name;
  ColumnType type = ColumnType::kText;
};

/// Who may run a statement when this instance is not the leader (a standby's engine is not
/// loaded, and only the leader may issue).
enum class LeaderNeed {
  kNo,                    // session chatter, SHOW VARIABLES / STATUS: a standby answers
  kYes,                   // reads or changes sequences
  kWhenItCallsASequence,  // SELECT: only with NEXTVAL / LASTVAL / SETVAL items
};

/// What the session knows that a statement's columns may depend on.
struct ColumnContext {
  std::string_view database;  // the current database (SHOW TABLES names its column after it)
};

/// One row of the statement table: keyed by the statement's kind name (Statement::kName).
/// `columns` are the result columns of statements whose shape is fixed; `derive`, when set,
/// builds them from the statement instead (SELECT, SHOW TABLES). Neither: an OK packet.
struct StatementTraits {
  std::string_view kind;
  LeaderNeed leader = LeaderNeed::kNo;
  std::span<const FixedColumn> columns;
  std::vector<ResultColumn> (*derive)(const Statement&, const ColumnContext&) = nullptr;
};

/// The row of `statement`'s kind. Every alternative of Statement has one (checked at compile
/// time in statement_traits.cpp).
[[nodiscard]] const StatementTraits& traits(const Statement& statement);

/// The row of the kind named `kind` (Statement::kName); nullptr for a name with no row.
[[nodiscard]] const StatementTraits* find_traits(std::string_view kind);

/// True when a standby must refuse `statement` (ERR 1290 naming the leader).
[[nodiscard]] bool needs_leader(const Statement& statement);

/// The columns of the result set `statement` answers with, in order; empty when it answers with
/// an OK packet (or an error). Prepare and execution both read this.
[[nodiscard]] std::vector<ResultColumn> result_columns(const Statement& statement,
                                                       const ColumnContext& context);

/// The column type of one SELECT item.
[[nodiscard]] ColumnType select_item_type(const SelectItem& item);

}  // namespace ticketd::sql
