#include "server/mysql/protocol/binary_value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "server/mysql/protocol/protocol_errc.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::from_hex;
using testing::hex;
using testing::to_hex;

TEST(ToSqlLiteral, RendersEachKind) {
  struct Case {
    std::optional<ParamValue> value;
    std::string_view literal;
  };
  const std::vector<Case> cases = {
      {std::nullopt, "NULL"},
      {ParamValue{std::int64_t{-42}}, "-42"},
      {ParamValue{std::numeric_limits<std::int64_t>::min()}, "-9223372036854775808"},
      {ParamValue{std::uint64_t{18446744073709551615ULL}}, "18446744073709551615"},
      {ParamValue{1.5}, "1.5"},
      {ParamValue{0.1f}, "0.1"},  // float keeps its own shortest form, not 0.100000001...
      {ParamValue{1e300}, "1e+300"},
      {ParamValue{std::string("abc")}, "'abc'"},
      {ParamValue{std::string("")}, "''"},
      {ParamValue{std::string(R"(it's "q" \ end)")}, R"('it\'s \"q\" \\ end')"},
      {ParamValue{std::string("a\nb\rc\x1a"
                              "d\0e",
                              9)},
       R"('a\nb\rc\Zd\0e')"},
      {ParamValue{std::string("2024-01-31 12:00:00")}, "'2024-01-31 12:00:00'"},
  };
  for (const auto& c : cases) EXPECT_EQ(to_sql_literal(c.value), c.literal);
}

struct ReadCase {
  std::string_view name;
  std::uint16_t type;
  std::string_view hex;
  ParamValue value;
};

// Hand-built from the "Binary Protocol Value" section of
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_binary_resultset.html
const std::vector<ReadCase> kReadCases = {
    {"tiny_signed", kTypeTiny, "ff", std::int64_t{-1}},
    {"tiny_unsigned", kTypeTiny | kParamUnsignedFlag, "ff", std::uint64_t{255}},
    {"short", kTypeShort, "2c 01", std::int64_t{300}},
    {"short_negative", kTypeShort, "d4 fe", std::int64_t{-300}},
    {"year", kTypeYear, "e8 07", std::int64_t{2024}},
    {"long", kTypeLong, "fe ff ff ff", std::int64_t{-2}},
    {"int24", kTypeInt24, "40 42 0f 00", std::int64_t{1000000}},
    {"longlong", kTypeLongLong, "00 00 00 00 00 00 00 80",
     std::numeric_limits<std::int64_t>::min()},
    {"longlong_unsigned", kTypeLongLong | kParamUnsignedFlag, "ff ff ff ff ff ff ff ff",
     std::numeric_limits<std::uint64_t>::max()},
    {"float", kTypeFloat, "00 00 c0 3f", 1.5f},
    {"double", kTypeDouble, "00 00 00 00 00 00 f8 3f", 1.5},
    {"varchar", kTypeVarchar, "03 66 6f 6f", std::string("foo")},
    {"var_string", kTypeVarString, "00", std::string("")},
    {"blob", kTypeBlob, "02 00 ff", std::string("\0\xff", 2)},
    {"new_decimal", kTypeNewDecimal, "04 31 2e 32 35", std::string("1.25")},
    {"date", kTypeDate, "04 e8 07 01 1f", std::string("2024-01-31")},
    {"date_zero", kTypeDate, "00", std::string("0000-00-00")},
    {"datetime", kTypeDatetime, "07 e8 07 01 1f 0c 22 38", std::string("2024-01-31 12:34:56")},
    {"datetime_micro", kTypeDatetime, "0b e8 07 01 1f 0c 22 38 01 00 00 00",
     std::string("2024-01-31 12:34:56.000001")},
    {"datetime_date_only", kTypeDatetime, "04 e8 07 01 1f", std::string("2024-01-31")},
    {"datetime_zero", kTypeTimestamp, "00", std::string("0000-00-00 00:00:00")},
    {"time", kTypeTime, "08 00 00 00 00 00 0c 22 38", std::string("12:34:56")},
    {"time_negative_days", kTypeTime, "08 01 22 00 00 00 16 3b 3b", std::string("-838:59:59")},
    {"time_micro", kTypeTime, "0c 00 01 00 00 00 00 00 00 40 e2 01 00",
     std::string("24:00:00.123456")},
    {"time_zero", kTypeTime, "00", std::string("00:00:00")},
};

TEST(BinaryValue, ReadsEveryType) {
  for (const auto& c : kReadCases) {
    const std::string bytes = from_hex(c.hex);
    PacketReader r(bytes);
    const ParamValue v = read_binary_value(r, c.type);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.error().message();
    EXPECT_TRUE(r.empty()) << c.name;
    EXPECT_EQ(v, c.value) << c.name << " got " << to_sql_literal(v);
    testing::expect_every_strict_prefix_fails(bytes, [&](ByteView b) -> Result<ParamValue> {
      PacketReader pr(b);
      ParamValue pv = read_binary_value(pr, c.type);
      if (!pr.ok()) return pr.error();
      return pv;
    });
  }
}

TEST(BinaryValue, RejectsBadTemporalLengthsAndUnknownTypes) {
  {
    const std::string bytes = from_hex("05 e8 07 01 1f 00");
    PacketReader r(bytes);
    (void)read_binary_value(r, kTypeDatetime);
    EXPECT_EQ(r.error(), ProtocolErrc::kMalformed);
  }
  {
    const std::string bytes = from_hex("07 00 00 00 00 00 00 00");
    PacketReader r(bytes);
    (void)read_binary_value(r, kTypeTime);
    EXPECT_EQ(r.error(), ProtocolErrc::kMalformed);
  }
  {
    const std::string bytes = from_hex("00");
    PacketReader r(bytes);
    (void)read_binary_value(r, 0x42);
    EXPECT_EQ(r.error(), ProtocolErrc::kUnsupported);
  }
}

ColumnDefinition41 column(std::uint8_t type, std::uint16_t flags = 0) {
  ColumnDefinition41 c;
  c.type = type;
  c.flags = flags;
  return c;
}

struct WriteCase {
  std::string_view name;
  ColumnDefinition41 column;
  std::string_view text;
  std::string_view hex;
};

// Hand-built: the text form of each value and the bytes mysqld would send for it in a binary row
// (temporal values in their shortest form).
const std::vector<WriteCase> kWriteCases = {
    {"tiny", column(kTypeTiny), "-1", "ff"},
    {"tiny_unsigned", column(kTypeTiny, kUnsignedFlag), "255", "ff"},
    {"tiny_min", column(kTypeTiny), "-128", "80"},
    {"tiny_leading_zeros", column(kTypeTiny), "007", "07"},
    {"tiny_minus_zero", column(kTypeTiny), "-0", "00"},
    {"short", column(kTypeShort), "300", "2c 01"},
    {"year", column(kTypeYear, kUnsignedFlag), "2024", "e8 07"},
    {"long", column(kTypeLong), "-2", "fe ff ff ff"},
    {"int24", column(kTypeInt24), "1000000", "40 42 0f 00"},
    {"longlong", column(kTypeLongLong), "-9223372036854775808", "00 00 00 00 00 00 00 80"},
    {"longlong_unsigned", column(kTypeLongLong, kUnsignedFlag), "18446744073709551615",
     "ff ff ff ff ff ff ff ff"},
    {"float", column(kTypeFloat), "1.5", "00 00 c0 3f"},
    {"double", column(kTypeDouble), "1.5", "00 00 00 00 00 00 f8 3f"},
    {"varchar", column(kTypeVarString), "foo", "03 66 6f 6f"},
    {"decimal_as_text", column(kTypeNewDecimal), "1.25", "04 31 2e 32 35"},
    {"date", column(kTypeDate), "2024-01-31", "04 e8 07 01 1f"},
    {"date_zero", column(kTypeDate), "0000-00-00", "00"},
    {"datetime", column(kTypeDatetime), "2024-01-31 12:34:56", "07 e8 07 01 1f 0c 22 38"},
    {"datetime_midnight", column(kTypeDatetime), "2024-01-31 00:00:00", "04 e8 07 01 1f"},
    {"datetime_micro", column(kTypeTimestamp), "2024-01-31 12:34:56.5",
     "0b e8 07 01 1f 0c 22 38 20 a1 07 00"},
    {"time", column(kTypeTime), "12:34:56", "08 00 00 00 00 00 0c 22 38"},
    {"time_negative", column(kTypeTime), "-838:59:59", "08 01 22 00 00 00 16 3b 3b"},
    {"time_zero", column(kTypeTime), "00:00:00", "00"},
};

TEST(BinaryValue, WritesEveryType) {
  for (const auto& c : kWriteCases) {
    std::string out;
    PacketWriter w(out);
    write_binary_value(c.column, c.text, w);
    EXPECT_EQ(to_hex(out), hex(c.hex)) << c.name;
  }
}

TEST(BinaryValue, WriteRejectsTextThatDoesNotFitTheType) {
  const std::vector<std::pair<ColumnDefinition41, std::string_view>> bad = {
      {column(kTypeLongLong), "abc"},
      {column(kTypeLongLong), "12x"},
      {column(kTypeLongLong), ""},
      {column(kTypeTiny), "128"},
      {column(kTypeTiny, kUnsignedFlag), "-1"},
      {column(kTypeShort, kUnsignedFlag), "65536"},
      {column(kTypeTiny), "-129"},
      {column(kTypeLongLong), "+1"},
      {column(kTypeLongLong), " 1"},
      {column(kTypeLongLong), "1 "},
      {column(kTypeLongLong), "-"},
      {column(kTypeLongLong), "9223372036854775808"},
      {column(kTypeLongLong), "-9223372036854775809"},
      {column(kTypeLongLong, kUnsignedFlag), "18446744073709551616"},
      {column(kTypeLongLong, kUnsignedFlag), "-0"},
      {column(kTypeLongLong, kUnsignedFlag), ""},
      {column(kTypeDouble), "1.5.2"},
      {column(kTypeDate), "2024-1-31"},
      {column(kTypeDate), "2024-+1-31"},
      {column(kTypeDate), "2024-01- 1"},
      {column(kTypeTime), "-12:-4:56"},
      {column(kTypeDatetime), "2024-01-31T12:00:00"},
      {column(kTypeDatetime), "2024-01-31 12:00:00."},
      {column(kTypeTime), "12:34"},
  };
  for (const auto& [col, text] : bad) {
    std::string out;
    PacketWriter w(out);
    EXPECT_THROW(write_binary_value(col, text, w), std::invalid_argument) << text;
  }
}

}  // namespace
}  // namespace ticketd::mysql
