// What a MySQL connection asks of the layer that executes its statements.
#pragma once

#include <functional>
#include <string_view>

#include "server/mysql/connection_memory.h"
#include "server/mysql/query_result.h"
#include "server/mysql/session_state.h"
#include "server/sql/statement.h"

namespace ticketd::mysql {

/// The boundary between ServerConnection (protocol decisions, bytes in and out) and statement
/// execution: QueryExecutor implements it over the engine, and tests implement it with
/// scripted answers, so a conversation can be tested in bytes without an engine.
///
/// `done` runs exactly once, inline or on another thread; the caller does not touch `session`
/// until it has run. Thread safety: implementations serve every connection concurrently.
class CommandHandler {
 public:
  using Done = std::function<void(QueryResult&&)>;

  virtual ~CommandHandler() = default;

  /// Recognizes and executes one statement (multi-statement text is split by the caller).
  virtual void execute(SessionState& session, std::string_view sql, Done done) const = 0;
  virtual void execute(SessionState& session, const sql::Statement& statement, Done done) const = 0;
  /// The connection ends or is reset: whatever the session still holds is released.
  virtual void end_session(SessionState& session) const = 0;
  [[nodiscard]] virtual const ServerSettings& settings() const = 0;
  /// A memory account for a new connection.
  [[nodiscard]] virtual ConnectionMemory connection_memory() const = 0;
};

}  // namespace ticketd::mysql
