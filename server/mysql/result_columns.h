// The MySQL columns of a statement's result set, from the statement table's traits.
#pragma once

#include <vector>

#include "server/mysql/query_result.h"
#include "server/mysql/session_state.h"
#include "server/sql/statement.h"
#include "server/sql/statement_traits.h"

namespace ticketd::mysql {

/// The column kind of one described column; @@variables are looked up in `session` (numeric
/// ones are BIGINT, as mysqld types them).
[[nodiscard]] ColumnKind column_kind(const sql::ResultColumn& column,
                                     const ServerSettings& settings, const SessionState& session);

/// The columns `statement` answers with: read by execution, which builds its result set from
/// them, and by COM_STMT_PREPARE, which describes them. Empty for statements answering OK.
[[nodiscard]] std::vector<Column> result_columns(const sql::Statement& statement,
                                                 const ServerSettings& settings,
                                                 const SessionState& session);

/// Whether `statement`'s columns depend on more than its text and the current database (an
/// @@variable column is typed by the session's value), so that they must not be reused.
[[nodiscard]] bool columns_depend_on_session(const sql::Statement& statement,
                                             const SessionState& session);

}  // namespace ticketd::mysql
