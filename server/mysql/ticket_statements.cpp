// Tickets: the Flickr recipe (REPLACE INTO t (stub) VALUES ('a')), the manual's counter UPDATE
// and Vitess's SELECT NEXT n VALUES.
#include <algorithm>
#include <string>
#include <utility>

#include "server/core/ticket_errc.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/statement_handlers.h"

namespace ticketd::mysql {

void run(const sql::InsertTicket& st, StatementCall& call) {
  const ExecutorEngine& ex = call.engine;
  auto& done = call.done;
  ErrResult e;
  auto name = call.resolve(st.table, e);
  if (!name) return done(e);
  for (std::size_t i = 0; i < st.values.size(); ++i) {
    if (!st.columns.empty() && st.values[i].size() != st.columns.size()) {
      return done(to_err(StatementErrc::kWrongValueCount, {std::to_string(i + 1)}));
    }
  }
  const std::uint64_t rows = std::max<std::uint64_t>(st.rows, 1);
  if (rows > ex.settings.max_block) {
    return done(to_err(StatementErrc::kWrongArguments, {"too many rows in one insert: at most " +
                                                        std::to_string(ex.settings.max_block)}));
  }
  // REPLACE over the stub row deletes and inserts: MySQL reports 2 affected rows per row.
  const std::uint64_t affected = st.is_replace ? rows * 2 : rows;
  // The cached path answers without building a callback (the common case: the Flickr recipe
  // on a sequence whose ceiling is ahead).
  if (auto seq = ex.tickets.find(*name)) {
    if (auto b = seq->try_take(rows)) {
      ex.issued_block(*name, b->count);
      call.session.last_insert_id = b->first;
      return done(OkResult{affected, b->first, 0, {}});
    }
  } else if (auto g = ex.tickets.find_gapless(*name)) {
    if (rows != 1) {
      return done(to_err(Error{TicketErrc::kWrongKind, "sequence '" + *name +
                                                           "' is gapless: one number per "
                                                           "statement, multi-row inserts are "
                                                           "refused"},
                         ex.qualified(*name)));
    }
    return take_gapless(call.session, g,
                        [ex = &ex, &s = call.session, done = std::move(done), n = *name,
                         affected](DetailedResult<std::uint64_t> v) {
                          if (!v) return done(to_err(v.error(), ex->qualified(n)));
                          ex->issued(n, 1);
                          s.last_insert_id = *v;
                          done(OkResult{affected, *v, 0, {}});
                        });
  }
  ex.tickets.next(
      *name, rows,
      call.resume<DetailedResult<Block>>([ex = &ex, &s = call.session, done = std::move(done),
                                          n = *name, affected](DetailedResult<Block> b) {
        if (!b) return done(to_err(b.error(), ex->qualified(n)));
        ex->issued_block(n, b->count);
        s.last_insert_id = b->first;  // the first of a multi-row insert
        done(OkResult{affected, b->first, 0, {}});
      }));
}

void run(const sql::UpdateCounter& st, StatementCall& call) {
  // The manual's idiom `UPDATE t SET id = LAST_INSERT_ID(id + 1)`: the counter row is the
  // sequence, and LAST_INSERT_ID() afterwards returns the new value.
  const ExecutorEngine& ex = call.engine;
  auto& done = call.done;
  ErrResult e;
  auto name = call.resolve(st.table, e);
  if (!name) return done(e);
  if (st.delta <= 0) {
    return done(
        to_err(StatementErrc::kNotSupported, {"UPDATE with a non-increasing LAST_INSERT_ID"}));
  }
  if (auto g = call.session.in_transaction ? ex.tickets.find_gapless(*name) : nullptr) {
    return take_gapless(call.session, g,
                        [ex = &ex, &s = call.session, done = std::move(done),
                         n = *name](DetailedResult<std::uint64_t> v) {
                          if (!v) return done(to_err(v.error(), ex->qualified(n)));
                          ex->issued(n, 1);
                          s.last_insert_id = *v;
                          done(OkResult{1, 0, 0, "Rows matched: 1  Changed: 1  Warnings: 0"});
                        });
  }
  ex.tickets.next(
      *name, 1,
      call.resume<DetailedResult<Block>>([ex = &ex, &s = call.session, done = std::move(done),
                                          n = *name](DetailedResult<Block> b) {
        if (!b) return done(to_err(b.error(), ex->qualified(n)));
        ex->issued(n, 1);
        s.last_insert_id = b->first;
        done(OkResult{1, 0, 0, "Rows matched: 1  Changed: 1  Warnings: 0"});
      }));
}

void run(const sql::SelectNextBlock& st, StatementCall& call) {
  const ExecutorEngine& ex = call.engine;
  auto& done = call.done;
  ErrResult e;
  auto name = call.resolve(st.sequence, e);
  if (!name) return done(e);
  if (st.count < 1 || static_cast<std::uint64_t>(st.count) > ex.settings.max_block) {
    return done(to_err(StatementErrc::kWrongArguments,
                       {"NEXT n VALUES needs 1 <= n <= " + std::to_string(ex.settings.max_block)}));
  }
  ex.tickets.next(*name, static_cast<std::uint64_t>(st.count),
                  call.resume<DetailedResult<Block>>(
                      [ex = &ex, &s = call.session, done = std::move(done), n = *name,
                       result = fixed_result_set(sql::SelectNextBlock::kName, call)](
                          DetailedResult<Block> b) mutable {
                        if (!b) return done(to_err(b.error(), ex->qualified(n)));
                        ex->issued_block(n, b->count);
                        s.last_values[n] = b->last();
                        result.rows.push_back(Row{std::to_string(b->first)});
                        done(std::move(result));
                      }));
}

}  // namespace ticketd::mysql
