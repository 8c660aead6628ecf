// SELECT: driver chatter (@@variables, DATABASE(), VERSION()), LAST_INSERT_ID() and the sequence
// functions NEXTVAL / LASTVAL / SETVAL. The columns come from the statement table, the same ones
// COM_STMT_PREPARE describes; this file fills the row.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "server/base/utc_time.h"
#include "server/core/ticket_errc.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/result_columns.h"
#include "server/mysql/server_variables.h"
#include "server/mysql/statement_handlers.h"
#include "server/net/completion.h"

namespace ticketd::mysql {
namespace {

// Evaluates the items left to right; NEXTVAL and SETVAL wait for the engine.
struct SelectRun : std::enable_shared_from_this<SelectRun> {
  // Holds the connection's cached recognition of the statement, or a copy of it: the caller's
  // statement may be gone once an item is in flight.
  SelectRun(const sql::Select& select, StatementCall& c)
      : owner(c.parsed != nullptr && c.statement != nullptr &&
                      std::get_if<sql::Select>(&c.parsed->statement) == &select
                  ? c.parsed
                  : std::make_shared<const ParsedStatement>(ParsedStatement{select})),
        call{c.engine, c.session, std::move(c.done), &owner->statement, owner},
        st(std::get<sql::Select>(owner->statement)),
        result(result_set_for(owner->statement, call)) {}

  const std::shared_ptr<const ParsedStatement> owner;
  StatementCall call;
  const sql::Select& st;  // in `owner`
  ResultSetResult result;
  Row row;
  std::size_t row_bytes = 0;
  // NEXTVAL / SETVAL items complete inline (cached path) or later; the loop in step() goes on
  // after an inline one instead of recursing, so 10,000 items need no deeper stack than one.
  net::CallLoop loop;

  [[nodiscard]] const ExecutorEngine& ex() const { return call.engine; }
  [[nodiscard]] SessionState& s() const { return call.session; }

  // A row larger than max_allowed_packet could not be sent: `SELECT @@v, @@v, ...` with an
  // 8 MiB @@v would otherwise build gigabytes.
  bool row_fits(std::size_t bytes) {
    row_bytes += bytes;
    if (row_bytes <= ex().settings.max_allowed_packet) return true;
    finish(to_err(LimitErrc::kValueTooLarge,
                  "Result of SELECT was larger than max_allowed_packet (" +
                      std::to_string(ex().settings.max_allowed_packet) + ")"));
    return false;
  }

  // Called by an async item when its value is in the row.
  void resumed(std::size_t next) {
    if (loop.answered_inline()) return;  // step()'s loop goes on
    step(next);
  }

  void step(std::size_t i) {
    for (; i < st.items.size(); ++i) {
      const auto& item = st.items[i];
      switch (item.kind) {
        case sql::SelectItemKind::kLiteral:
          if (item.literal.kind == sql::LiteralKind::kNull) {
            row.emplace_back(std::nullopt);
          } else if (item.literal.kind == sql::LiteralKind::kInteger) {
            row.emplace_back(std::to_string(item.literal.integer));
          } else {
            row.emplace_back(item.literal.text);
          }
          break;
        case sql::SelectItemKind::kSystemVariable: {
          auto v = lookup_variable(ex().settings, s(), item.variable,
                                   item.scope == sql::VariableScope::kGlobal);
          if (!v) return finish(to_err(StatementErrc::kUnknownSystemVariable, {item.variable}));
          if (!row_fits(v->value.size())) return;
          row.emplace_back(std::move(v->value));
          break;
        }
        case sql::SelectItemKind::kUserVariable: {
          auto it = s().user_variables.find(item.variable);
          if (it != s().user_variables.end() && !row_fits(it->second.size())) return;
          row.emplace_back(it == s().user_variables.end() ? std::nullopt
                                                          : std::optional(it->second));
          break;
        }
        case sql::SelectItemKind::kLastInsertId:
          row.emplace_back(std::to_string(s().last_insert_id));
          break;
        case sql::SelectItemKind::kDatabase:
          row.emplace_back(s().database.empty() ? std::nullopt : std::optional(s().database));
          break;
        case sql::SelectItemKind::kVersion:
          row.emplace_back(ex().settings.version);
          break;
        case sql::SelectItemKind::kUser:
          row.emplace_back(s().user + "@" + s().host);
          break;
        case sql::SelectItemKind::kCurrentUser:
          row.emplace_back(s().user + "@%");
          break;
        case sql::SelectItemKind::kConnectionId:
          row.emplace_back(std::to_string(s().connection_id));
          break;
        case sql::SelectItemKind::kUuidV7:
          if (ex().uuids == nullptr) {
            return finish(to_err(StatementErrc::kNotSupported, {"UUID_V7()"}));
          }
          row.emplace_back(ticketd::to_string(ex().uuids->next()));
          break;
        case sql::SelectItemKind::kUlid: {
          if (ex().ulids == nullptr) {
            return finish(to_err(StatementErrc::kNotSupported, {"ULID()"}));
          }
          // The function's generator counts ahead of the clock (kLogical): it never waits.
          auto next = ex().ulids->try_next();
          if (!next.ok()) return finish(to_err(next.error, "ULID()"));
          row.emplace_back(ulid_to_string(next.id));
          break;
        }
        case sql::SelectItemKind::kNow:
        case sql::SelectItemKind::kUtcTimestamp:
          row.emplace_back(format_utc_datetime(ex().clock.now_unix_ms()));
          break;
        case sql::SelectItemKind::kLastValue: {
          ErrResult e;
          auto name = call.resolve(item.sequence, e);
          if (!name) return finish(e);
          if (!ex().tickets.exists(*name)) {
            return finish(to_err(Error{TicketErrc::kUnknownSequence, {}}, ex().qualified(*name)));
          }
          auto it = s().last_values.find(*name);
          row.emplace_back(it == s().last_values.end() ? std::nullopt
                                                       : std::optional(std::to_string(it->second)));
          break;
        }
        case sql::SelectItemKind::kNextValue:
        case sql::SelectItemKind::kSetValue: {
          loop.calling();
          async_item(i);
          if (loop.answers_later()) return;
          break;
        }
      }
    }
    if (!(st.limit && *st.limit == 0) && !(st.offset && *st.offset > 0)) {
      result.rows.push_back(std::move(row));
    }
    finish(std::move(result));
  }

  void async_item(std::size_t i) {
    const auto& item = st.items[i];
    ErrResult e;
    auto name = call.resolve(item.sequence, e);
    if (!name) return finish(e);
    auto self = shared_from_this();
    if (item.kind == sql::SelectItemKind::kNextValue) {
      if (auto g = ex().tickets.find_gapless(*name)) {
        take_gapless(s(), g, [self, i, n = *name](DetailedResult<std::uint64_t> v) {
          if (!v) return self->finish(to_err(v.error(), self->ex().qualified(n)));
          self->ex().issued(n, 1);
          self->s().last_values[n] = *v;
          self->row.emplace_back(std::to_string(*v));
          self->resumed(i + 1);
        });
        return;
      }
      if (auto kind = ex().tickets.kind_of(*name); kind && !kind_row(*kind).integer_ids) {
        return next_text(i, *name);
      }
      ex().tickets.next(
          *name, 1,
          call.resume<DetailedResult<Block>>([self, i, n = *name](DetailedResult<Block> b) {
            if (!b) return self->finish(to_err(b.error(), self->ex().qualified(n)));
            self->ex().issued(n, 1);
            self->s().last_values[n] = b->first;
            self->row.emplace_back(std::to_string(b->first));
            self->resumed(i + 1);
          }));
      return;
    }
    // SETVAL(s, n): moves the sequence forward so the next value is above n (or n itself
    // when is_used is false); returns n, or NULL when the sequence is already past it.
    if (item.setval_value < 0) {
      return finish(to_err(StatementErrc::kNotSupported, {"SETVAL to a negative value"}));
    }
    auto seq = ex().tickets.find(*name);
    if (!seq) {
      return finish(to_err(Error{TicketErrc::kUnknownSequence, {}}, ex().qualified(*name)));
    }
    // With is_used (the default) n itself counts as issued, so the next value is above n;
    // n may be max_value, which exhausts the sequence as in MariaDB.
    const auto value = static_cast<std::uint64_t>(item.setval_value);
    const auto info = seq->info();
    const bool already_past = info.exhausted || (item.setval_is_used ? info.next_value > value
                                                                     : info.next_value >= value);
    if (already_past) {
      row.emplace_back(std::nullopt);
      return resumed(i + 1);
    }
    auto then =
        call.resume<DetailedResult<Block>>([self, i, value, n = *name](DetailedResult<Block> b) {
          if (!b) return self->finish(to_err(b.error(), self->ex().qualified(n)));
          self->row.emplace_back(std::to_string(value));
          self->resumed(i + 1);
        });
    // Through the registry, which records the move in the audit trail.
    if (item.setval_is_used) {
      ex().tickets.advance_past(*name, value, std::move(then));
    } else {
      ex().tickets.advance_to(*name, value, std::move(then));
    }
  }

  // NEXTVAL of a sequence whose IDs are text (UUIDv7, ULID): the column is text, chosen here
  // because the kind is the engine's to know when the statement runs (a prepared statement
  // described it as an integer; the execution's column definitions say text).
  void next_text(std::size_t i, const std::string& name) {
    ex().tickets.next_text(
        name, 1, TextForm::kCanonical,
        call.resume<DetailedResult<std::vector<std::string>>>(
            [self = shared_from_this(), i, name](DetailedResult<std::vector<std::string>> ids) {
              if (!ids) return self->finish(to_err(ids.error(), self->ex().qualified(name)));
              self->ex().issued(name, 1);
              std::vector<Column> columns = self->result.columns.get();
              columns.at(i).kind =
                  column_kind(sql::ResultColumn{columns[i].name, sql::ColumnType::kText},
                              self->ex().settings, self->s());
              self->result.columns = std::move(columns);
              self->row.emplace_back(std::move(ids->front()));
              self->resumed(i + 1);
            }));
  }

  void finish(QueryResult&& r) { call.done(std::move(r)); }
};

}  // namespace

void run(const sql::Select& st, StatementCall& call) {
  // The common case, one NEXTVAL of a ticket sequence with values cached (drivers' and the
  // benchmarks' `SELECT NEXTVAL(t)`): answered inline, with no run object, no copy of the
  // statement and no engine callback.
  if (st.items.size() == 1 && st.items[0].kind == sql::SelectItemKind::kNextValue && !st.limit &&
      !st.offset) {
    ErrResult e;
    auto name = call.resolve(st.items[0].sequence, e);
    if (!name) return call.done(e);
    if (auto seq = call.engine.tickets.find(*name)) {
      if (auto b = seq->try_take(1)) {
        call.engine.issued(*name, 1);
        call.session.last_values[*name] = b->first;
        ResultSetResult result = result_set_for(*call.statement, call);
        result.rows.push_back(Row{std::to_string(b->first)});
        return call.done(std::move(result));
      }
    }
  }
  const bool waits = std::any_of(st.items.begin(), st.items.end(), [](const sql::SelectItem& i) {
    return i.kind == sql::SelectItemKind::kNextValue || i.kind == sql::SelectItemKind::kSetValue;
  });
  if (!waits) {
    // Every item is evaluated inline (SELECT LAST_INSERT_ID(), @@variables): no run object on
    // the heap, since nothing can answer after this call.
    SelectRun run(st, call);
    run.step(0);
    return;
  }
  std::make_shared<SelectRun>(st, call)->step(0);
}

}  // namespace ticketd::mysql
