// A tiny evaluator for the right-hand sides of SET statements drivers send at connect time.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server/sql/statement.h"

namespace ticketd::sql {

/// Resolves @@[scope.]name (name in lower case); nullopt for an unknown variable.
using VariableLookup =
    std::function<std::optional<std::string>(VariableScope scope, std::string_view name)>;

/// Bounds on one evaluation, so a hostile expression fails instead of exhausting the stack or
/// memory. The evaluator recurses once per nesting level (parentheses, function arguments).
struct EvalLimits {
  std::size_t max_depth = 64;  // nesting levels of parentheses and function calls
  std::size_t max_value_bytes =
      16 * 1024 * 1024;  // largest value (the caller's max_allowed_packet)
  // Bytes of all values materialized along the way (variable reads, CONCAT, REPLACE), as a
  // multiple of max_value_bytes: CONCAT(@@v, @@v, ...) fails long before it copies @@v a
  // million times.
  std::size_t max_work_factor = 4;
};

enum class EvalFailure {
  kNotUnderstood,  // outside the small language below, an unknown variable, or NULL
  kTooDeep,        // nested deeper than EvalLimits::max_depth
  kTooLarge,       // a value or the work exceeded EvalLimits' byte bounds
};

/// The value of an expression, or why there is none.
struct Evaluation {
  std::optional<std::string> value;
  EvalFailure failure = EvalFailure::kNotUnderstood;  // meaningful only without a value
};

/// Evaluates expressions such as `concat(@@sql_mode, ',STRICT_TRANS_TABLES')` (MariaDB
/// Connector/J) or `(SELECT REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', ''))` to a string.
/// Understands string and number literals, TRUE/FALSE (1/0), bare words (ON, utf8mb4),
/// @@variables, parentheses, `(SELECT expr)`, CONCAT(...), REPLACE(s, from, to), IFNULL(a, b) and
/// COALESCE(...). Numbers keep their text ("1", "-5"); no arithmetic is done.
[[nodiscard]] Evaluation evaluate(std::string_view expr, const VariableLookup& lookup,
                                  const EvalLimits& limits);

/// evaluate() with the default limits; nullopt for any failure and when the value is NULL.
[[nodiscard]] std::optional<std::string> evaluate_simple(std::string_view expr,
                                                         const VariableLookup& lookup);

}  // namespace ticketd::sql
