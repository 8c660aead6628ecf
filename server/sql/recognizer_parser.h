// Internal to the recognizer: the parser over the token cursor, the clauses several statement
// families share, and the parse functions of the families kept in files of their own
// (recognizer_tables.cpp, recognizer_session.cpp). Only server/sql/recognizer*.cpp include it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/parse_int.h"
#include "server/sql/lexer.h"
#include "server/sql/statement.h"
#include "server/sql/token_cursor.h"

namespace ticketd::sql::detail {

[[nodiscard]] bool is_one_of(const Token& t, std::initializer_list<std::string_view> keywords);
// Magnitude `digits` with an optional minus sign, checked against the int64 range.
[[nodiscard]] std::optional<std::int64_t> to_int64(std::string_view digits, bool negative);
[[nodiscard]] std::string_view trim_statement_end(std::string_view s);
[[nodiscard]] VariableScope scope_from_prefix(std::string_view prefix);

// The token cursor plus what the recognizer needs on top of it. Errors are sticky: the first one
// recorded is the one reported, and parse functions may keep going and return finish(), which
// returns it.
class Parser : public TokenCursor {
 public:
  explicit Parser(std::string_view sql) : TokenCursor(sql), sql_(sql) {}

  [[nodiscard]] bool ok() const { return !error_.has_value(); }
  [[nodiscard]] bool at_assignment(std::size_t ahead = 0) const {
    return at_operator("=", ahead) || at_operator(":=", ahead);
  }
  [[nodiscard]] bool at_statement_end() const {
    for (std::size_t i = pos_; i < tokens_.size(); ++i) {
      if (tokens_[i].kind == TokenKind::kEnd) return true;
      if (!tokens_[i].is_operator(";")) return false;
    }
    return true;
  }

  // ---- errors ----

  // Records a syntax error at the current token (unless an error is already recorded) and
  // returns the recorded error.
  Unrecognized fail() {
    if (!error_) {
      const Token& t = peek();
      error_ = Unrecognized{UnrecognizedKind::kSyntaxError, std::string(sql_.substr(t.offset)),
                            line_of(t.offset)};
    }
    return *error_;
  }
  Unrecognized unsupported(std::string what) { return unsupported(std::move(what), peek().offset); }
  // The statement from token `first` on is taken to be valid MySQL that ticketd does not
  // support, unless it is visibly malformed: unbalanced parentheses, a dangling operator
  // (`SELECT 1 +`) or a second statement after ';'. Those are syntax errors.
  Unrecognized unsupported_from(std::size_t first) {
    int depth = 0;
    const Token* last = nullptr;
    for (std::size_t i = first; i < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      if (t.kind == TokenKind::kEnd) break;
      if (t.is_operator(";")) {
        while (tokens_[i].is_operator(";")) ++i;
        if (tokens_[i].kind == TokenKind::kEnd) break;
        seek(i);
        return fail();
      }
      if (t.is_operator("(")) ++depth;
      if (t.is_operator(")") && --depth < 0) {
        seek(i);
        return fail();
      }
      last = &t;
    }
    if (depth > 0 || (last != nullptr && last->kind == TokenKind::kOperator &&
                      !last->is_operator(")") && !last->is_operator("*"))) {
      seek(tokens_.size() - 1);
      return fail();
    }
    return unsupported(std::string(trim_statement_end(sql_.substr(tokens_[first].offset))),
                       tokens_[first].offset);
  }
  // Accepts trailing ';'s, requires the end of input and returns `s` or the recorded error.
  Statement finish(Statement s) {
    if (ok()) {
      while (accept_operator(";")) {
      }
      if (peek().kind != TokenKind::kEnd) fail();
    }
    if (error_) return *error_;
    return s;
  }

  // ---- values: these consume nothing and record no error when the value is not there ----

  std::optional<std::string> identifier() {
    const Token& t = peek();
    if (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdentifier) return std::nullopt;
    return advance().value;
  }
  std::optional<TableName> table_name() {
    std::optional<std::string> first = identifier();
    if (!first) return std::nullopt;
    if (at_operator(".") &&
        (peek(1).kind == TokenKind::kWord || peek(1).kind == TokenKind::kQuotedIdentifier)) {
      advance();
      return TableName{std::move(*first), *identifier()};
    }
    return TableName{"", std::move(*first)};
  }
  std::optional<std::vector<TableName>> table_names() {
    std::vector<TableName> names;
    do {
      std::optional<TableName> name = table_name();
      if (!name) return std::nullopt;
      names.push_back(std::move(*name));
    } while (accept_operator(","));
    return names;
  }
  std::optional<std::string> string_literal() {
    if (peek().kind != TokenKind::kString) return std::nullopt;
    return advance().value;
  }
  // Charset and collation names, aliases, engine names: word, `quoted` or 'string'.
  std::optional<std::string> name_or_string() {
    if (std::optional<std::string> s = string_literal()) return s;
    return identifier();
  }
  std::optional<std::uint64_t> unsigned_integer() {
    if (peek().kind != TokenKind::kNumber) return std::nullopt;
    std::optional<std::uint64_t> v = parse_u64(peek().text);
    if (v) advance();
    return v;
  }
  std::optional<std::int64_t> signed_integer() {
    const std::size_t start = pos_;
    bool negative = false;
    while (at_operator("-") || at_operator("+")) negative ^= advance().text == "-";
    std::optional<std::int64_t> v;
    if (peek().kind == TokenKind::kNumber) v = to_int64(peek().text, negative);
    if (!v) {
      seek(start);
      return std::nullopt;
    }
    advance();
    return v;
  }
  // [-]number, 'string', NULL, TRUE, FALSE; with `words`, also DEFAULT and bare words (ON).
  std::optional<Literal> literal(bool words) {
    const std::size_t start = pos_;
    Literal lit;
    if (peek().kind == TokenKind::kString) {
      lit.kind = LiteralKind::kString;
      lit.text = advance().value;
      return lit;
    }
    if (accept_keyword("NULL")) return lit;
    if (at_keyword("TRUE") || at_keyword("FALSE")) {
      lit.kind = LiteralKind::kInteger;
      lit.integer = advance().is_keyword("TRUE") ? 1 : 0;
      lit.text = std::to_string(lit.integer);
      return lit;
    }
    bool negative = false;
    while (at_operator("-") || at_operator("+")) negative ^= advance().text == "-";
    if (peek().kind == TokenKind::kNumber) {
      const std::string_view digits = advance().text;
      lit.text = negative ? "-" + std::string(digits) : std::string(digits);
      if (std::optional<std::int64_t> v = to_int64(digits, negative)) {
        lit.kind = LiteralKind::kInteger;
        lit.integer = *v;
      } else {
        lit.kind = LiteralKind::kDecimal;
      }
      return lit;
    }
    if (pos_ == start && words && peek().kind == TokenKind::kWord && !at_operator("(", 1)) {
      lit.kind = at_keyword("DEFAULT") ? LiteralKind::kDefault : LiteralKind::kWord;
      lit.text = advance().text;
      return lit;
    }
    seek(start);
    return std::nullopt;
  }

  // ---- skipping ----

  // One expression: the tokens up to a top-level ',', ')' or ';', the end, or one of
  // `stop_keywords`. Returns its text; an empty or unbalanced expression is a syntax error.
  std::optional<std::string_view> expression(
      std::initializer_list<std::string_view> stop_keywords = {}) {
    const std::size_t begin = pos_;
    int depth = 0;
    for (;;) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEnd) break;
      if (depth == 0 && (t.is_operator(",") || t.is_operator(")") || t.is_operator(";") ||
                         is_one_of(t, stop_keywords))) {
        break;
      }
      if (t.is_operator("(")) ++depth;
      if (t.is_operator(")")) --depth;
      advance();
    }
    if (depth > 0 || pos_ == begin) {
      fail();
      return std::nullopt;
    }
    return text(begin, pos_);
  }
  // At '(': consumes through the matching ')'.
  bool skip_group() {
    if (!accept_operator("(")) return fail(), false;
    int depth = 1;
    while (depth > 0) {
      if (peek().kind == TokenKind::kEnd) return fail(), false;
      if (at_operator("(")) ++depth;
      if (at_operator(")")) --depth;
      advance();
    }
    return true;
  }
  // Consumes up to a top-level ',' or ')' (the end of a CREATE TABLE element).
  bool skip_element_rest() {
    while (!at_operator(",") && !at_operator(")")) {
      if (peek().kind == TokenKind::kEnd) return fail(), false;
      if (at_operator("(")) {
        if (!skip_group()) return false;
      } else {
        advance();
      }
    }
    return true;
  }

  // Source text from token `first` up to (not including) token `end`.
  [[nodiscard]] std::string_view text(std::size_t first, std::size_t end) const {
    if (end <= first) return {};
    const std::size_t begin = tokens_[first].offset;
    return sql_.substr(begin, tokens_[end - 1].end() - begin);
  }

 private:
  Unrecognized unsupported(std::string what, std::size_t offset) {
    if (!error_)
      error_ = Unrecognized{UnrecognizedKind::kUnsupported, std::move(what), line_of(offset)};
    return *error_;
  }
  [[nodiscard]] std::size_t line_of(std::size_t offset) const {
    return 1 + static_cast<std::size_t>(std::count(
                   sql_.begin(), sql_.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
  }

  std::string_view sql_;
  std::optional<Unrecognized> error_;
};

// ---- shared clauses (recognizer_parser.cpp) ----

// LIMIT n | LIMIT offset, n | LIMIT n OFFSET offset (the LIMIT keyword already consumed).
bool limit_clause(Parser& p, std::optional<std::uint64_t>& limit,
                  std::optional<std::uint64_t>& offset);
// [LIKE 'pattern' | WHERE col = 'v' [OR col = 'w' | OR col IN ('x', ...)] ...].
bool show_filter(Parser& p, ShowFilter& filter);
// [FROM|IN db]
bool from_schema(Parser& p, std::string& schema);

// ---- tables (recognizer_tables.cpp) ----

Statement parse_create_table(Parser& p);
Statement parse_alter_table(Parser& p);
Statement parse_drop_table(Parser& p);
Statement parse_truncate(Parser& p);
Statement parse_show_tables(Parser& p, bool full);
Statement parse_show_create_table(Parser& p);
Statement parse_show_columns(Parser& p, bool full);
// DESCRIBE t [column | 'pattern']; DESCRIBE/EXPLAIN of a query is unsupported.
Statement parse_describe(Parser& p);
Statement parse_show_table_status(Parser& p);

// ---- statements of one shape: [LIMIT ...], [LIKE/WHERE filter], nothing ----

template <class T>
Statement parse_with_optional_limit(Parser& p) {
  T s;
  if (p.accept_keyword("LIMIT")) limit_clause(p, s.limit, s.offset);
  return p.finish(std::move(s));
}

template <class T>
Statement parse_with_filter(Parser& p) {
  T s;
  show_filter(p, s.filter);
  return p.finish(std::move(s));
}

template <class T>
Statement parse_bare(Parser& p) {
  return p.finish(T{});
}

// ---- session (recognizer_session.cpp) ----

std::optional<VariableScope> accept_scope(Parser& p);
Statement parse_set_transaction(Parser& p, VariableScope scope);
Statement parse_set(Parser& p);
Statement parse_show_variables(Parser& p, VariableScope scope);
Statement parse_show_status(Parser& p, VariableScope scope);
Statement parse_use(Parser& p);
Statement parse_begin(Parser& p);
Statement parse_start_transaction(Parser& p);
Statement parse_commit(Parser& p);
Statement parse_rollback(Parser& p);
Statement parse_do(Parser& p);
Statement parse_kill(Parser& p);

}  // namespace ticketd::sql::detail
