#include "server/mysql/protocol/column_definition.h"

#include <gtest/gtest.h>

#include "server/mysql/protocol/protocol_errc.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::expect_every_strict_prefix_fails;
using testing::from_hex;
using testing::hex;
using testing::to_hex;

struct Case {
  std::string_view name;
  ColumnDefinition41 column;
  std::string_view hex;
};

ColumnDefinition41 version_comment_column() {
  ColumnDefinition41 c;
  c.name = "@@version_comment";
  c.character_set = kCharsetLatin1SwedishCi;
  c.column_length = 28;
  c.type = kTypeVarString;
  c.decimals = 0x1f;
  return c;
}

ColumnDefinition41 ticket_id_column() {
  ColumnDefinition41 c;
  c.schema = "ticketd";
  c.table = "t";
  c.org_table = "tickets";
  c.name = "id";
  c.org_name = "id";
  c.character_set = kCharsetBinary;
  c.column_length = 20;
  c.type = kTypeLongLong;
  c.flags = kNotNullFlag | kPriKeyFlag | kUnsignedFlag | kBinaryFlag | kAutoIncrementFlag;
  return c;
}

const std::vector<Case> kCases = {
    // The column of the "SELECT @@version_comment LIMIT 1" example on
    // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query_response_text_resultset.html
    // (second packet, header stripped).
    {"docs_version_comment", version_comment_column(),
     "03 64 65 66 00 00 00 11 40 40 76 65 72 73 69 6f 6e 5f 63 6f 6d 6d 65 6e 74 00 0c 08 00 1c 00 "
     "00 00 fd 00 00 1f 00 00"},
    // Hand-built from the layout table: every name field set, flags 0x02a3 =
    // NOT_NULL|PRI_KEY|UNSIGNED|BINARY|AUTO_INCREMENT.
    {"ticket_id", ticket_id_column(),
     "03 64 65 66 07 74 69 63 6b 65 74 64 01 74 07 74 69 63 6b 65 74 73 02 69 64 02 69 64 0c 3f 00 "
     "14 00 00 00 08 a3 02 00 00 00"},
};

TEST(ColumnDefinition41, EncodesByteForByte) {
  for (const auto& c : kCases) EXPECT_EQ(to_hex(to_payload(c.column)), hex(c.hex)) << c.name;
}

TEST(ColumnDefinition41, DecodesWhatItEncodes) {
  for (const auto& c : kCases) {
    const std::string payload = from_hex(c.hex);
    auto r = decode_column_definition41(as_bytes(payload));
    ASSERT_TRUE(r.has_value()) << c.name;
    EXPECT_EQ(*r, c.column) << c.name;
  }
}

TEST(ColumnDefinition41, EveryStrictPrefixFails) {
  for (const auto& c : kCases) {
    expect_every_strict_prefix_fails(from_hex(c.hex),
                                     [](ByteView b) { return decode_column_definition41(b); });
  }
}

TEST(ColumnDefinition41, RejectsAWrongFixedFieldsLength) {
  std::string payload = from_hex(kCases[0].hex);
  payload[26] = 0x0b;  // the 0x0c after org_name
  EXPECT_EQ(decode_column_definition41(as_bytes(payload)).error(), ProtocolErrc::kMalformed);
}

}  // namespace
}  // namespace ticketd::mysql
