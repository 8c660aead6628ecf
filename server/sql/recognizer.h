// Statement recognizer: SQL text -> Statement. Pure, std only, no I/O.
#pragma once

#include <string_view>

#include "server/sql/statement.h"

namespace ticketd::sql {

/// Recognizes one SQL statement (an optional trailing ';' is allowed; use split_statements() for
/// multi-statement text). Never throws on bad input: what is not understood comes back as
/// Unrecognized, a syntax error or a recognized-but-unsupported statement.
///
/// The statements are listed in one table in recognizer.cpp, keyed by their leading keywords;
/// supporting a new one is a row there (plus its struct in statement.h), its traits row in
/// statement_traits.cpp (whether it needs the leader, its result columns; the build fails
/// without it) and a row in tests/unit/sql/recognizer_test.cpp. Placeholders (`?`) are accepted
/// where values are kept as raw text (INSERT values, SET and DO expressions); elsewhere recognize
/// the query after substitute_placeholders(). Thread safety: none needed, it shares no state.
[[nodiscard]] Statement recognize(std::string_view sql);

}  // namespace ticketd::sql
