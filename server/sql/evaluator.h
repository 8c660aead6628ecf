// A tiny evaluator for the right-hand sides of SET statements drivers send at connect time.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server/sql/statement.h"

namespace ticketd::sql {

/// Resolves @@[scope.]name (name in lower case); nullopt for an unknown variable.
using VariableLookup =
    std::function<std::optional<std::string>(VariableScope scope, std::string_view name)>;

/// Evaluates expressions such as `concat(@@sql_mode, ',STRICT_TRANS_TABLES')` (MariaDB
/// Connector/J) or `(SELECT REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', ''))` to a string.
/// Understands string and number literals, TRUE/FALSE (1/0), bare words (ON, utf8mb4),
/// @@variables, parentheses, `(SELECT expr)`, CONCAT(...), REPLACE(s, from, to), IFNULL(a, b) and
/// COALESCE(...). Returns nullopt for anything else, for an unknown variable, and when the value is
/// NULL. Numbers keep their text ("1", "-5"); no arithmetic is done.
[[nodiscard]] std::optional<std::string> evaluate_simple(std::string_view expr,
                                                         const VariableLookup& lookup);

}  // namespace ticketd::sql
