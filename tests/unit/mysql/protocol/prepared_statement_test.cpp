#include "server/mysql/protocol/prepared_statement.h"

#include <gtest/gtest.h>

#include <limits>

#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/protocol_errc.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::expect_every_strict_prefix_fails;
using testing::from_hex;
using testing::hex;
using testing::to_hex;

constexpr Capabilities kCaps41 = kClientProtocol41 | kClientTransactions;

std::string frame_all(const std::vector<std::string>& payloads, std::uint8_t first_seq) {
  std::string out;
  for (const auto& p : payloads) append_frame(out, p, first_seq);
  return out;
}

ColumnDefinition41 concat_column() {
  ColumnDefinition41 c;
  c.name = "col1";
  c.character_set = kCharsetBinary;
  c.type = kTypeVarString;
  c.flags = kBinaryFlag;
  c.decimals = 0x1f;
  return c;
}

// --- COM_STMT_PREPARE response -----------------------------------------------------------------

TEST(StmtPrepareOk, EncodesByteForByte) {
  // Hand-built from the layout: status, id 1, 1 column, 2 params, reserved, 0 warnings.
  EXPECT_EQ(to_hex(to_payload(StmtPrepareOk{1, 1, 2, 0})),
            hex("00 01 00 00 00 01 00 02 00 00 00 00"));
}

TEST(PrepareResponse, MatchesTheDocsExampleWithEof) {
  // Response to "SELECT CONCAT(?, ?) AS col1" on
  // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_prepare.html
  // reproduced from the docs page, each field re-checked against the layout: PREPARE_OK, 2 param
  // definitions, EOF, 1 column, EOF.
  const auto payloads =
      encode_prepare_response(1, 2, {concat_column()}, kCaps41, kServerStatusAutocommit);
  ASSERT_EQ(payloads.size(), 6u);
  EXPECT_EQ(to_hex(frame_all(payloads, 1)),
            hex("0c 00 00 01 00 01 00 00 00 01 00 02 00 00 00 00"
                " 17 00 00 02 03 64 65 66 00 00 00 01 3f 00 0c 3f 00 00 00 00 00 fd 80 00 00 00 00"
                " 17 00 00 03 03 64 65 66 00 00 00 01 3f 00 0c 3f 00 00 00 00 00 fd 80 00 00 00 00"
                " 05 00 00 04 fe 00 00 02 00"
                " 1a 00 00 05 03 64 65 66 00 00 00 04 63 6f 6c 31 00 0c 3f 00 00 00 00 00 fd 80 00"
                " 1f 00 00"
                " 05 00 00 06 fe 00 00 02 00"));
}

TEST(PrepareResponse, DeprecateEofSendsNoTerminators) {
  const auto payloads =
      encode_prepare_response(9, 2, {concat_column()}, kCaps41 | kClientDeprecateEof, 0);
  ASSERT_EQ(payloads.size(), 4u);  // PREPARE_OK, 2 params, 1 column
  EXPECT_EQ(payloads[1], to_payload(param_definition()));
  EXPECT_EQ(payloads[3], to_payload(concat_column()));
}

TEST(PrepareResponse, NoParamsNoColumnsIsJustTheOk) {
  const auto payloads = encode_prepare_response(3, 0, {}, kCaps41, 0);
  ASSERT_EQ(payloads.size(), 1u);
  EXPECT_EQ(to_hex(payloads[0]), hex("00 03 00 00 00 00 00 00 00 00 00 00"));
}

TEST(PrepareResponse, ParamsOnlyGetOneEof) {
  const auto payloads = encode_prepare_response(3, 1, {}, kCaps41, kServerStatusAutocommit);
  ASSERT_EQ(payloads.size(), 3u);
  EXPECT_EQ(to_hex(payloads[2]), hex("fe 00 00 02 00"));
}

TEST(StmtPrepare, DecodesTheDocsExample) {
  // COM_STMT_PREPARE example from the same page, header stripped.
  const std::string payload = from_hex(
      "16 53 45 4c 45 43 54 20 43 4f 4e 43 41 54 28 3f 2c 20 3f 29 20 41 53 20 63 6f 6c 31");
  auto r = decode_stmt_prepare(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->query, "SELECT CONCAT(?, ?) AS col1");
  EXPECT_FALSE(decode_stmt_prepare({}).has_value());
  EXPECT_EQ(decode_stmt_prepare(as_bytes(from_hex("03 41"))).error(),
            ProtocolErrc::kUnexpectedPacket);
}

// --- COM_STMT_EXECUTE --------------------------------------------------------------------------

// Example of https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_execute.html
// (statement 1, one VARCHAR parameter "foo", types bound), header "12 00 00 00" stripped.
constexpr std::string_view kDocsExecute = "17 01 00 00 00 00 01 00 00 00 00 01 0f 00 03 66 6f 6f";

TEST(StmtExecute, DecodesTheDocsExampleAndRemembersTypes) {
  const std::string payload = from_hex(kDocsExecute);
  std::vector<std::uint16_t> types;
  auto r = decode_stmt_execute(as_bytes(payload), 1, types);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->statement_id, 1u);
  EXPECT_EQ(r->flags, kCursorTypeNoCursor);
  EXPECT_EQ(r->iteration_count, 1u);
  ASSERT_EQ(r->params.size(), 1u);
  EXPECT_EQ(to_sql_literal(r->params[0]), "'foo'");
  EXPECT_EQ(types, std::vector<std::uint16_t>{kTypeVarchar});
}

TEST(StmtExecute, ReusesRememberedTypesWhenNoneAreSent) {
  // Hand-built: a second execute of the same statement with new-params-bound-flag 0.
  const std::string payload = from_hex("17 01 00 00 00 00 01 00 00 00 00 00 03 62 61 72");
  std::vector<std::uint16_t> types = {kTypeVarchar};
  auto r = decode_stmt_execute(as_bytes(payload), 1, types);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(to_sql_literal(r->params[0]), "'bar'");
  EXPECT_EQ(types, std::vector<std::uint16_t>{kTypeVarchar});
}

TEST(StmtExecute, WithoutTypesAndNothingRememberedFails) {
  const std::string payload = from_hex("17 01 00 00 00 00 01 00 00 00 00 00 03 62 61 72");
  std::vector<std::uint16_t> types;
  EXPECT_EQ(decode_stmt_execute(as_bytes(payload), 1, types).error(),
            ProtocolErrc::kMissingParamTypes);
}

TEST(StmtExecute, AllNullWithoutTypesIsFine) {
  // Hand-built: bitmap 01 marks the only parameter NULL, so no type is needed.
  const std::string payload = from_hex("17 01 00 00 00 00 01 00 00 00 01 00");
  std::vector<std::uint16_t> types;
  auto r = decode_stmt_execute(as_bytes(payload), 1, types);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(to_sql_literal(r->params[0]), "NULL");
}

// Hand-built from the layout: 9 parameters of mixed types, NULL in parameter 2 (bit 2 of byte 0)
// and parameter 8 (bit 0 of byte 1).
constexpr std::string_view kMixedExecute =
    "17 2a 00 00 00 00 01 00 00 00"
    " 04 01"                    // NULL bitmap, offset 0
    " 01"                       // new-params-bound
    " 08 80 08 00 06 00 01 00"  // LONGLONG unsigned, LONGLONG, NULL, TINY
    " 05 00 04 00 0c 00 fc 00"  // DOUBLE, FLOAT, DATETIME, BLOB
    " fd 00"                    // VAR_STRING (NULL in the bitmap)
    " ff ff ff ff ff ff ff ff"  // 18446744073709551615
    " fe ff ff ff ff ff ff ff"  // -2
    " 9c"                       // -100
    " 00 00 00 00 00 00 f8 3f"  // 1.5
    " 00 00 c0 3f"              // 1.5f
    " 07 e8 07 01 1f 0c 22 38"  // 2024-01-31 12:34:56
    " 04 27 3b 0a 5c";          // "';\n\\" (a hostile string)

TEST(StmtExecute, DecodesEveryParameterKind) {
  const std::string payload = from_hex(kMixedExecute);
  std::vector<std::uint16_t> types;
  auto r = decode_stmt_execute(as_bytes(payload), 9, types);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->statement_id, 42u);
  std::vector<std::string> literals;
  for (const auto& p : r->params) literals.push_back(to_sql_literal(p));
  EXPECT_EQ(literals,
            (std::vector<std::string>{"18446744073709551615", "-2", "NULL", "-100", "1.5", "1.5",
                                      "'2024-01-31 12:34:56'", R"('\';\n\\')", "NULL"}));
  EXPECT_EQ(types.size(), 9u);
  EXPECT_EQ(types[0], kTypeLongLong | kParamUnsignedFlag);
}

TEST(StmtExecute, EveryStrictPrefixFails) {
  for (const std::string_view h : {kDocsExecute, kMixedExecute}) {
    const std::string payload = from_hex(h);
    const std::uint16_t n = h == kDocsExecute ? 1 : 9;
    expect_every_strict_prefix_fails(payload, [n](ByteView b) {
      std::vector<std::uint16_t> types;
      return decode_stmt_execute(b, n, types);
    });
  }
}

TEST(StmtExecute, RememberedTypesSurviveAFailedDecode) {
  std::string payload = from_hex(kDocsExecute);
  payload.pop_back();  // truncate the value
  std::vector<std::uint16_t> types = {kTypeLongLong};
  EXPECT_FALSE(decode_stmt_execute(as_bytes(payload), 1, types).has_value());
  EXPECT_EQ(types, std::vector<std::uint16_t>{kTypeLongLong});
}

TEST(StmtExecute, NoParamsStopsAfterTheFixedPart) {
  const std::string payload = from_hex("17 05 00 00 00 00 01 00 00 00");
  std::vector<std::uint16_t> types;
  auto r = decode_stmt_execute(as_bytes(payload), 0, types);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->params.empty());
}

TEST(StmtExecute, LongDataParametersCarryNoValueInThePacket) {
  // Hand-built: parameter 0 came through COM_STMT_SEND_LONG_DATA, parameter 1 is inline.
  const std::string payload =
      from_hex("17 01 00 00 00 00 01 00 00 00 00 01 fc 00 03 00 05 00 00 00");
  std::vector<std::uint16_t> types;
  const std::vector<std::optional<std::string>> long_data = {std::string("big blob")};
  auto r = decode_stmt_execute(as_bytes(payload), 2, types, long_data);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(to_sql_literal(r->params[0]), "'big blob'");
  EXPECT_EQ(to_sql_literal(r->params[1]), "5");
}

TEST(StmtExecute, RejectsQueryAttributesAndOtherCommands) {
  std::vector<std::uint16_t> types;
  const std::string with_count = from_hex("17 01 00 00 00 08 01 00 00 00 01");
  EXPECT_EQ(decode_stmt_execute(as_bytes(with_count), 1, types).error(),
            ProtocolErrc::kUnsupported);
  const std::string other = from_hex("19 01 00 00 00 00 01 00 00 00");
  EXPECT_EQ(decode_stmt_execute(as_bytes(other), 0, types).error(),
            ProtocolErrc::kUnexpectedPacket);
}

TEST(StmtExecute, UnknownParameterTypeIsUnsupported) {
  const std::string payload = from_hex("17 01 00 00 00 00 01 00 00 00 00 01 42 00 00");
  std::vector<std::uint16_t> types;
  EXPECT_EQ(decode_stmt_execute(as_bytes(payload), 1, types).error(), ProtocolErrc::kUnsupported);
  EXPECT_TRUE(types.empty());
}

// --- COM_STMT_CLOSE / RESET / SEND_LONG_DATA ---------------------------------------------------

TEST(StmtClose, Decodes) {
  // Hand-built from
  // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_close.html
  const std::string payload = from_hex("19 01 00 00 00");
  auto r = decode_stmt_close(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->statement_id, 1u);
  expect_every_strict_prefix_fails(payload, [](ByteView b) { return decode_stmt_close(b); });
}

TEST(StmtReset, Decodes) {
  const std::string payload = from_hex("1a 02 01 00 00");
  auto r = decode_stmt_reset(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->statement_id, 0x102u);
  expect_every_strict_prefix_fails(payload, [](ByteView b) { return decode_stmt_reset(b); });
  EXPECT_EQ(decode_stmt_reset(as_bytes(from_hex("19 02 01 00 00"))).error(),
            ProtocolErrc::kUnexpectedPacket);
}

TEST(StmtSendLongData, Decodes) {
  // Hand-built from
  // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_send_long_data.html
  const std::string payload = from_hex("18 07 00 00 00 01 00 00 ff 61");
  auto r = decode_stmt_send_long_data(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->statement_id, 7u);
  EXPECT_EQ(r->param_id, 1u);
  EXPECT_EQ(r->data, std::string("\0\xff"
                                 "a",
                                 3));
  // The data is string<EOF>; only prefixes cutting the ids fail.
  testing::expect_prefixes_fail(payload, 7,
                                [](ByteView b) { return decode_stmt_send_long_data(b); });
}

}  // namespace
}  // namespace ticketd::mysql
