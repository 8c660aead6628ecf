// SET, SHOW VARIABLES / STATUS, USE, transactions, DO, KILL and the other session statements of
// the recognizer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/sql/recognizer_parser.h"

namespace ticketd::sql::detail {

// ---- session ---------------------------------------------------------------------------------

std::optional<VariableScope> accept_scope(Parser& p) {
  if (p.at_assignment(1)) return std::nullopt;  // SET session = 1 names a variable
  if (p.accept_keyword("GLOBAL")) return VariableScope::kGlobal;
  if (p.accept_keyword("SESSION") || p.accept_keyword("LOCAL")) return VariableScope::kSession;
  if (p.accept_keyword("PERSIST")) return VariableScope::kPersist;
  if (p.accept_keyword("PERSIST_ONLY")) return VariableScope::kPersistOnly;
  return std::nullopt;
}

Statement parse_set_transaction(Parser& p, VariableScope scope) {
  SetTransaction s;
  s.scope = scope;
  do {
    if (p.accept_keywords({"ISOLATION", "LEVEL"})) {
      if (p.accept_keywords({"READ", "UNCOMMITTED"})) {
        s.isolation_level = "READ UNCOMMITTED";
      } else if (p.accept_keywords({"READ", "COMMITTED"})) {
        s.isolation_level = "READ COMMITTED";
      } else if (p.accept_keywords({"REPEATABLE", "READ"})) {
        s.isolation_level = "REPEATABLE READ";
      } else if (p.accept_keyword("SERIALIZABLE")) {
        s.isolation_level = "SERIALIZABLE";
      } else {
        return p.fail();
      }
    } else if (p.accept_keywords({"READ", "ONLY"})) {
      s.read_only = true;
    } else if (p.accept_keywords({"READ", "WRITE"})) {
      s.read_only = false;
    } else {
      return p.fail();
    }
  } while (p.accept_operator(","));
  return p.finish(std::move(s));
}

// The literal value of the tokens [begin, end), if they are exactly one literal.
std::optional<Literal> literal_between(Parser& p, std::size_t begin, std::size_t end) {
  const std::size_t saved = p.position();
  p.seek(begin);
  std::optional<Literal> literal = p.literal(true);
  if (p.position() != end) literal.reset();
  p.seek(saved);
  return literal;
}

// SET item, item, ...; a GLOBAL/SESSION modifier carries over to the following items that have
// none, as in MySQL.
Statement parse_set(Parser& p) {
  const std::size_t start = p.position();
  std::optional<VariableScope> scope = accept_scope(p);
  if (p.accept_keyword("TRANSACTION")) {
    return parse_set_transaction(p, scope.value_or(VariableScope::kDefault));
  }
  p.seek(start);
  SetStatement s;
  VariableScope current = VariableScope::kDefault;
  do {
    if (std::optional<VariableScope> modifier = accept_scope(p)) current = *modifier;
    Assignment a;
    const Token& t = p.peek();
    const bool charset_assignment = p.at_keyword("NAMES") || p.at_keyword("CHARSET") ||
                                    (p.at_keyword("CHARACTER") && p.at_keyword("SET", 1));
    if (charset_assignment && !p.at_assignment(1)) {
      a.target = p.at_keyword("NAMES") ? AssignmentTarget::kNames : AssignmentTarget::kCharacterSet;
      p.seek(p.position() + (p.at_keyword("CHARACTER") ? 2 : 1));
      const std::size_t begin = p.position();
      if (!p.name_or_string()) return p.fail();
      a.expr = std::string(p.text(begin, p.position()));
      a.value = literal_between(p, begin, p.position());
      if (!a.value) {  // `utf8mb4` as a quoted identifier
        a.value = Literal{LiteralKind::kWord, p.tokens()[begin].value, 0};
      }
      if (a.target == AssignmentTarget::kNames && p.accept_keyword("COLLATE")) {
        std::optional<std::string> collation = p.name_or_string();
        if (!collation) return p.fail();
        a.collation = std::move(*collation);
      }
      s.assignments.push_back(std::move(a));
      continue;
    }
    if (t.kind == TokenKind::kSystemVariable) {
      p.advance();
      a.scope = t.scope.empty() ? VariableScope::kDefault : scope_from_prefix(t.scope);
      a.name = t.value;
    } else if (t.kind == TokenKind::kUserVariable) {
      p.advance();
      a.target = AssignmentTarget::kUserVariable;
      a.name = t.value;
    } else if (std::optional<std::string> name = p.identifier()) {
      a.scope = current;
      a.name = to_lower(*name);
      if (p.accept_operator(".")) {  // structured variables: keycache.key_buffer_size
        std::optional<std::string> component = p.identifier();
        if (!component) return p.fail();
        a.name += "." + to_lower(*component);
      }
    } else {
      return p.fail();
    }
    if (!p.accept_operator("=") && !p.accept_operator(":=")) return p.fail();
    const std::size_t begin = p.position();
    std::optional<std::string_view> expr = p.expression();
    if (!expr) return p.fail();
    a.expr = std::string(*expr);
    a.value = literal_between(p, begin, p.position());
    s.assignments.push_back(std::move(a));
  } while (p.accept_operator(","));
  return p.finish(std::move(s));
}

Statement parse_show_variables(Parser& p, VariableScope scope) {
  ShowVariables s;
  s.scope = scope;
  show_filter(p, s.filter);
  return p.finish(std::move(s));
}

Statement parse_show_status(Parser& p, VariableScope scope) {
  ShowStatus s;
  s.scope = scope;
  show_filter(p, s.filter);
  return p.finish(std::move(s));
}

Statement parse_use(Parser& p) {
  std::optional<std::string> schema = p.identifier();
  if (!schema) return p.fail();
  return p.finish(Use{std::move(*schema)});
}

Statement parse_begin(Parser& p) {
  p.accept_keyword("WORK");
  return p.finish(Begin{});
}

Statement parse_start_transaction(Parser& p) {
  Begin s;
  if (p.at_statement_end()) return p.finish(s);
  do {
    if (p.accept_keywords({"READ", "ONLY"})) {
      s.read_only = true;
    } else if (p.accept_keywords({"READ", "WRITE"})) {
      s.read_only = false;
    } else if (p.accept_keywords({"WITH", "CONSISTENT", "SNAPSHOT"})) {
      s.with_consistent_snapshot = true;
    } else {
      return p.fail();
    }
  } while (p.accept_operator(","));
  return p.finish(s);
}

Statement parse_commit(Parser& p) {
  p.accept_keyword("WORK");
  return p.finish(Commit{});
}

Statement parse_rollback(Parser& p) {
  const std::size_t start = p.position() - 1;
  p.accept_keyword("WORK");
  if (p.at_keyword("TO")) return p.unsupported_from(start);
  return p.finish(Rollback{});
}

Statement parse_do(Parser& p) {
  const std::size_t begin = p.position();
  do {
    if (!p.expression()) return p.fail();
  } while (p.accept_operator(","));
  return p.finish(Do{std::string(p.text(begin, p.position()))});
}

Statement parse_kill(Parser& p) {
  Kill s;
  if (p.accept_keyword("QUERY")) {
    s.query_only = true;
  } else {
    p.accept_keyword("CONNECTION");
  }
  std::optional<std::uint64_t> id = p.unsigned_integer();
  if (!id) return p.fail();
  s.connection_id = *id;
  return p.finish(s);
}

}  // namespace ticketd::sql::detail
