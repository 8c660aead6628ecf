// The SQL layer on arbitrary query text: the lexer, recognize(), split_statements(), the
// placeholder helpers, the SET expression evaluator, and the escaping of parameter values.
//
// Invariants: nothing throws or overflows the stack (100,000 nested parentheses included);
// tokens are the text they were cut from, in order, ending in kEnd or kError; the pieces of
// split_statements() are views into the query, at most the cap plus one; substituting every
// placeholder leaves none; the evaluator honours its depth and size limits; and the input
// itself, as a COM_STMT_EXECUTE string parameter rendered by to_sql_literal(), is recognized
// back as exactly that string (no parameter value can change a statement's meaning), as is a
// 64-bit integer taken from its first bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/mysql/protocol/binary_value.h"
#include "server/sql/evaluator.h"
#include "server/sql/lexer.h"
#include "server/sql/query_text.h"
#include "server/sql/recognizer.h"
#include "server/sql/statement.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace ::ticketd::sql;

bool inside(std::string_view piece, std::string_view whole) {
  return piece.empty() || (piece.data() >= whole.data() &&
                           piece.data() + piece.size() <= whole.data() + whole.size());
}

void check_tokens(std::string_view sql) {
  const auto tokens = tokenize(sql);
  FUZZ_CHECK(!tokens.empty());
  FUZZ_CHECK(tokens.back().kind == TokenKind::kEnd || tokens.back().kind == TokenKind::kError);
  std::size_t previous_end = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (i + 1 < tokens.size()) {
      FUZZ_CHECK(t.kind != TokenKind::kEnd && t.kind != TokenKind::kError);
    }
    FUZZ_CHECK(t.offset >= previous_end && t.end() <= sql.size());
    FUZZ_CHECK(sql.substr(t.offset, t.text.size()) == t.text);
    previous_end = t.end();
  }
}

void check_split(std::string_view sql) {
  constexpr std::size_t kCap = 1000;
  const auto pieces = split_statements(sql, kCap);
  FUZZ_CHECK(pieces.size() <= kCap + 1);
  for (const auto piece : pieces) {
    FUZZ_CHECK(inside(piece, sql));
    FUZZ_CHECK(!piece.empty());
    (void)recognize(piece);
  }
}

void check_placeholders(std::string_view sql) {
  const std::size_t n = count_placeholders(sql);
  if (n > 100000) return;
  const std::string all = substitute_placeholders(sql, std::vector<std::string>(n, "1"));
  FUZZ_CHECK(count_placeholders(all) == 0);
  if (n > 0) {
    const std::string some = substitute_placeholders(sql, std::vector<std::string>(n / 2, "NULL"));
    FUZZ_CHECK(count_placeholders(some) == n - n / 2);
  }
}

void check_evaluator(std::string_view expr) {
  const VariableLookup lookup = [](VariableScope,
                                   std::string_view name) -> std::optional<std::string> {
    if (name == "sql_mode") return std::string("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES");
    if (name == "big") return std::string(4096, 'x');
    if (name == "empty") return std::string();
    return std::nullopt;
  };
  EvalLimits limits;
  limits.max_depth = 16;
  limits.max_value_bytes = 64 * 1024;
  const Evaluation e = evaluate(expr, lookup, limits);
  if (e.value) FUZZ_CHECK(e.value->size() <= limits.max_value_bytes);
  // Allowing more depth never turns a value into a failure of another kind.
  EvalLimits deeper = limits;
  deeper.max_depth = 64;
  const Evaluation d = evaluate(expr, lookup, deeper);
  if (e.value) FUZZ_CHECK(d.value == e.value);
  (void)evaluate_simple(expr, lookup);
}

// `literal` as the only item of a SELECT.
const SelectItem* only_item(const Statement& s) {
  const auto* select = std::get_if<Select>(&s);
  if (select == nullptr || select->items.size() != 1) return nullptr;
  return &select->items[0];
}

void check_escaping(std::string_view text) {
  const std::string literal =
      ticketd::mysql::to_sql_literal(std::optional<ticketd::mysql::ParamValue>(std::string(text)));
  const Statement s = recognize("SELECT " + literal);
  const SelectItem* item = only_item(s);
  FUZZ_CHECK(item != nullptr);
  FUZZ_CHECK(item->kind == SelectItemKind::kLiteral);
  FUZZ_CHECK(item->literal.kind == LiteralKind::kString);
  FUZZ_CHECK(item->literal.text == text);

  std::int64_t v = 0;
  std::memcpy(&v, text.data(), std::min(text.size(), sizeof v));
  const std::string number = ticketd::mysql::to_sql_literal(ticketd::mysql::ParamValue(v));
  const Statement n = recognize("SELECT " + number);
  const SelectItem* num = only_item(n);
  FUZZ_CHECK(num != nullptr && num->kind == SelectItemKind::kLiteral);
  if (num->literal.kind == LiteralKind::kInteger) {
    FUZZ_CHECK(num->literal.integer == v);
  } else {
    FUZZ_CHECK(num->literal.kind == LiteralKind::kDecimal && num->literal.text == number);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view sql(reinterpret_cast<const char*>(data), size);
  const Statement s = recognize(sql);
  FUZZ_CHECK(!statement_kind_name(s).empty());
  (void)describe(s);
  check_tokens(sql);
  check_split(sql);
  check_placeholders(sql);
  check_evaluator(sql);
  if (size <= 4096) check_escaping(sql);
  return 0;
}
