#include "server/mysql/protocol/commands.h"

#include <gtest/gtest.h>

#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/protocol_errc.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::expect_every_strict_prefix_fails;
using testing::expect_prefixes_fail;
using testing::from_hex;

TEST(ComQuery, DecodesTheDocsExample) {
  // Example of https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query.html
  // header stripped.
  const std::string payload = from_hex(
      "03 73 65 6c 65 63 74 20 40 40 76 65 72 73 69 6f 6e 5f 63 6f 6d 6d 65 6e 74 20 6c 69 6d 69 "
      "74 20 31");
  auto r = decode_com_query(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->query, "select @@version_comment limit 1");
  expect_prefixes_fail(payload, 1, [](ByteView b) { return decode_com_query(b); });
}

TEST(ComQuery, EmptyQueryIsAllowedByTheCodec) {
  const std::string payload = from_hex("03");
  auto r = decode_com_query(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->query, "");
}

TEST(ComInitDb, Decodes) {
  // Hand-built: COM_INIT_DB "tickets".
  const std::string payload = from_hex("02 74 69 63 6b 65 74 73");
  auto r = decode_com_init_db(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->schema, "tickets");
  expect_prefixes_fail(payload, 1, [](ByteView b) { return decode_com_init_db(b); });
}

TEST(ComFieldList, DecodesTableAndWildcard) {
  // Hand-built: table "t" NUL-terminated, wildcard "i%" as the rest.
  const std::string payload = from_hex("04 74 00 69 25");
  auto r = decode_com_field_list(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->table, "t");
  EXPECT_EQ(r->wildcard, "i%");
  // Prefixes cutting the table name (before its NUL) fail; the wildcard is string<EOF>.
  expect_prefixes_fail(payload, 3, [](ByteView b) { return decode_com_field_list(b); });
}

TEST(ComFieldList, WithoutWildcard) {
  // The mysql CLI sends just the table name and its NUL.
  const std::string payload = from_hex("04 74 00");
  auto r = decode_com_field_list(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->wildcard, "");
}

TEST(ComSetOption, Decodes) {
  const std::string payload = from_hex("1b 01 00");
  auto r = decode_com_set_option(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->option, kMysqlOptionMultiStatementsOff);
  expect_every_strict_prefix_fails(payload, [](ByteView b) { return decode_com_set_option(b); });
}

TEST(Commands, RejectTheWrongCommandByte) {
  const std::string payload = from_hex("0e 00 00");
  EXPECT_EQ(decode_com_query(as_bytes(payload)).error(), ProtocolErrc::kUnexpectedPacket);
  EXPECT_EQ(decode_com_init_db(as_bytes(payload)).error(), ProtocolErrc::kUnexpectedPacket);
  EXPECT_EQ(decode_com_field_list(as_bytes(payload)).error(), ProtocolErrc::kUnexpectedPacket);
  EXPECT_EQ(decode_com_set_option(as_bytes(payload)).error(), ProtocolErrc::kUnexpectedPacket);
}

}  // namespace
}  // namespace ticketd::mysql
