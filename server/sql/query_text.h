// Whole-query helpers for COM_QUERY and prepared statements: multi-statement splitting and `?`
// placeholders. All of them lex the text, so quotes and comments are respected.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ticketd::sql {

/// Splits a multi-statement COM_QUERY at top-level ';'. Each piece is a view into `sql`, with
/// surrounding whitespace trimmed and without its ';'. Pieces holding only whitespace and comments
/// (";;", a trailing "-- done") are dropped; comments before a statement stay with it. If the
/// text has an unterminated string or comment, the rest of the text from the last ';' is one piece,
/// so that recognize() reports the syntax error. Stops after `max_pieces` + 1 pieces, so a caller
/// that caps statements per query can tell "too many" without splitting megabytes of `1;1;1;`.
[[nodiscard]] std::vector<std::string_view> split_statements(
    std::string_view sql, std::size_t max_pieces = static_cast<std::size_t>(-1) - 1);

/// Number of `?` placeholders outside strings, quoted identifiers and comments.
[[nodiscard]] std::size_t count_placeholders(std::string_view sql);

/// Replaces the i-th placeholder with literals[i], which the caller has already rendered as SQL
/// ('it''s', 42, NULL, X'00'). Placeholders beyond literals.size() are left as `?`; the caller is
/// expected to have checked the count with count_placeholders().
[[nodiscard]] std::string substitute_placeholders(std::string_view sql,
                                                  const std::vector<std::string>& literals);

}  // namespace ticketd::sql
