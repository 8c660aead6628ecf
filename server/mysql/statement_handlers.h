// One handler per statement kind, grouped by feature; QueryExecutor dispatches to them. Each
// completes `call.done` exactly once. Internal to server/mysql.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "server/mysql/statement_call.h"

namespace ticketd::mysql {

// ---- tickets: ticket_statements.cpp -----------------------------------------------------------
void run(const sql::InsertTicket& st, StatementCall& call);
void run(const sql::UpdateCounter& st, StatementCall& call);
void run(const sql::SelectNextBlock& st, StatementCall& call);

// ---- transactions and gapless numbers: transaction_statements.cpp -----------------------------
void run(const sql::Begin& st, StatementCall& call);
void run(const sql::Commit& st, StatementCall& call);
void run(const sql::Rollback& st, StatementCall& call);
/// One number of a gapless sequence: inside a transaction it is reserved and held until
/// COMMIT / ROLLBACK; in autocommit mode it is reserved and committed in one durable write.
void take_gapless(SessionState& session, const std::shared_ptr<GaplessSequence>& sequence,
                  std::function<void(DetailedResult<std::uint64_t>)> then);
/// COMMIT / ROLLBACK / BEGIN / SET autocommit=1: settles held numbers, then answers OK.
void end_transaction(StatementCall& call, bool commit, bool begin_another);
/// Releases every gapless number `session` holds (the connection ends or is reset).
void release_holds(SessionState& session);

// ---- SELECT: select_statement.cpp -------------------------------------------------------------
void run(const sql::Select& st, StatementCall& call);

// ---- DDL and SHOW of sequences and tables: ddl_statements.cpp ---------------------------------
void run(const sql::CreateTable& st, StatementCall& call);
void run(const sql::CreateSequence& st, StatementCall& call);
void run(const sql::AlterTable& st, StatementCall& call);
void run(const sql::AlterSequence& st, StatementCall& call);
void run(const sql::DropTable& st, StatementCall& call);
void run(const sql::DropSequence& st, StatementCall& call);
void run(const sql::TruncateTable& st, StatementCall& call);
void run(const sql::ShowCreateTable& st, StatementCall& call);
void run(const sql::ShowCreateSequence& st, StatementCall& call);
void run(const sql::ShowColumns& st, StatementCall& call);
void run(const sql::ShowTables& st, StatementCall& call);
void run(const sql::ShowTableStatus& st, StatementCall& call);

// ---- session: session_statements.cpp ----------------------------------------------------------
void run(const sql::SetStatement& st, StatementCall& call);
void run(const sql::SetTransaction& st, StatementCall& call);
void run(const sql::ShowVariables& st, StatementCall& call);
void run(const sql::ShowStatus& st, StatementCall& call);
void run(const sql::ShowWarnings& st, StatementCall& call);
void run(const sql::ShowErrors& st, StatementCall& call);
void run(const sql::ShowDatabases& st, StatementCall& call);
void run(const sql::ShowEngines& st, StatementCall& call);
void run(const sql::ShowCollation& st, StatementCall& call);
void run(const sql::ShowCharacterSet& st, StatementCall& call);
void run(const sql::ShowProcesslist& st, StatementCall& call);
void run(const sql::Use& st, StatementCall& call);
void run(const sql::Do& st, StatementCall& call);
void run(const sql::Kill& st, StatementCall& call);
void run(const sql::Unrecognized& st, StatementCall& call);

}  // namespace ticketd::mysql
