#include "server/base/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ticketd {
namespace {

struct Utf8Case {
  std::string_view label;
  std::string text;
  bool valid;
  std::string repaired;  // to_valid_utf8(text)
};

const std::string kFffd = "\xef\xbf\xbd";

// The well-formedness table of RFC 3629 section 4, at its edges.
const Utf8Case kUtf8Cases[] = {
    {"empty", "", true, ""},
    {"ascii", "Tickets64", true, "Tickets64"},
    {"two bytes", "r\xc3\xa9sum\xc3\xa9", true, "r\xc3\xa9sum\xc3\xa9"},
    {"three bytes", "\xe2\x82\xac", true, "\xe2\x82\xac"},
    {"four bytes", "\xf0\x9f\x8e\x9f", true, "\xf0\x9f\x8e\x9f"},
    {"last code point", "\xf4\x8f\xbf\xbf", true, "\xf4\x8f\xbf\xbf"},
    {"nul is a character", std::string("a\0b", 3), true, std::string("a\0b", 3)},
    {"lone continuation", "a\x80", false, "a" + kFffd},
    {"0xff", "\xff", false, kFffd},
    {"overlong slash", "\xc0\xaf", false, kFffd + kFffd},
    {"overlong three bytes", "\xe0\x80\xaf", false, kFffd + kFffd + kFffd},
    {"surrogate", "\xed\xa0\x80", false, kFffd + kFffd + kFffd},
    {"above U+10FFFF", "\xf4\x90\x80\x80", false, kFffd + kFffd + kFffd + kFffd},
    {"truncated at the end", "ab\xe2\x82", false, "ab" + kFffd + kFffd},
    {"truncated before ascii", "\xe2\x82x", false, kFffd + kFffd + "x"},
};

TEST(Utf8, ChecksAndRepairsByTheRfcTable) {
  for (const auto& c : kUtf8Cases) {
    EXPECT_EQ(is_valid_utf8(c.text), c.valid) << c.label;
    EXPECT_EQ(to_valid_utf8(c.text), c.repaired) << c.label;
    EXPECT_TRUE(is_valid_utf8(to_valid_utf8(c.text))) << c.label;
  }
}

TEST(Utf8, SequenceLengthIsZeroForAnythingButAWholeCharacter) {
  EXPECT_EQ(utf8_sequence_length(""), 0u);
  EXPECT_EQ(utf8_sequence_length("a"), 1u);
  EXPECT_EQ(utf8_sequence_length("\xc3\xa9x"), 2u);
  EXPECT_EQ(utf8_sequence_length("\xc3"), 0u);
  EXPECT_EQ(utf8_sequence_length("\xf0\x9f\x8e\x9f"), 4u);
}

}  // namespace
}  // namespace ticketd
