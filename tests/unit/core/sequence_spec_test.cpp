#include "server/core/sequence_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ticketd {
namespace {

struct NameCase {
  std::string_view label;
  std::string name;
  std::string_view problem;  // a substring of the message; empty: the name is valid
};

const NameCase kNameCases[] = {
    {"plain", "Tickets64", ""},
    {"one character", "a", ""},
    {"64 characters", std::string(64, 'x'), ""},
    {"dots inside", "orders.v2", ""},
    {"three dots", "...", ""},
    {"dash and underscore", "order-id_2", ""},
    {"utf-8", "r\xc3\xa9sum\xc3\xa9", ""},
    {"empty", "", "empty"},
    {"65 characters", std::string(65, 'x'), "longer than 64"},
    {"dot", ".", "'.' or '..'"},
    {"dot dot", "..", "'.' or '..'"},
    {"space inside", "a b", "space"},
    {"leading space", " a", "space"},
    {"trailing space", "a ", "space"},
    {"only a space", " ", "space"},
    {"tab", "a\tb", "control character"},
    {"newline", "a\nb", "control character"},
    {"carriage return", "a\r", "control character"},
    {"nul", std::string("a\0b", 3), "control character"},
    {"escape", "\x1b[31m", "control character"},
    {"delete", "a\x7f", "control character"},
    {"slash", "a/b", "'/'"},
    {"path", "../etc", "'/'"},
    {"backquote", "a`b", "backquote"},
    // Found by tests/fuzz/http: a name from "%FF" made every JSON answer naming it invalid.
    {"not utf-8", "a\xff", "not valid UTF-8"},
    {"truncated utf-8", "r\xc3", "not valid UTF-8"},
    {"overlong utf-8", "\xc0\xaf", "not valid UTF-8"},
    {"utf-16 surrogate", "\xed\xa0\x80", "not valid UTF-8"},
};

TEST(SequenceSpec, ValidateNameAppliesOneRuleToEveryName) {
  for (const auto& c : kNameCases) {
    const std::string problem = validate_name(c.name);
    if (c.problem.empty()) {
      EXPECT_EQ(problem, "") << c.label;
    } else {
      EXPECT_NE(problem.find(c.problem), std::string::npos) << c.label << ": " << problem;
    }
  }
}

TEST(SequenceSpec, ValidateRefusesASpecWhoseNameBreaksTheRule) {
  for (const auto& c : kNameCases) {
    SequenceSpec spec;
    spec.name = c.name;
    EXPECT_EQ(validate(spec).empty(), c.problem.empty()) << c.label;
  }
}

TEST(SequenceSpec, NameProblemsNeverRepeatTheName) {
  EXPECT_EQ(validate_name("a\nINJECTED").find("INJECTED"), std::string::npos);
}

}  // namespace
}  // namespace ticketd
