#include "server/mysql/protocol/result_set.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/generic_packets.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::hex;
using testing::to_hex;

constexpr Capabilities kCaps41 = kClientProtocol41 | kClientTransactions;

std::string frame_all(const std::vector<std::string>& payloads, std::uint8_t first_seq) {
  std::string out;
  for (const auto& p : payloads) append_frame(out, p, first_seq);
  return out;
}

ColumnDefinition41 version_comment_column() {
  ColumnDefinition41 c;
  c.name = "@@version_comment";
  c.character_set = kCharsetLatin1SwedishCi;
  c.column_length = 28;
  c.type = kTypeVarString;
  c.decimals = 0x1f;
  return c;
}

ColumnDefinition41 named(std::string name, std::uint8_t type, std::uint16_t flags = 0) {
  ColumnDefinition41 c;
  c.name = std::move(name);
  c.type = type;
  c.flags = flags;
  return c;
}

TEST(TextRow, EncodesValuesAndNull) {
  std::string out;
  PacketWriter w(out);
  encode_text_row({std::string("1"), std::nullopt, std::string("")}, w);
  EXPECT_EQ(to_hex(out), hex("01 31 fb 00"));
}

TEST(ResultSet, TextWithEofMatchesTheDocsExample) {
  // "SELECT @@version_comment LIMIT 1" from
  // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query_response_text_resultset.html
  // reproduced from the docs page, each field re-checked against the layout: count, column, EOF,
  // one row, EOF with sequence ids 1..5.
  const auto payloads =
      encode_result_set({version_comment_column()}, {{std::string("MySQL Community Server (GPL)")}},
                        false, kCaps41, kServerStatusAutocommit);
  ASSERT_EQ(payloads.size(), 5u);
  EXPECT_EQ(to_hex(frame_all(payloads, 1)),
            hex("01 00 00 01 01 27 00 00 02 03 64 65 66 00 00 00 11 40 40 76 65 72 73 69 6f 6e 5f "
                "63 6f 6d 6d 65 6e 74 00 0c 08 00 1c 00 00 00 fd 00 00 1f 00 00 05 00 00 03 fe 00 "
                "00 02 00 1d 00 00 04 1c 4d 79 53 51 4c 20 43 6f 6d 6d 75 6e 69 74 79 20 53 65 72 "
                "76 65 72 20 28 47 50 4c 29 05 00 00 05 fe 00 00 02 00"));
}

TEST(ResultSet, DeprecateEofDropsTheMiddleEofAndEndsWithOkFe) {
  const auto payloads = encode_result_set({named("id", kTypeLongLong, kUnsignedFlag)},
                                          {{std::string("42")}, {std::nullopt}}, false,
                                          kCaps41 | kClientDeprecateEof, kServerStatusAutocommit);
  ASSERT_EQ(payloads.size(), 5u);  // count, column, 2 rows, terminator
  EXPECT_EQ(to_hex(payloads[0]), hex("01"));
  EXPECT_EQ(to_hex(payloads[2]), hex("02 34 32"));
  EXPECT_EQ(to_hex(payloads[3]), hex("fb"));
  EXPECT_EQ(to_hex(payloads[4]), hex("fe 00 00 02 00 00 00"));
}

TEST(ResultSet, EmptyResultStillHasTerminators) {
  const auto with_eof =
      encode_result_set({named("id", kTypeLongLong)}, {}, false, kCaps41, kServerStatusAutocommit);
  ASSERT_EQ(with_eof.size(), 4u);
  EXPECT_TRUE(is_eof_packet(as_bytes(with_eof[2])));
  EXPECT_TRUE(is_eof_packet(as_bytes(with_eof[3])));
  const auto deprecated =
      encode_result_set({named("id", kTypeLongLong)}, {}, true, kCaps41 | kClientDeprecateEof, 0);
  ASSERT_EQ(deprecated.size(), 3u);
  EXPECT_EQ(to_hex(deprecated[2]), hex("fe 00 00 00 00 00 00"));
}

TEST(ResultSet, StatusFlagsReachTheTerminator) {
  const auto payloads =
      encode_result_set({named("a", kTypeVarString)}, {{std::string("x")}}, false, kCaps41,
                        kServerStatusAutocommit | kServerMoreResultsExists);
  EXPECT_EQ(to_hex(payloads.back()), hex("fe 00 00 0a 00"));
}

TEST(BinaryRow, MatchesTheDocsExample) {
  // Example of
  // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_binary_resultset.html (one
  // VAR_STRING column "foobar", sequence id 4), reproduced from the docs page, each field
  // re-checked against the layout.
  std::string out;
  PacketWriter w(out);
  encode_binary_row({named("c", kTypeVarString)}, {std::string("foobar")}, w);
  std::uint8_t seq = 4;
  EXPECT_EQ(to_hex(frame(out, seq)), hex("09 00 00 04 00 00 06 66 6f 6f 62 61 72"));
}

TEST(BinaryRow, ConvertsEachColumnTypeAndUsesBitmapOffsetTwo) {
  // Hand-built: 7 columns need (7 + 7 + 2) / 8 = 2 bitmap bytes; the NULL in column 6 is bit 8.
  const std::vector<ColumnDefinition41> columns = {
      named("u64", kTypeLongLong, kUnsignedFlag),
      named("i32", kTypeLong),
      named("i16", kTypeShort),
      named("i8", kTypeTiny),
      named("dbl", kTypeDouble),
      named("str", kTypeVarString),
      named("nul", kTypeLongLong),
  };
  const Row row = {std::string("18446744073709551615"),
                   std::string("-2"),
                   std::string("300"),
                   std::string("-1"),
                   std::string("1.5"),
                   std::string("abc"),
                   std::nullopt};
  std::string out;
  PacketWriter w(out);
  encode_binary_row(columns, row, w);
  EXPECT_EQ(to_hex(out), hex("00 00 01"
                             " ff ff ff ff ff ff ff ff"
                             " fe ff ff ff"
                             " 2c 01"
                             " ff"
                             " 00 00 00 00 00 00 f8 3f"
                             " 03 61 62 63"));
}

TEST(BinaryRow, NullBitmapPositions) {
  // Hand-built: (6 + 7 + 2) / 8 = 1 bitmap byte; NULLs in columns 0 and 5 set bits 2 and 7.
  std::vector<ColumnDefinition41> columns(6, named("c", kTypeVarString));
  const Row row = {std::nullopt,     std::string("a"), std::string("b"),
                   std::string("c"), std::string("d"), std::nullopt};
  std::string out;
  PacketWriter w(out);
  encode_binary_row(columns, row, w);
  EXPECT_EQ(to_hex(out), hex("00 84 01 61 01 62 01 63 01 64"));
}

TEST(ResultSet, BinaryUsesBinaryRows) {
  const auto payloads =
      encode_result_set({named("id", kTypeLongLong, kUnsignedFlag)}, {{std::string("7")}}, true,
                        kCaps41 | kClientDeprecateEof, kServerStatusAutocommit);
  ASSERT_EQ(payloads.size(), 4u);
  EXPECT_EQ(to_hex(payloads[2]), hex("00 00 07 00 00 00 00 00 00 00"));
}

TEST(ResultSet, RejectsCallerBugs) {
  EXPECT_THROW((void)encode_result_set({}, {}, false, kCaps41, 0), std::invalid_argument);
  EXPECT_THROW((void)encode_result_set({named("a", kTypeLong)}, {{std::nullopt, std::nullopt}},
                                       false, kCaps41, 0),
               std::invalid_argument);
  EXPECT_THROW(
      (void)encode_result_set({named("a", kTypeLong)}, {{std::string("x")}}, true, kCaps41, 0),
      std::invalid_argument);
}

}  // namespace
}  // namespace ticketd::mysql
