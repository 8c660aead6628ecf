#include "server/mysql/result_columns.h"

#include "server/mysql/server_variables.h"

namespace ticketd::mysql {

ColumnKind column_kind(const sql::ResultColumn& column, const ServerSettings& settings,
                       const SessionState& session) {
  switch (column.type) {
    case sql::ColumnType::kUnsignedInteger:
      return ColumnKind::kUnsignedBigint;
    case sql::ColumnType::kInteger:
      return ColumnKind::kBigint;
    case sql::ColumnType::kNull:
      return ColumnKind::kNull;
    case sql::ColumnType::kText:
      return ColumnKind::kVarString;
    case sql::ColumnType::kVariableValue: {
      const auto numeric = variable_is_numeric(settings, session, column.variable, column.global);
      return numeric.value_or(false) ? ColumnKind::kBigint : ColumnKind::kVarString;
    }
  }
  return ColumnKind::kVarString;
}

std::vector<Column> result_columns(const sql::Statement& statement, const ServerSettings& settings,
                                   const SessionState& session) {
  std::vector<Column> out;
  for (auto& c : sql::result_columns(statement, sql::ColumnContext{session.database})) {
    const ColumnKind kind = column_kind(c, settings, session);
    out.push_back(Column{std::move(c.name), kind, {}});
  }
  return out;
}

bool columns_depend_on_session(const sql::Statement& statement, const SessionState& session) {
  for (const auto& c : sql::result_columns(statement, sql::ColumnContext{session.database})) {
    if (c.type == sql::ColumnType::kVariableValue) return true;
  }
  return false;
}

}  // namespace ticketd::mysql
