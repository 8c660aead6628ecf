#include "server/sql/recognizer_parser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/parse_int.h"

namespace ticketd::sql::detail {

bool is_one_of(const Token& t, std::initializer_list<std::string_view> keywords) {
  return std::any_of(keywords.begin(), keywords.end(),
                     [&](std::string_view k) { return t.is_keyword(k); });
}

// Magnitude `digits` with an optional minus sign, checked against the int64 range.
std::optional<std::int64_t> to_int64(std::string_view digits, bool negative) {
  const std::optional<std::uint64_t> magnitude = parse_u64(digits);
  if (!magnitude) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!negative) {
    if (*magnitude > kMax) return std::nullopt;
    return static_cast<std::int64_t>(*magnitude);
  }
  if (*magnitude > kMax + 1) return std::nullopt;
  if (*magnitude == kMax + 1) return std::numeric_limits<std::int64_t>::min();
  return -static_cast<std::int64_t>(*magnitude);
}

std::string_view trim_statement_end(std::string_view s) {
  while (!s.empty() && (s.back() == ';' || s.back() == ' ' || s.back() == '\t' ||
                        s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

VariableScope scope_from_prefix(std::string_view prefix) {
  if (prefix == "global") return VariableScope::kGlobal;
  if (prefix == "session" || prefix == "local") return VariableScope::kSession;
  return VariableScope::kDefault;
}

// ---- shared clauses ---------------------------------------------------------------------------

// LIMIT n | LIMIT offset, n | LIMIT n OFFSET offset (the LIMIT keyword already consumed).
bool limit_clause(Parser& p, std::optional<std::uint64_t>& limit,
                  std::optional<std::uint64_t>& offset) {
  limit = p.unsigned_integer();
  if (!limit) return p.fail(), false;
  if (p.accept_operator(",")) {
    offset = limit;
    limit = p.unsigned_integer();
  } else if (p.accept_keyword("OFFSET")) {
    offset = p.unsigned_integer();
    if (!offset) return p.fail(), false;
  }
  if (!limit) return p.fail(), false;
  return true;
}

// [LIKE 'pattern' | WHERE col = 'v' [OR col = 'w' | OR col IN ('x', ...)] ...]. Connector/J 5.1
// sends `SHOW VARIABLES WHERE Variable_name ='language' OR Variable_name = 'net_write_timeout' ...`
// and MariaDB Connector/J `... WHERE Variable_name in ('max_allowed_packet', ...)`.
bool show_filter(Parser& p, ShowFilter& filter) {
  if (p.accept_keyword("LIKE")) {
    filter.like = p.string_literal();
    if (!filter.like) return p.fail(), false;
    return true;
  }
  const std::size_t where = p.position();
  if (!p.accept_keyword("WHERE")) return true;
  filter.has_where = true;
  const auto understood = [&]() {
    do {
      std::optional<std::string> column = p.identifier();
      if (!column) return false;
      if (filter.where_column.empty()) filter.where_column = *column;
      if (!iequals(*column, filter.where_column)) return false;
      if (p.accept_operator("=")) {
        std::optional<std::string> value = p.string_literal();
        if (!value) return false;
        filter.where_values.push_back(std::move(*value));
      } else if (p.accept_keyword("IN") && p.accept_operator("(")) {
        do {
          std::optional<std::string> value = p.string_literal();
          if (!value) return false;
          filter.where_values.push_back(std::move(*value));
        } while (p.accept_operator(","));
        if (!p.accept_operator(")")) return false;
      } else {
        return false;
      }
    } while (p.accept_keyword("OR"));
    return p.at_statement_end();
  };
  if (!understood()) {
    p.unsupported_from(where);
    return false;
  }
  // Kept lowercased, sorted and unique: each row is then one binary search, however long the
  // list (a million names must not cost a million comparisons per row).
  for (std::string& v : filter.where_values) v = to_lower(v);
  std::sort(filter.where_values.begin(), filter.where_values.end());
  filter.where_values.erase(std::unique(filter.where_values.begin(), filter.where_values.end()),
                            filter.where_values.end());
  return true;
}

// [FROM|IN db]
bool from_schema(Parser& p, std::string& schema) {
  if (!p.accept_keyword("FROM") && !p.accept_keyword("IN")) return true;
  std::optional<std::string> name = p.identifier();
  if (!name) return p.fail(), false;
  schema = std::move(*name);
  return true;
}

}  // namespace ticketd::sql::detail
