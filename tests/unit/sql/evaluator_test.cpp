#include "server/sql/evaluator.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

namespace ticketd::sql {
namespace {

std::optional<std::string> lookup(VariableScope scope, std::string_view name) {
  if (name == "sql_mode") {
    return scope == VariableScope::kGlobal ? "STRICT_TRANS_TABLES"
                                           : "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES";
  }
  if (name == "character_set_client") return "utf8mb4";
  if (name == "empty") return "";
  return std::nullopt;
}

struct EvalCase {
  std::string_view expr;
  std::optional<std::string> expected;
};

TEST(EvaluateSimple, EvaluatesDriverExpressions) {
  const EvalCase cases[] = {
      {"'abc'", "abc"},
      {"\"it\"\"s\"", "it\"s"},
      {"42", "42"},
      {"-5", "-5"},
      {"1.5", "1.5"},
      {"TRUE", "1"},
      {"false", "0"},
      {"ON", "ON"},
      {"utf8mb4", "utf8mb4"},
      {"@@sql_mode", "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES"},
      {"@@SESSION.sql_mode", "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES"},
      {"@@global.sql_mode", "STRICT_TRANS_TABLES"},
      {"@@CHARACTER_SET_CLIENT", "utf8mb4"},
      {"concat(@@sql_mode, ',NO_ZERO_DATE')",
       "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_DATE"},  // MariaDB Connector/J
      {"CONCAT('a', 1, 'b')", "a1b"},
      {"(SELECT REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY,', ''))", "STRICT_TRANS_TABLES"},
      {"REPLACE(REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', ''), ',,', ',')", ",STRICT_TRANS_TABLES"},
      {"REPLACE('aaa', 'a', 'bb')", "bbbbbb"},
      {"REPLACE('abc', '', 'x')", "abc"},
      {"IFNULL(NULL, 'x')", "x"},
      {"IFNULL('y', 'x')", "y"},
      {"COALESCE(NULL, NULL, 'z')", "z"},
      {"concat(@@empty, 'a')", "a"},
      {"('paren')", "paren"},
      {"'x';", "x"},
      // Not evaluated.
      {"NULL", std::nullopt},
      {"CONCAT('a', NULL)", std::nullopt},
      {"REPLACE(NULL, 'a', 'b')", std::nullopt},
      {"@@unknown_variable", std::nullopt},
      {"@user_variable", std::nullopt},
      {"DEFAULT", std::nullopt},
      {"1 + 1", std::nullopt},
      {"UPPER('a')", std::nullopt},
      {"REPLACE('a', 'b')", std::nullopt},
      {"CONCAT()", std::nullopt},
      {"CONCAT('a'", std::nullopt},
      {"'open", std::nullopt},
      {"", std::nullopt},
  };
  for (const EvalCase& c : cases) EXPECT_EQ(evaluate_simple(c.expr, lookup), c.expected) << c.expr;
}

TEST(EvaluateSimple, WorksWithoutALookup) {
  EXPECT_EQ(evaluate_simple("CONCAT('a', 'b')", nullptr), "ab");
  EXPECT_EQ(evaluate_simple("@@sql_mode", nullptr), std::nullopt);
}

std::string nested(std::size_t depth, std::string_view open, std::string_view inner,
                   std::string_view close) {
  std::string out;
  out.reserve(depth * (open.size() + close.size()) + inner.size());
  for (std::size_t i = 0; i < depth; ++i) out += open;
  out += inner;
  for (std::size_t i = 0; i < depth; ++i) out += close;
  return out;
}

// Hostile nesting fails with kTooDeep instead of recursing once per level (which overflowed the
// stack at 30,000 parentheses). The depths are the ones an attacker sent, and more.
TEST(Evaluate, RefusesNestingDeeperThanTheLimit) {
  struct Case {
    std::string_view open, inner, close;
  };
  const Case cases[] = {
      {"(", "1", ")"},
      {"(SELECT ", "1", ")"},
      {"CONCAT(", "'a'", ")"},
      {"IFNULL(", "NULL", ", 'a')"},
      {"COALESCE(NULL, ", "'a'", ")"},
      {"REPLACE(", "'a'", ", 'a', 'b')"},
  };
  for (const Case& c : cases) {
    for (std::size_t depth : {30000u, 100000u}) {
      const std::string expr = nested(depth, c.open, c.inner, c.close);
      Evaluation e = evaluate(expr, lookup, EvalLimits{});
      EXPECT_FALSE(e.value) << c.open << depth;
      EXPECT_EQ(e.failure, EvalFailure::kTooDeep) << c.open << depth;
    }
    // Within the limit, the same shapes evaluate.
    Evaluation ok = evaluate(nested(60, c.open, c.inner, c.close), lookup, EvalLimits{});
    EXPECT_TRUE(ok.value) << c.open;
  }
  EXPECT_EQ(evaluate(nested(64, "(", "1", ")"), lookup, EvalLimits{.max_depth = 64}).value, "1");
  EXPECT_EQ(evaluate(nested(65, "(", "1", ")"), lookup, EvalLimits{.max_depth = 64}).failure,
            EvalFailure::kTooDeep);
}

TEST(Evaluate, RefusesValuesLargerThanTheLimit) {
  const std::string big(1000, 'x');
  const VariableLookup big_lookup = [&](VariableScope, std::string_view name) {
    return name == "big" ? std::optional(big) : std::nullopt;
  };
  const EvalLimits limits{.max_value_bytes = 4000};
  // A result over the limit.
  EXPECT_EQ(evaluate("CONCAT(@@big, @@big, @@big)", big_lookup, limits).value, big + big + big);
  EXPECT_EQ(evaluate("CONCAT(@@big, @@big, @@big, @@big, @@big)", big_lookup, limits).failure,
            EvalFailure::kTooLarge);
  // REPLACE that multiplies its input stops at the limit, not after building the whole result.
  EXPECT_EQ(evaluate("REPLACE(@@big, 'x', @@big)", big_lookup, limits).failure,
            EvalFailure::kTooLarge);
  // Many reads of a variable: the work bound stops them before the copies pile up.
  std::string many = "COALESCE(NULL";
  for (int i = 0; i < 10000; ++i) many += ", @@big";
  many += ")";
  EXPECT_EQ(evaluate(many, big_lookup, limits).failure, EvalFailure::kTooLarge);
  // Not understood stays distinct from too large.
  EXPECT_EQ(evaluate("UPPER('a')", big_lookup, limits).failure, EvalFailure::kNotUnderstood);
}

}  // namespace
}  // namespace ticketd::sql
