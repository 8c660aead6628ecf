#include "server/mysql/protocol/packet_reader.h"

#include <gtest/gtest.h>

#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::from_hex;

TEST(PacketReader, ReadsFixedWidthLittleEndianIntegers) {
  const std::string data = from_hex("01 02 03 04 05 06 07 08 09 0a 11 12 13 14 15 16 17 18");
  PacketReader r(data);
  EXPECT_EQ(r.u8(), 0x01);
  EXPECT_EQ(r.u16(), 0x0302);
  EXPECT_EQ(r.u24(), 0x060504U);
  EXPECT_EQ(r.u32(), 0x0a090807U);
  EXPECT_EQ(r.u64(), 0x1817161514131211ULL);
  EXPECT_TRUE(r.empty());
  EXPECT_TRUE(r.ok());
}

// Table from the "Protocol::LengthEncodedInteger" section of
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_dt_integers.html
// (boundaries of each form added by hand).
TEST(PacketReader, ReadsEveryLengthEncodedIntegerForm) {
  struct Case {
    std::string_view hex;
    std::uint64_t value;
  };
  const std::vector<Case> cases = {
      {"00", 0},
      {"fa", 250},
      {"fc fb 00", 251},
      {"fc ff ff", 0xFFFF},
      {"fd 00 00 01", 0x10000},
      {"fd ff ff ff", 0xFFFFFF},
      {"fe 00 00 00 01 00 00 00 00", 0x1000000},
      {"fe ff ff ff ff ff ff ff ff", ~0ULL},
  };
  for (const auto& c : cases) {
    const std::string data = from_hex(c.hex);
    PacketReader r(data);
    EXPECT_EQ(r.lenenc_int(), c.value) << c.hex;
    EXPECT_TRUE(r.ok() && r.empty()) << c.hex;
  }
}

TEST(PacketReader, RejectsNullAndErrMarkersAsIntegers) {
  for (const char* h : {"fb", "ff"}) {
    const std::string data = from_hex(h);
    PacketReader r(data);
    EXPECT_EQ(r.lenenc_int(), 0u);
    EXPECT_EQ(r.error(), ProtocolErrc::kMalformed) << h;
  }
}

TEST(PacketReader, ReadsStrings) {
  const std::string data = from_hex("03 61 62 63  78 79 00  31 32  72 65 73 74");
  PacketReader r(data);
  EXPECT_EQ(r.lenenc_string(), "abc");
  EXPECT_EQ(r.null_string(), "xy");
  EXPECT_EQ(r.fixed_string(2), "12");
  EXPECT_EQ(r.rest(), "rest");
  EXPECT_EQ(r.rest(), "");
  EXPECT_TRUE(r.ok());
}

TEST(PacketReader, ShortInputIsTruncatedAndSticky) {
  const std::string data = from_hex("01 02 03");
  PacketReader r(data);
  EXPECT_EQ(r.u32(), 0u);
  EXPECT_EQ(r.error(), ProtocolErrc::kTruncated);
  // After the first failure the cursor sits at the end and every read yields nothing.
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.u8(), 0);
  EXPECT_EQ(r.rest(), "");
  EXPECT_EQ(r.error(), ProtocolErrc::kTruncated);
}

TEST(PacketReader, LengthEncodedStringLongerThanTheRestIsTruncated) {
  const std::string data = from_hex("05 61 62");
  PacketReader r(data);
  EXPECT_EQ(r.lenenc_string(), "");
  EXPECT_EQ(r.error(), ProtocolErrc::kTruncated);
}

TEST(PacketReader, HugeLengthPrefixDoesNotOverflow) {
  const std::string data = from_hex("fe ff ff ff ff ff ff ff ff 61");
  PacketReader r(data);
  EXPECT_EQ(r.lenenc_string(), "");
  EXPECT_EQ(r.error(), ProtocolErrc::kTruncated);
}

TEST(PacketReader, NulStringWithoutTerminatorIsTruncated) {
  const std::string data = "abc";
  PacketReader r(data);
  EXPECT_EQ(r.null_string(), "");
  EXPECT_EQ(r.error(), ProtocolErrc::kTruncated);
}

TEST(PacketReader, FirstErrorWins) {
  PacketReader r(std::string_view{});
  r.u8();
  r.fail(ProtocolErrc::kMalformed);
  EXPECT_EQ(r.error(), ProtocolErrc::kTruncated);
}

TEST(PacketReader, ExpectU8ChecksTheByte) {
  const std::string data = from_hex("03 16");
  PacketReader r(data);
  r.expect_u8(0x03);
  EXPECT_TRUE(r.ok());
  r.expect_u8(0x17);
  EXPECT_EQ(r.error(), ProtocolErrc::kUnexpectedPacket);
}

TEST(PacketReader, PeekDoesNotConsume) {
  const std::string data = "#";
  PacketReader r(data);
  EXPECT_EQ(r.peek(), '#');
  EXPECT_EQ(r.remaining(), 1u);
}

}  // namespace
}  // namespace ticketd::mysql
