// Session statements: SET and the variables behind SELECT @@x, SHOW of server state, USE, DO,
// KILL, and what the recognizer could not make sense of.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/mysql/error_mapping.h"
#include "server/mysql/query_executor.h"
#include "server/mysql/server_variables.h"
#include "server/mysql/statement_handlers.h"
#include "server/sql/evaluator.h"
#include "server/sql/token_cursor.h"

namespace ticketd::mysql {
namespace {

std::optional<bool> parse_bool(std::string_view v) {
  auto l = lower_ascii(v);
  if (l == "1" || l == "on" || l == "true") return true;
  if (l == "0" || l == "off" || l == "false") return false;
  return std::nullopt;
}

sql::Evaluation evaluate(const StatementCall& call, const sql::Assignment& a) {
  if (a.value && a.value->kind != sql::LiteralKind::kNull &&
      a.value->kind != sql::LiteralKind::kDefault) {
    return sql::Evaluation{a.value->text, sql::EvalFailure::kNotUnderstood};
  }
  sql::EvalLimits limits;
  limits.max_depth = QueryExecutor::kMaxExpressionDepth;
  limits.max_value_bytes = call.engine.settings.max_allowed_packet;
  return sql::evaluate(
      a.expr,
      [&call](sql::VariableScope scope, std::string_view n) {
        auto v = lookup_variable(call.engine.settings, call.session, n,
                                 scope == sql::VariableScope::kGlobal);
        return v ? std::optional(std::move(v->value)) : std::nullopt;
      },
      limits);
}

// The ERR for an expression that is too deep or too large; nullopt when it merely has no
// value (NULL, or something the evaluator does not understand).
std::optional<ErrResult> evaluation_error(const StatementCall& call, const sql::Evaluation& v,
                                          const sql::Assignment& a) {
  if (v.value) return std::nullopt;
  switch (v.failure) {
    case sql::EvalFailure::kTooDeep:
      return to_err(LimitErrc::kNestedTooDeep,
                    "You have an error in your SQL syntax; the value of '" +
                        clip_for_message(a.name) + "' is nested more than " +
                        std::to_string(QueryExecutor::kMaxExpressionDepth) + " levels deep");
    case sql::EvalFailure::kTooLarge:
      return to_err(LimitErrc::kValueTooLarge,
                    "Result of SET '" + clip_for_message(a.name) +
                        "' was larger than max_allowed_packet (" +
                        std::to_string(call.engine.settings.max_allowed_packet) + ")");
    case sql::EvalFailure::kNotUnderstood:
      break;
  }
  return std::nullopt;
}

// Names and values of every session and user variable, as counted against the budget.
std::uint64_t count_variable_bytes(const SessionState& s) {
  std::uint64_t n = 0;
  for (const auto* m : {&s.variables, &s.user_variables}) {
    for (const auto& [k, v] : *m) n += k.size() + v.size();
  }
  return n;
}

void warnings_result(StatementCall& call, std::string_view kind, std::optional<std::uint64_t> limit,
                     bool errors_only) {
  auto r = fixed_result_set(kind, call);
  for (const auto& w : call.session.warnings) {
    if (limit && r.rows.size() >= *limit) break;
    if (errors_only && w.level != "Error") continue;
    r.rows.push_back(Row{w.level, std::to_string(w.code), w.message});
  }
  call.done(std::move(r));
}

// A SHOW of constant rows, filtered on their first column.
void constant_rows(StatementCall& call, std::string_view kind, const sql::ShowFilter* filter,
                   std::initializer_list<Row> rows) {
  auto r = fixed_result_set(kind, call);
  for (const auto& row : rows) {
    if (filter == nullptr || passes(*filter, *row[0])) r.rows.push_back(row);
  }
  call.done(std::move(r));
}

// What applying a SET's assignments adds to the session, as its check phase counts it.
struct SetCost {
  std::uint64_t growth = 0;  // at most this many bytes more once applied
  std::size_t new_user = 0;
  std::size_t new_session = 0;
};

// Checks one assignment of a SET, keeping its value and adding what it costs; returns the ERR
// that refuses the whole statement.
std::optional<ErrResult> check_assignment(const StatementCall& call, const sql::Assignment& a,
                                          std::optional<std::string>& value, SetCost& cost) {
  const auto& s = call.session;
  const auto& settings = call.engine.settings;
  if (a.target == sql::AssignmentTarget::kNames ||
      a.target == sql::AssignmentTarget::kCharacterSet) {
    // Up to four character_set_* / collation_* entries, each a short name.
    cost.growth += 4 * (32 + (a.value ? a.value->text.size() : a.expr.size()) + a.collation.size());
    return std::nullopt;
  }
  if (a.target == sql::AssignmentTarget::kSystemVariable &&
      (a.scope == sql::VariableScope::kGlobal || a.scope == sql::VariableScope::kPersist ||
       a.scope == sql::VariableScope::kPersistOnly)) {
    return to_err(StatementErrc::kGlobalVariableDenied);
  }
  // mysqld's limit: a longer name is refused before anything is kept (a megabyte-long name
  // would be compared, and LIKE-matched by SHOW VARIABLES, at every lookup).
  if (a.name.size() > kMaxIdentifierLength) {
    return to_err(StatementErrc::kTooLongIdent, {clip_for_message(a.name)});
  }
  sql::Evaluation v = evaluate(call, a);
  if (auto e = evaluation_error(call, v, a)) return e;
  value = std::move(v.value);
  if (a.target == sql::AssignmentTarget::kUserVariable) {
    if (value && !s.user_variables.contains(a.name)) ++cost.new_user;
    if (value) cost.growth += a.name.size() + value->size();
    return std::nullopt;
  }
  if (a.name == "auto_increment_increment" || a.name == "auto_increment_offset") {
    const auto current = a.name == "auto_increment_increment" ? settings.auto_increment_increment
                                                              : settings.auto_increment_offset;
    if (value != std::to_string(current)) {
      return to_err(StatementErrc::kSessionOverrideRefused, {a.name, std::to_string(current)});
    }
  }
  if (a.name == "autocommit") {
    if (!value || !parse_bool(*value)) {
      return to_err(StatementErrc::kWrongValueForVariable,
                    {"autocommit", clip_for_message(a.expr)});
    }
    return std::nullopt;
  }
  // Recorded so SELECT @@x reads it back; an expression we cannot evaluate is kept as
  // written (drivers only read back what they set).
  if (!value) value = a.expr;
  if (!s.variables.contains(a.name)) ++cost.new_session;
  // transaction_isolation / tx_isolation are kept in two entries.
  cost.growth += 2 * (32 + a.name.size() + value->size());
  return std::nullopt;
}

// Refuses a SET that would pass the session's variable count or memory budget; otherwise
// charges its upper bound to the connection's memory.
std::optional<ErrResult> charge_set_cost(SessionState& s, const SetCost& cost) {
  if (s.user_variables.size() + cost.new_user > kMaxSessionVariables ||
      s.variables.size() + cost.new_session > kMaxSessionVariables) {
    return to_err(LimitErrc::kTooManyVariables,
                  "Too many variables in one session: at most " +
                      std::to_string(kMaxSessionVariables) +
                      " user variables and as many session variables");
  }
  if (auto verdict = s.memory.try_charge(cost.growth); verdict != ConnectionMemory::Verdict::kOk) {
    return to_err(verdict, s.memory);
  }
  return std::nullopt;
}

// Applies one checked assignment of a SET; true when it is an autocommit=1 that ends an open
// transaction, which MySQL commits.
bool apply_assignment(SessionState& s, const sql::Assignment& a,
                      std::optional<std::string>& value) {
  switch (a.target) {
    case sql::AssignmentTarget::kNames:
    case sql::AssignmentTarget::kCharacterSet: {
      auto cs = lower_ascii(a.value ? a.value->text : a.expr);
      if (cs == "default") cs = "utf8mb4";
      s.variables["character_set_client"] = cs;
      s.variables["character_set_results"] = cs;
      if (a.target == sql::AssignmentTarget::kNames) {
        s.variables["character_set_connection"] = cs;
        if (!a.collation.empty()) s.variables["collation_connection"] = lower_ascii(a.collation);
      }
      break;
    }
    case sql::AssignmentTarget::kUserVariable: {
      if (value) {
        s.user_variables[a.name] = std::move(*value);
      } else {
        s.user_variables.erase(a.name);
      }
      break;
    }
    case sql::AssignmentTarget::kSystemVariable: {
      if (a.name == "autocommit") {
        const bool on = *parse_bool(*value);
        const bool commit = on && s.in_transaction;  // as in MySQL
        if (on) s.in_transaction = false;
        s.autocommit = on;
        return commit;
      }
      s.variables[a.name] = std::move(*value);
      if (a.name == "transaction_isolation" || a.name == "tx_isolation") {
        s.variables["transaction_isolation"] = s.variables[a.name];
        s.variables["tx_isolation"] = s.variables[a.name];
      }
      break;
    }
  }
  return false;
}

// `growth` was an upper bound: keep charged exactly what the variables now hold.
void settle_variable_bytes(SessionState& s, std::uint64_t growth) {
  const std::uint64_t now = count_variable_bytes(s);
  const std::uint64_t charged = s.variable_bytes + growth;
  if (now <= charged) {
    s.memory.release(charged - now);
  } else {
    (void)s.memory.try_charge(now - charged);  // never: growth bounds every assignment
  }
  s.variable_bytes = now;
}

}  // namespace

void run(const sql::SetStatement& st, StatementCall& call) {
  auto& s = call.session;
  // Evaluate and check every assignment before applying any, as mysqld's check phase, so a
  // refused SET changes nothing.
  std::vector<std::optional<std::string>> values(st.assignments.size());
  SetCost cost;
  for (std::size_t i = 0; i < st.assignments.size(); ++i) {
    if (auto e = check_assignment(call, st.assignments[i], values[i], cost)) {
      return call.done(std::move(*e));
    }
  }
  if (auto e = charge_set_cost(s, cost)) return call.done(std::move(*e));
  bool commit_on_autocommit = false;
  for (std::size_t i = 0; i < st.assignments.size(); ++i) {
    if (apply_assignment(s, st.assignments[i], values[i])) commit_on_autocommit = true;
  }
  settle_variable_bytes(s, cost.growth);
  if (commit_on_autocommit && !s.gapless_holds.empty()) return end_transaction(call, true, false);
  call.done(OkResult{});
}

void run(const sql::SetTransaction&, StatementCall& call) { call.done(OkResult{}); }

void run(const sql::ShowVariables& st, StatementCall& call) {
  auto r = fixed_result_set(sql::ShowVariables::kName, call);
  for (auto& [k, v] :
       all_variables(call.engine.settings, call.session, st.scope == sql::VariableScope::kGlobal)) {
    if (passes(st.filter, k)) r.rows.push_back(Row{k, v});
  }
  call.done(std::move(r));
}

void run(const sql::ShowStatus& st, StatementCall& call) {
  const ExecutorEngine& ex = call.engine;
  auto r = fixed_result_set(sql::ShowStatus::kName, call);
  const auto uptime_s = (ex.clock.now_unix_ms() - ex.started_unix_ms) / 1000;
  ClusterView view;
  if (ex.gate != nullptr) view = ex.gate->view();
  if (ex.gate == nullptr) view.role = Role::kLeader;
  const std::pair<std::string, std::string> rows[] = {
      {"Questions", std::to_string(call.session.queries)},
      {"Ssl_cipher", call.session.tls_cipher},
      {"Ssl_version", call.session.tls_version},
      {"Ticketd_sequences", std::to_string(ex.tickets.list().size())},
      {"Ticketd_role", std::string(role_name(view.role))},
      {"Ticketd_leader_mysql", view.leader.mysql},
      {"Ticketd_leader_http", view.leader.http},
      {"Ticketd_term", std::to_string(view.revision)},
      {"Uptime", std::to_string(uptime_s)},
  };
  for (const auto& [k, v] : rows) {
    if (passes(st.filter, k)) r.rows.push_back(Row{k, v});
  }
  call.done(std::move(r));
}

void run(const sql::ShowWarnings& st, StatementCall& call) {
  warnings_result(call, sql::ShowWarnings::kName, st.limit, false);
}

void run(const sql::ShowErrors& st, StatementCall& call) {
  warnings_result(call, sql::ShowErrors::kName, st.limit, true);
}

void run(const sql::ShowDatabases& st, StatementCall& call) {
  constant_rows(call, sql::ShowDatabases::kName, &st.filter,
                {Row{"information_schema"}, Row{call.engine.settings.database}});
}

void run(const sql::ShowEngines&, StatementCall& call) {
  constant_rows(
      call, sql::ShowEngines::kName, nullptr,
      {Row{"InnoDB", "DEFAULT", "ticketd sequences (RocksDB underneath)", "YES", "NO", "NO"}});
}

void run(const sql::ShowCollation& st, StatementCall& call) {
  constant_rows(call, sql::ShowCollation::kName, &st.filter,
                {Row{"utf8mb4_general_ci", "utf8mb4", "45", "Yes", "Yes", "1"},
                 Row{"utf8_general_ci", "utf8", "33", "Yes", "Yes", "1"},
                 Row{"binary", "binary", "63", "Yes", "Yes", "1"}});
}

void run(const sql::ShowCharacterSet& st, StatementCall& call) {
  constant_rows(call, sql::ShowCharacterSet::kName, &st.filter,
                {Row{"utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", "4"},
                 Row{"binary", "Binary pseudo charset", "binary", "1"}});
}

void run(const sql::ShowProcesslist&, StatementCall& call) {
  const auto& s = call.session;
  constant_rows(call, sql::ShowProcesslist::kName, nullptr,
                {Row{std::to_string(s.connection_id), s.user, s.host,
                     s.database.empty() ? std::nullopt : std::optional(s.database), "Query", "0",
                     "", "SHOW PROCESSLIST"}});
}

void run(const sql::Use& st, StatementCall& call) {
  if (st.schema == call.engine.settings.database ||
      lower_ascii(st.schema) == "information_schema") {
    call.session.database = st.schema;
    return call.done(OkResult{});
  }
  call.done(to_err(StatementErrc::kBadDb, {clip_for_message(st.schema)}));
}

void run(const sql::Do&, StatementCall& call) { call.done(OkResult{}); }

void run(const sql::Kill& st, StatementCall& call) {
  call.done(to_err(StatementErrc::kUnknownThreadId, {std::to_string(st.connection_id)}));
}

void run(const sql::Unrecognized& st, StatementCall& call) {
  switch (st.kind) {
    case sql::UnrecognizedKind::kEmptyQuery:
      return call.done(to_err(StatementErrc::kEmptyQuery));
    case sql::UnrecognizedKind::kUnsupported:
      return call.done(to_err(StatementErrc::kNotSupported, {st.near}));
    case sql::UnrecognizedKind::kTooManyTokens:
      return call.done(
          to_err(LimitErrc::kTooManyTokens, "Statement too long: at most " +
                                                std::to_string(sql::kMaxStatementTokens) +
                                                " tokens are allowed in one statement"));
    case sql::UnrecognizedKind::kTooManyColumns:
      return call.done(
          to_err(LimitErrc::kTooManyColumns, "Too many columns: a select list holds at most " +
                                                 std::to_string(sql::kMaxSelectItems) + " items"));
    case sql::UnrecognizedKind::kSyntaxError:
      break;
  }
  // MySQL prints at most 80 characters of the remainder.
  call.done(to_err(StatementErrc::kParseError,
                   {std::string_view(st.near).substr(0, 80), std::to_string(st.line)}));
}

}  // namespace ticketd::mysql
