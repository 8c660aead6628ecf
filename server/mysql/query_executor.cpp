#include "server/mysql/query_executor.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "server/mysql/error_mapping.h"
#include "server/mysql/statement_handlers.h"
#include "server/sql/recognizer.h"
#include "server/sql/statement_traits.h"

namespace ticketd::mysql {

QueryExecutor::QueryExecutor(TicketService& tickets, const ServerSettings& settings,
                             const Clock& clock, ExecutorHooks hooks, UuidV7Generator* uuids,
                             const ServingGate* gate, UlidGenerator* ulids)
    : engine_{tickets, settings, clock, std::move(hooks), uuids, gate, clock.now_unix_ms(), ulids},
      global_memory_(settings.global_connection_memory_limit) {}

void QueryExecutor::end_session(SessionState& session) const { release_holds(session); }

void QueryExecutor::execute(SessionState& session, std::string_view sql, Done done) const {
  constexpr std::size_t kMaxCachedText = 512;
  constexpr std::size_t kMaxCachedStatements = 32;
  if (sql.size() > kMaxCachedText) return execute(session, sql::recognize(sql), std::move(done));
  auto it = session.parsed.find(sql);
  if (it == session.parsed.end()) {
    if (session.parsed.size() >= kMaxCachedStatements) session.parsed.clear();
    it = session.parsed
             .emplace(std::string(sql),
                      std::make_shared<const ParsedStatement>(ParsedStatement{sql::recognize(sql)}))
             .first;
  }
  // Held by a shared_ptr: an inline completion may run the next statement, which may evict.
  auto parsed = it->second;
  const sql::Statement& statement = parsed->statement;
  run_statement(session, statement, std::move(done), std::move(parsed));
}

void QueryExecutor::execute(SessionState& session, const sql::Statement& statement,
                            Done done) const {
  run_statement(session, statement, std::move(done), nullptr);
}

void QueryExecutor::run_statement(SessionState& session, const sql::Statement& statement, Done done,
                                  std::shared_ptr<const ParsedStatement> parsed) const {
  if (engine_.hooks.on_statement) {
    // Latency is measured on the steady clock, as the HTTP front end does: the injected Clock
    // is wall time in milliseconds, too coarse for a cached ticket.
    session.timed = {std::move(done), sql::statement_kind_name(statement),
                     std::chrono::steady_clock::now()};
    done = [hook = &engine_.hooks.on_statement, s = &session](QueryResult&& r) {
      auto& t = s->timed;
      (*hook)(t.kind,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t.start).count());
      auto next = std::move(t.done);
      next(std::move(r));
    };
  }
  ++session.queries;
  const bool keeps_warnings = std::holds_alternative<sql::ShowWarnings>(statement) ||
                              std::holds_alternative<sql::ShowErrors>(statement);
  if (!keeps_warnings) session.warnings.clear();
  // SET autocommit=0 leaves the session in a transaction from its next statement on.
  if (!session.autocommit) session.in_transaction = true;
  if (engine_.gate != nullptr && sql::needs_leader(statement) && !engine_.gate->serving()) {
    return done(to_err(engine_.gate->not_serving_error(false), {}));
  }
  StatementCall call{engine_, session, std::move(done), &statement, std::move(parsed)};
  std::visit([&call](const auto& st) { run(st, call); }, statement);
}

}  // namespace ticketd::mysql
