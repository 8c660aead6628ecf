// Executes recognized SQL statements against the engine for one MySQL session.
#pragma once

#include <functional>
#include <string_view>

#include "server/core/clock.h"
#include "server/core/serving_gate.h"
#include "server/core/ticket_service.h"
#include "server/core/uuidv7_generator.h"
#include "server/mysql/command_handler.h"
#include "server/mysql/connection_memory.h"
#include "server/mysql/query_result.h"
#include "server/mysql/session_state.h"
#include "server/mysql/statement_call.h"
#include "server/sql/statement.h"

namespace ticketd::mysql {

/// With a ServingGate, statements the statement table marks as needing the leader
/// (sql::needs_leader) are refused with ERR 1290 (naming the leader) while the gate is closed;
/// session chatter and SHOW STATUS still work, so drivers connect to a standby and learn who
/// leads.
///
/// Turns a Statement into a QueryResult: takes tickets, creates and drops sequences, answers the
/// session chatter drivers send. Knows SQL meaning and the engine, not packets or sockets. The
/// work is split by feature into the handlers of statement_handlers.h; this class checks the
/// gate, times the statement for the hooks and dispatches.
///
/// `done` runs exactly once, either inline or on the engine's committer thread; the caller must
/// not touch `session` until it has run. Thread safety: one executor serves every session
/// concurrently; it holds no per-session state.
class QueryExecutor final : public CommandHandler {
 public:
  /// Nesting levels of parentheses and function calls a SET expression may have (the
  /// evaluator recurses once per level; mysqld's parser has a similar stack bound).
  static constexpr std::size_t kMaxExpressionDepth = 64;

  QueryExecutor(TicketService& tickets, const ServerSettings& settings, const Clock& clock,
                ExecutorHooks hooks = {}, UuidV7Generator* uuids = nullptr,
                const ServingGate* gate = nullptr, UlidGenerator* ulids = nullptr);

  /// Recognizes and executes one statement (multi-statement text is split by the caller).
  void execute(SessionState& session, std::string_view sql, Done done) const override;
  void execute(SessionState& session, const sql::Statement& statement, Done done) const override;

  /// The connection ends or is reset: releases every gapless number it still holds.
  void end_session(SessionState& session) const override;

  [[nodiscard]] const ServerSettings& settings() const override { return engine_.settings; }
  /// A memory account for a new connection, within settings().connection_memory_limit and the
  /// budget every connection shares (settings().global_connection_memory_limit).
  [[nodiscard]] ConnectionMemory connection_memory() const override {
    return ConnectionMemory(engine_.settings.connection_memory_limit, &global_memory_);
  }
  [[nodiscard]] const MemoryBudget& global_memory() const { return global_memory_; }

 private:
  // `parsed`: the connection's cached recognition `statement` belongs to, or null.
  void run_statement(SessionState& session, const sql::Statement& statement, Done done,
                     std::shared_ptr<const ParsedStatement> parsed) const;

  ExecutorEngine engine_;
  mutable MemoryBudget global_memory_;  // thread-safe: shared by every connection's account
};

}  // namespace ticketd::mysql
