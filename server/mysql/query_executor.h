// Executes recognized SQL statements against the engine for one MySQL session.
#pragma once

#include <functional>
#include <string_view>

#include "server/core/clock.h"
#include "server/core/serving_gate.h"
#include "server/core/ticket_service.h"
#include "server/core/uuidv7_generator.h"
#include "server/mysql/query_result.h"
#include "server/mysql/session_state.h"
#include "server/sql/statement.h"

namespace ticketd::mysql {

/// With a ServingGate, statements that read or change sequences are refused with ERR 1290
/// (naming the leader) while the gate is closed; session chatter and SHOW STATUS still work, so
/// drivers connect to a standby and learn who leads.
///
/// Turns a Statement into a QueryResult: takes tickets, creates and drops sequences, answers the
/// session chatter drivers send. Knows SQL meaning and the engine, not packets or sockets.
///
/// `done` runs exactly once, either inline or on the engine's committer thread; the caller must
/// not touch `session` until it has run. Thread safety: one executor serves every session
/// concurrently; it holds no per-session state.
class QueryExecutor {
 public:
  /// Nesting levels of parentheses and function calls a SET expression may have (the
  /// evaluator recurses once per level; mysqld's parser has a similar stack bound).
  static constexpr std::size_t kMaxExpressionDepth = 64;

  using Done = std::function<void(QueryResult)>;
  /// Called for every value handed out (sequence, count): metrics.
  using IssuedHook = std::function<void(std::string_view, std::uint64_t)>;

  QueryExecutor(TicketService& tickets, const ServerSettings& settings, const Clock& clock,
                IssuedHook on_issued = {}, UuidV7Generator* uuids = nullptr,
                const ServingGate* gate = nullptr);

  /// Recognizes and executes one statement (multi-statement text is split by the caller).
  void execute(SessionState& session, std::string_view sql, Done done) const;
  void execute(SessionState& session, const sql::Statement& statement, Done done) const;

  /// The connection ends or is reset: releases every gapless number it still holds.
  void end_session(SessionState& session) const;

  [[nodiscard]] const ServerSettings& settings() const { return settings_; }
  /// A memory account for a new connection, within settings().connection_memory_limit and the
  /// budget every connection shares (settings().global_connection_memory_limit).
  [[nodiscard]] ConnectionMemory connection_memory() const {
    return ConnectionMemory(settings_.connection_memory_limit, &global_memory_);
  }
  [[nodiscard]] const MemoryBudget& global_memory() const { return global_memory_; }

 private:
  struct Visitor;

  TicketService& tickets_;
  const ServerSettings& settings_;
  const Clock& clock_;
  IssuedHook on_issued_;
  UuidV7Generator* uuids_;
  const ServingGate* gate_;  // null: always serving (no election)
  std::int64_t started_unix_ms_;
  mutable MemoryBudget global_memory_;  // thread-safe: shared by every connection's account
};

}  // namespace ticketd::mysql
