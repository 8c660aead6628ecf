// What the executor's per-feature handlers share: the engine they run against, one statement's
// call (session and completion), and the small helpers every feature needs. Internal to
// server/mysql: QueryExecutor is the public face.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/core/clock.h"
#include "server/core/serving_gate.h"
#include "server/core/ticket_service.h"
#include "server/core/ulid_generator.h"
#include "server/core/uuidv7_generator.h"
#include "server/mysql/query_result.h"
#include "server/mysql/session_state.h"
#include "server/sql/statement.h"

namespace ticketd::mysql {

/// Observers of what the executor does, for metrics. Every member may be empty; they are called
/// on the session's strand (an I/O thread), never on the engine's committer.
struct ExecutorHooks {
  /// `count` values of `sequence` handed out (single tickets and blocks alike).
  std::function<void(std::string_view sequence, std::uint64_t count)> on_issued;
  /// One statement took `size` (> 1) values of `sequence` in one call: a multi-row INSERT /
  /// REPLACE or SELECT NEXT n VALUES. Its values are also reported through on_issued.
  std::function<void(std::string_view sequence, std::uint64_t size)> on_block_leased;
  /// A statement of `kind` (sql::statement_kind_name) answered after `seconds`.
  std::function<void(std::string_view kind, double seconds)> on_statement;
};

/// The collaborators every statement runs against; owned by QueryExecutor, shared by all
/// sessions. Thread safety: read-only after construction, except the engine's own members.
struct ExecutorEngine {
  TicketService& tickets;
  const ServerSettings& settings;
  const Clock& clock;
  ExecutorHooks hooks;
  UuidV7Generator* uuids = nullptr;
  const ServingGate* gate = nullptr;  // null: always serving (no election)
  std::int64_t started_unix_ms = 0;
  UlidGenerator* ulids = nullptr;  // ULID(); null: refused

  /// "tickets.Tickets64": the name MySQL prints in messages.
  [[nodiscard]] std::string qualified(std::string_view name) const {
    return settings.database + "." + std::string(name);
  }
  void issued(std::string_view sequence, std::uint64_t count) const {
    if (hooks.on_issued) hooks.on_issued(sequence, count);
  }
  /// Reports the values, and the block when the call took more than one.
  void issued_block(std::string_view sequence, std::uint64_t count) const {
    issued(sequence, count);
    if (count > 1 && hooks.on_block_leased) hooks.on_block_leased(sequence, count);
  }
};

using ExecutorDone = std::function<void(QueryResult&&)>;

/// One statement being executed: `done` must run exactly once, on the session's strand (inline,
/// or from an engine callback wrapped by resume()); `session` must not be touched after it ran.
struct StatementCall {
  const ExecutorEngine& engine;
  SessionState& session;
  ExecutorDone done;
  /// The whole statement being run (the handler gets its alternative); lives until `done` ran
  /// only if the handler answers inline, so a handler that answers later keeps its own copy.
  const sql::Statement* statement;
  /// The connection's cached recognition of the statement's text (null when it was not cached):
  /// a handler that answers later may hold it instead of copying the statement.
  std::shared_ptr<const ParsedStatement> parsed;

  /// Wraps a callback given to the engine: `then` runs on the session's strand with the
  /// engine's answer of type T (net::Completion), never on the engine's committer thread.
  template <class T, class Then>
  [[nodiscard]] auto resume(Then then) const {
    return session.completion->resume<T>(std::move(then));
  }
  /// Resolves `db.table` / `table` to a sequence name, or fails as MySQL would.
  [[nodiscard]] std::optional<std::string> resolve(const sql::TableName& table,
                                                   ErrResult& error) const;
};

/// The number of notes a statement keeps (mysqld's max_error_count default).
inline constexpr std::size_t kMaxErrorCount = 1024;

[[nodiscard]] std::string lower_ascii(std::string_view s);
/// Whether a SHOW row whose matched column holds `value` passes the statement's filter.
[[nodiscard]] bool passes(const sql::ShowFilter& filter, std::string_view value);
/// A result set with the columns `statement` is described with (sql::result_columns), so what
/// COM_STMT_PREPARE describes is what execution sends.
[[nodiscard]] ResultSetResult result_set_for(const sql::Statement& statement,
                                             const StatementCall& call);
/// result_set_for() of a statement kind whose columns are fixed (SHOW VARIABLES, ...), named by
/// its kName, without building a Statement.
[[nodiscard]] ResultSetResult fixed_result_set(std::string_view kind, const StatementCall& call);

}  // namespace ticketd::mysql
