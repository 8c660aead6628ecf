#include "server/sql/recognizer.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/parse_int.h"
#include "server/sql/lexer.h"
#include "server/sql/recognizer_parser.h"
#include "server/sql/token_cursor.h"

namespace ticketd::sql {
namespace {

using namespace detail;  // the parser and the clauses and families in other files

// ---- INSERT / REPLACE / UPDATE ----------------------------------------------------------------

// One parenthesized row of VALUES; `()` is an empty row.
bool values_row(Parser& p, std::vector<std::string>& row) {
  if (!p.accept_operator("(")) return p.fail(), false;
  if (p.accept_operator(")")) return true;
  do {
    std::optional<std::string_view> value = p.expression();
    if (!value) return false;
    row.emplace_back(*value);
  } while (p.accept_operator(","));
  if (!p.accept_operator(")")) return p.fail(), false;
  return true;
}

Statement parse_insert(Parser& p, bool is_replace) {
  const std::size_t start = p.position() - 1;
  InsertTicket s;
  s.is_replace = is_replace;
  while (p.accept_keyword("LOW_PRIORITY") || p.accept_keyword("DELAYED") ||
         p.accept_keyword("HIGH_PRIORITY")) {
  }
  s.is_ignore = p.accept_keyword("IGNORE");
  p.accept_keyword("INTO");
  std::optional<TableName> table = p.table_name();
  if (!table) return p.fail();
  s.table = std::move(*table);
  if (p.at_keyword("PARTITION")) return p.unsupported_from(start);
  if (p.at_operator("(") && !p.at_keyword("SELECT", 1) && !p.at_keyword("WITH", 1)) {
    p.advance();
    if (!p.accept_operator(")")) {
      do {
        std::optional<std::string> column = p.identifier();
        if (!column) return p.fail();
        s.columns.push_back(std::move(*column));
      } while (p.accept_operator(","));
      if (!p.accept_operator(")")) return p.fail();
    }
  }
  if (p.accept_keyword("VALUES") || p.accept_keyword("VALUE")) {
    do {
      s.values.emplace_back();
      if (!values_row(p, s.values.back())) return p.fail();
    } while (p.accept_operator(","));
  } else if (s.columns.empty() && p.accept_keyword("SET")) {
    s.values.emplace_back();
    do {
      std::optional<std::string> column = p.identifier();
      if (!column || !p.accept_operator("=")) return p.fail();
      s.columns.push_back(std::move(*column));
      std::optional<std::string_view> value = p.expression({"ON"});
      if (!value) return p.fail();
      s.values.back().emplace_back(*value);
    } while (p.accept_operator(","));
  } else if (p.at_keyword("SELECT") || p.at_keyword("WITH") || p.at_keyword("TABLE") ||
             p.at_operator("(")) {
    return p.unsupported_from(start);
  } else {
    return p.fail();
  }
  s.rows = s.values.size();
  if (p.at_keyword("AS")) return p.unsupported_from(start);
  if (!is_replace && p.accept_keywords({"ON", "DUPLICATE", "KEY", "UPDATE"})) {
    const std::size_t begin = p.position();
    while (!p.at_statement_end()) p.advance();
    if (p.position() == begin) return p.fail();
    s.on_duplicate_key_update = std::string(p.text(begin, p.position()));
  }
  return p.finish(std::move(s));
}

// UPDATE t SET col = LAST_INSERT_ID(col + n) [WHERE c = v] [LIMIT 1]; other UPDATEs are
// unsupported.
Statement parse_update(Parser& p) {
  const std::size_t start = p.position() - 1;
  UpdateCounter s;
  p.accept_keyword("LOW_PRIORITY");
  p.accept_keyword("IGNORE");
  std::optional<TableName> table = p.table_name();
  if (!table) return p.fail();
  s.table = std::move(*table);
  if (!p.accept_keyword("SET")) return p.unsupported_from(start);
  std::optional<std::string> column = p.identifier();
  if (!column || !p.accept_operator("=") || !p.accept_keyword("LAST_INSERT_ID") ||
      !p.accept_operator("(")) {
    return p.unsupported_from(start);
  }
  std::optional<std::string> inner = p.identifier();
  if (!inner || !iequals(*inner, *column)) return p.unsupported_from(start);
  s.column = std::move(*column);
  if (p.at_operator("+") || p.at_operator("-")) {
    const bool minus = p.advance().text == "-";
    std::optional<std::int64_t> delta = p.signed_integer();
    if (!delta) return p.unsupported_from(start);
    s.delta = minus ? -*delta : *delta;
  }
  if (!p.accept_operator(")")) return p.unsupported_from(start);
  if (p.accept_keyword("WHERE")) {
    ColumnEquals where;
    std::optional<std::string> where_column = p.identifier();
    std::optional<Literal> value;
    if (where_column && p.accept_operator("=")) value = p.literal(false);
    if (!value) return p.unsupported_from(start);
    where.column = std::move(*where_column);
    where.value = std::move(*value);
    s.where = std::move(where);
  }
  if (p.accept_keyword("LIMIT")) {
    std::optional<std::uint64_t> limit;
    std::optional<std::uint64_t> offset;
    if (!limit_clause(p, limit, offset)) return p.fail();
  }
  if (!p.at_statement_end()) return p.unsupported_from(start);
  return p.finish(std::move(s));
}

// ---- SELECT ----------------------------------------------------------------------------------

enum class FunctionArgs { kNone, kPrecision, kSequence, kSetval };

// The functions a SELECT item may call: one row per function.
struct SelectFunction {
  std::string_view name;
  SelectItemKind kind;
  FunctionArgs args;
  bool parens_optional;  // CURRENT_USER and the SQL-standard time functions
};

constexpr auto kSelectFunctions = std::to_array<SelectFunction>({
    {"LAST_INSERT_ID", SelectItemKind::kLastInsertId, FunctionArgs::kNone, false},
    {"DATABASE", SelectItemKind::kDatabase, FunctionArgs::kNone, false},
    {"SCHEMA", SelectItemKind::kDatabase, FunctionArgs::kNone, false},
    {"VERSION", SelectItemKind::kVersion, FunctionArgs::kNone, false},
    {"USER", SelectItemKind::kUser, FunctionArgs::kNone, false},
    {"SESSION_USER", SelectItemKind::kUser, FunctionArgs::kNone, false},
    {"SYSTEM_USER", SelectItemKind::kUser, FunctionArgs::kNone, false},
    {"CURRENT_USER", SelectItemKind::kCurrentUser, FunctionArgs::kNone, true},
    {"CONNECTION_ID", SelectItemKind::kConnectionId, FunctionArgs::kNone, false},
    {"NOW", SelectItemKind::kNow, FunctionArgs::kPrecision, false},
    {"SYSDATE", SelectItemKind::kNow, FunctionArgs::kPrecision, false},
    {"CURRENT_TIMESTAMP", SelectItemKind::kNow, FunctionArgs::kPrecision, true},
    {"LOCALTIME", SelectItemKind::kNow, FunctionArgs::kPrecision, true},
    {"LOCALTIMESTAMP", SelectItemKind::kNow, FunctionArgs::kPrecision, true},
    {"UTC_TIMESTAMP", SelectItemKind::kUtcTimestamp, FunctionArgs::kPrecision, true},
    {"UUID_V7", SelectItemKind::kUuidV7, FunctionArgs::kNone, false},
    {"ULID", SelectItemKind::kUlid, FunctionArgs::kNone, false},
    {"NEXTVAL", SelectItemKind::kNextValue, FunctionArgs::kSequence, false},
    {"LASTVAL", SelectItemKind::kLastValue, FunctionArgs::kSequence, false},
    {"SETVAL", SelectItemKind::kSetValue, FunctionArgs::kSetval, false},
});

// Words that end a SELECT item rather than name it (`SELECT 1 FROM DUAL`, not alias "FROM").
bool is_clause_keyword(const Token& t) {
  return is_one_of(t, {"FROM", "LIMIT", "WHERE", "INTO", "UNION", "GROUP", "ORDER", "HAVING", "FOR",
                       "LOCK", "WINDOW", "PROCEDURE", "EXCEPT", "INTERSECT"});
}

// Arguments of a known function, after its '('. Returns false when they are not a form ticketd
// supports (the item is then reported as unsupported).
bool function_args(Parser& p, const SelectFunction& f, SelectItem& item) {
  switch (f.args) {
    case FunctionArgs::kNone:
      break;
    case FunctionArgs::kPrecision:
      if (p.peek().kind == TokenKind::kNumber) {
        std::optional<std::uint64_t> digits = p.unsigned_integer();
        if (!digits || *digits > 6) return false;
        item.fractional_seconds = static_cast<unsigned>(*digits);
      }
      break;
    case FunctionArgs::kSequence:
    case FunctionArgs::kSetval: {
      std::optional<TableName> sequence = p.table_name();
      if (!sequence) return false;
      item.sequence = std::move(*sequence);
      if (f.args == FunctionArgs::kSequence) break;
      if (!p.accept_operator(",")) return false;
      std::optional<std::int64_t> value = p.signed_integer();
      if (!value) return false;
      item.setval_value = *value;
      if (p.accept_operator(",")) {
        std::optional<Literal> used = p.literal(false);
        if (!used || used->kind != LiteralKind::kInteger) return false;
        item.setval_is_used = used->integer != 0;
        if (p.accept_operator(",")) {
          std::optional<std::uint64_t> round = p.unsigned_integer();
          if (!round) return false;
          item.setval_round = *round;
        }
      }
      break;
    }
  }
  return p.accept_operator(")");
}

// One SELECT item with its alias; nullopt (and no error) when the item is an expression ticketd
// does not evaluate.
std::optional<SelectItem> select_item(Parser& p) {
  const std::size_t begin = p.position();
  SelectItem item;
  const Token& t = p.peek();
  if (t.kind == TokenKind::kSystemVariable) {
    p.advance();
    if (t.value == "identity" || t.value == "last_insert_id") {
      item.kind = SelectItemKind::kLastInsertId;
    } else {
      item.kind = SelectItemKind::kSystemVariable;
      item.scope = scope_from_prefix(t.scope);
      item.variable = t.value;
    }
  } else if (t.kind == TokenKind::kUserVariable) {
    p.advance();
    item.kind = SelectItemKind::kUserVariable;
    item.variable = t.value;
  } else if (std::optional<Literal> literal = p.literal(false)) {
    item.kind = SelectItemKind::kLiteral;
    item.literal = std::move(*literal);
  } else if ((p.at_keyword("NEXT") || p.at_keyword("PREVIOUS")) && p.at_keyword("VALUE", 1) &&
             p.at_keyword("FOR", 2)) {
    item.kind =
        p.advance().is_keyword("NEXT") ? SelectItemKind::kNextValue : SelectItemKind::kLastValue;
    p.advance();
    p.advance();
    std::optional<TableName> sequence = p.table_name();
    if (!sequence) return std::nullopt;
    item.sequence = std::move(*sequence);
  } else if (t.kind == TokenKind::kWord) {
    const auto* f = std::find_if(kSelectFunctions.begin(), kSelectFunctions.end(),
                                 [&](const SelectFunction& row) { return t.is_keyword(row.name); });
    if (f == kSelectFunctions.end()) return std::nullopt;
    p.advance();
    item.kind = f->kind;
    if (p.accept_operator("(")) {
      if (!function_args(p, *f, item)) return std::nullopt;
    } else if (!f->parens_optional) {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  // `LAST_INSERT_ID() + 1` is an expression, not an item ticketd knows.
  const Token& next = p.peek();
  if (next.kind == TokenKind::kOperator && !next.is_operator(",") && !next.is_operator(";")) {
    return std::nullopt;
  }
  item.text = std::string(p.text(begin, p.position()));
  if (p.accept_keyword("AS")) {
    item.alias = p.name_or_string();
    if (!item.alias) return p.fail(), std::nullopt;
  } else if (p.peek().kind == TokenKind::kQuotedIdentifier || p.peek().kind == TokenKind::kString ||
             (p.peek().kind == TokenKind::kWord && !is_clause_keyword(p.peek()))) {
    item.alias = p.name_or_string();
  }
  return item;
}

Statement parse_select(Parser& p) {
  const std::size_t start = p.position() - 1;
  // Vitess: SELECT NEXT n VALUES FROM s / SELECT NEXT VALUE FROM s.
  if (p.at_keyword("NEXT") &&
      ((p.at_keyword("VALUE", 1) && p.at_keyword("FROM", 2)) ||
       (p.peek(1).kind == TokenKind::kNumber && p.at_keyword("VALUES", 2)))) {
    p.advance();
    SelectNextBlock s;
    if (!p.accept_keyword("VALUE")) {
      std::optional<std::int64_t> count = p.signed_integer();
      if (!count || *count <= 0) {
        p.seek(p.position() - 1);
        return p.fail();
      }
      s.count = *count;
      p.advance();
    }
    p.advance();
    std::optional<TableName> sequence = p.table_name();
    if (!sequence) return p.fail();
    s.sequence = std::move(*sequence);
    return p.finish(std::move(s));
  }
  while (p.accept_keyword("SQL_NO_CACHE") || p.accept_keyword("SQL_CACHE") ||
         p.accept_keyword("ALL")) {
  }
  Select s;
  do {
    if (s.items.size() == kMaxSelectItems) {
      return Unrecognized{UnrecognizedKind::kTooManyColumns, "", 1};
    }
    std::optional<SelectItem> item = select_item(p);
    if (!p.ok()) return p.fail();
    if (!item) return p.unsupported_from(start);
    s.items.push_back(std::move(*item));
  } while (p.accept_operator(","));
  if (p.accept_keyword("FROM") && !p.accept_keyword("DUAL")) return p.unsupported_from(start);
  if (p.accept_keyword("LIMIT") && !limit_clause(p, s.limit, s.offset)) return p.fail();
  if (!p.at_statement_end()) return p.unsupported_from(start);
  return p.finish(std::move(s));
}

// ---- sequences -------------------------------------------------------------------------------

bool sequence_options(Parser& p, SequenceOptions& o, bool alter) {
  const auto number = [&](std::optional<std::int64_t>& out) {
    out = p.signed_integer();
    if (!out) p.fail();
    return out.has_value();
  };
  while (p.ok() && !p.at_statement_end()) {
    if (p.accept_keyword("START")) {
      if (!p.accept_keyword("WITH")) p.accept_operator("=");
      number(o.start);
    } else if (p.accept_keyword("INCREMENT")) {
      if (!p.accept_keyword("BY")) p.accept_operator("=");
      number(o.increment);
    } else if (p.accept_keyword("MINVALUE")) {
      p.accept_operator("=");
      number(o.min_value);
    } else if (p.accept_keyword("NOMINVALUE") || p.accept_keywords({"NO", "MINVALUE"})) {
      o.no_min_value = true;
    } else if (p.accept_keyword("MAXVALUE")) {
      p.accept_operator("=");
      number(o.max_value);
    } else if (p.accept_keyword("NOMAXVALUE") || p.accept_keywords({"NO", "MAXVALUE"})) {
      o.no_max_value = true;
    } else if (p.accept_keyword("CACHE")) {
      p.accept_operator("=");
      number(o.cache);
    } else if (p.accept_keyword("NOCACHE") || p.accept_keywords({"NO", "CACHE"})) {
      o.cache = 0;
    } else if (p.accept_keyword("NOCYCLE") || p.accept_keywords({"NO", "CYCLE"})) {
      o.no_cycle = true;
    } else if (p.at_keyword("CYCLE")) {
      // Cycling sequences hand out the same values again, which a ticket server must never do.
      p.unsupported("CYCLE");
    } else if (p.accept_keyword("ENGINE")) {
      p.accept_operator("=");
      o.engine = p.name_or_string();
      if (!o.engine) p.fail();
    } else if (alter && p.accept_keyword("RESTART")) {
      o.restart = true;
      if (p.accept_keyword("WITH") || p.accept_operator("=") ||
          p.peek().kind == TokenKind::kNumber || p.at_operator("-")) {
        number(o.restart_with);
      }
    } else {
      p.fail();
    }
  }
  return p.ok();
}

Statement parse_create_sequence(Parser& p, bool or_replace) {
  CreateSequence s;
  s.or_replace = or_replace;
  s.if_not_exists = p.accept_keywords({"IF", "NOT", "EXISTS"});
  std::optional<TableName> name = p.table_name();
  if (!name) return p.fail();
  s.name = std::move(*name);
  sequence_options(p, s.options, false);
  return p.finish(std::move(s));
}

Statement parse_alter_sequence(Parser& p) {
  AlterSequence s;
  s.if_exists = p.accept_keywords({"IF", "EXISTS"});
  std::optional<TableName> name = p.table_name();
  if (!name) return p.fail();
  s.name = std::move(*name);
  if (p.at_statement_end()) return p.fail();
  sequence_options(p, s.options, true);
  return p.finish(std::move(s));
}

Statement parse_drop_sequence(Parser& p) {
  DropSequence s;
  s.if_exists = p.accept_keywords({"IF", "EXISTS"});
  std::optional<std::vector<TableName>> names = p.table_names();
  if (!names) return p.fail();
  s.names = std::move(*names);
  return p.finish(std::move(s));
}

Statement parse_show_create_sequence(Parser& p) {
  std::optional<TableName> name = p.table_name();
  if (!name) return p.fail();
  return p.finish(ShowCreateSequence{std::move(*name)});
}

// ---- the statement table ---------------------------------------------------------------------

using ParseFn = Statement (*)(Parser&);

// A statement is chosen by its leading keywords; the longest matching head wins. Rows without a
// parse function are valid MySQL that ticketd reports as unsupported (ER_NOT_SUPPORTED_YET)
// instead of a syntax error.
struct StatementRule {
  std::array<std::string_view, 4> head;
  ParseFn parse = nullptr;
};

constexpr auto kStatements = std::to_array<StatementRule>({
    // Tickets
    {{"INSERT"}, [](Parser& p) { return parse_insert(p, false); }},
    {{"REPLACE"}, [](Parser& p) { return parse_insert(p, true); }},
    {{"UPDATE"}, parse_update},
    {{"SELECT"}, parse_select},
    // Sequences
    {{"CREATE", "SEQUENCE"}, [](Parser& p) { return parse_create_sequence(p, false); }},
    {{"CREATE", "OR", "REPLACE", "SEQUENCE"},
     [](Parser& p) { return parse_create_sequence(p, true); }},
    {{"ALTER", "SEQUENCE"}, parse_alter_sequence},
    {{"DROP", "SEQUENCE"}, parse_drop_sequence},
    {{"SHOW", "CREATE", "SEQUENCE"}, parse_show_create_sequence},
    // Tables
    {{"CREATE", "TABLE"}, parse_create_table},
    {{"ALTER", "TABLE"}, parse_alter_table},
    {{"DROP", "TABLE"}, parse_drop_table},
    {{"TRUNCATE"}, parse_truncate},
    {{"SHOW", "TABLES"}, [](Parser& p) { return parse_show_tables(p, false); }},
    {{"SHOW", "FULL", "TABLES"}, [](Parser& p) { return parse_show_tables(p, true); }},
    {{"SHOW", "CREATE", "TABLE"}, parse_show_create_table},
    {{"SHOW", "COLUMNS"}, [](Parser& p) { return parse_show_columns(p, false); }},
    {{"SHOW", "FIELDS"}, [](Parser& p) { return parse_show_columns(p, false); }},
    {{"SHOW", "FULL", "COLUMNS"}, [](Parser& p) { return parse_show_columns(p, true); }},
    {{"SHOW", "FULL", "FIELDS"}, [](Parser& p) { return parse_show_columns(p, true); }},
    {{"DESCRIBE"}, parse_describe},
    {{"DESC"}, parse_describe},
    {{"EXPLAIN"}, parse_describe},
    {{"SHOW", "TABLE", "STATUS"}, parse_show_table_status},
    // Session
    {{"SET"}, parse_set},
    {{"SHOW", "VARIABLES"},
     [](Parser& p) { return parse_show_variables(p, VariableScope::kDefault); }},
    {{"SHOW", "SESSION", "VARIABLES"},
     [](Parser& p) { return parse_show_variables(p, VariableScope::kSession); }},
    {{"SHOW", "LOCAL", "VARIABLES"},
     [](Parser& p) { return parse_show_variables(p, VariableScope::kSession); }},
    {{"SHOW", "GLOBAL", "VARIABLES"},
     [](Parser& p) { return parse_show_variables(p, VariableScope::kGlobal); }},
    {{"SHOW", "STATUS"}, [](Parser& p) { return parse_show_status(p, VariableScope::kDefault); }},
    {{"SHOW", "SESSION", "STATUS"},
     [](Parser& p) { return parse_show_status(p, VariableScope::kSession); }},
    {{"SHOW", "LOCAL", "STATUS"},
     [](Parser& p) { return parse_show_status(p, VariableScope::kSession); }},
    {{"SHOW", "GLOBAL", "STATUS"},
     [](Parser& p) { return parse_show_status(p, VariableScope::kGlobal); }},
    {{"SHOW", "WARNINGS"}, parse_with_optional_limit<ShowWarnings>},
    {{"SHOW", "ERRORS"}, parse_with_optional_limit<ShowErrors>},
    {{"SHOW", "DATABASES"}, parse_with_filter<ShowDatabases>},
    {{"SHOW", "SCHEMAS"}, parse_with_filter<ShowDatabases>},
    {{"SHOW", "ENGINES"}, parse_bare<ShowEngines>},
    {{"SHOW", "STORAGE", "ENGINES"}, parse_bare<ShowEngines>},
    {{"SHOW", "COLLATION"}, parse_with_filter<ShowCollation>},
    {{"SHOW", "CHARACTER", "SET"}, parse_with_filter<ShowCharacterSet>},
    {{"SHOW", "CHARSET"}, parse_with_filter<ShowCharacterSet>},
    {{"SHOW", "PROCESSLIST"}, parse_bare<ShowProcesslist>},
    {{"SHOW", "FULL", "PROCESSLIST"}, [](Parser& p) { return p.finish(ShowProcesslist{true}); }},
    {{"USE"}, parse_use},
    {{"BEGIN"}, parse_begin},
    {{"START", "TRANSACTION"}, parse_start_transaction},
    {{"COMMIT"}, parse_commit},
    {{"ROLLBACK"}, parse_rollback},
    {{"DO"}, parse_do},
    {{"KILL"}, parse_kill},
    // Valid MySQL that ticketd does not support.
    {{"DELETE"}},
    {{"CREATE"}},
    {{"CREATE", "TEMPORARY"}},
    {{"ALTER"}},
    {{"DROP"}},
    {{"DROP", "TEMPORARY"}},
    {{"RENAME"}},
    {{"SAVEPOINT"}},
    {{"RELEASE"}},
    {{"FLUSH"}},
    {{"RESET"}},
    {{"LOCK"}},
    {{"UNLOCK"}},
    {{"GRANT"}},
    {{"REVOKE"}},
    {{"CALL"}},
    {{"LOAD"}},
    {{"HANDLER"}},
    {{"PREPARE"}},
    {{"EXECUTE"}},
    {{"DEALLOCATE"}},
    {{"XA"}},
    {{"ANALYZE"}},
    {{"OPTIMIZE"}},
    {{"CHECK"}},
    {{"CHECKSUM"}},
    {{"REPAIR"}},
    {{"INSTALL"}},
    {{"UNINSTALL"}},
    {{"SHUTDOWN"}},
    {{"HELP"}},
    {{"WITH"}},
    {{"TABLE"}},
    {{"VALUES"}},
    {{"SET", "PASSWORD"}},
    {{"SET", "ROLE"}},
    {{"SET", "DEFAULT", "ROLE"}},
    {{"SET", "STATEMENT"}},
    {{"SHOW", "GRANTS"}},
    {{"SHOW", "INDEX"}},
    {{"SHOW", "INDEXES"}},
    {{"SHOW", "KEYS"}},
    {{"SHOW", "EXTENDED"}},
    {{"SHOW", "CREATE"}},
    {{"SHOW", "MASTER"}},
    {{"SHOW", "SLAVE"}},
    {{"SHOW", "REPLICA"}},
    {{"SHOW", "REPLICAS"}},
    {{"SHOW", "BINARY"}},
    {{"SHOW", "BINLOG"}},
    {{"SHOW", "PLUGINS"}},
    {{"SHOW", "PRIVILEGES"}},
    {{"SHOW", "TRIGGERS"}},
    {{"SHOW", "EVENTS"}},
    {{"SHOW", "FUNCTION"}},
    {{"SHOW", "PROCEDURE"}},
    {{"SHOW", "OPEN"}},
    {{"SHOW", "PROFILE"}},
    {{"SHOW", "PROFILES"}},
    {{"SHOW", "ENGINE"}},
    {{"SHOW", "COUNT"}},
});

std::size_t head_length(const StatementRule& rule) {
  return static_cast<std::size_t>(std::count_if(rule.head.begin(), rule.head.end(),
                                                [](std::string_view k) { return !k.empty(); }));
}

}  // namespace

Statement recognize(std::string_view sql) {
  Parser p(sql);
  if (p.over_budget()) return Unrecognized{UnrecognizedKind::kTooManyTokens, "", 1};
  const std::vector<Token>& tokens = p.tokens();
  if (tokens.back().kind == TokenKind::kError) {
    p.seek(tokens.size() - 1);
    return p.fail();
  }
  if (tokens.front().kind == TokenKind::kEnd) {
    return Unrecognized{UnrecognizedKind::kEmptyQuery, "", 1};
  }
  const StatementRule* best = nullptr;
  std::size_t best_length = 0;
  for (const StatementRule& rule : kStatements) {
    const std::size_t length = head_length(rule);
    if (length <= best_length) continue;
    bool match = true;
    for (std::size_t i = 0; i < length && match; ++i) match = p.at_keyword(rule.head[i], i);
    if (match) {
      best = &rule;
      best_length = length;
    }
  }
  if (best == nullptr) return p.fail();
  p.seek(best_length);
  if (best->parse != nullptr) return best->parse(p);
  // Name the statement by its first few words: "CREATE DATABASE", "DELETE FROM Tickets64".
  std::size_t words = std::max<std::size_t>(best_length, 1);
  while (words < 3 && tokens[words].kind == TokenKind::kWord) ++words;
  std::string what;
  for (std::size_t i = 0; i < words; ++i) {
    if (i > 0) what += ' ';
    what += i < best_length ? to_upper(tokens[i].text) : std::string(tokens[i].text);
  }
  return p.unsupported(std::move(what));
}

}  // namespace ticketd::sql
