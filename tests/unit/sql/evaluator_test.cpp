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

}  // namespace
}  // namespace ticketd::sql
