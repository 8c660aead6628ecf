#include "server/mysql/protocol/packet_writer.h"

#include <gtest/gtest.h>

#include "server/mysql/protocol/packet_reader.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::hex;
using testing::to_hex;

TEST(PacketWriter, WritesFixedWidthLittleEndianIntegers) {
  std::string out;
  PacketWriter w(out);
  w.u8(0x01);
  w.u16(0x0302);
  w.u24(0x060504);
  w.u32(0x0a090807);
  w.u64(0x1817161514131211ULL);
  EXPECT_EQ(to_hex(out), hex("01 02 03 04 05 06 07 08 09 0a 11 12 13 14 15 16 17 18"));
}

TEST(PacketWriter, UsesTheShortestLengthEncodedForm) {
  struct Case {
    std::uint64_t value;
    std::string_view hex;
  };
  const std::vector<Case> cases = {
      {0, "00"},
      {250, "fa"},
      {251, "fc fb 00"},
      {0xFFFF, "fc ff ff"},
      {0x10000, "fd 00 00 01"},
      {0xFFFFFF, "fd ff ff ff"},
      {0x1000000, "fe 00 00 00 01 00 00 00 00"},
      {~0ULL, "fe ff ff ff ff ff ff ff ff"},
  };
  for (const auto& c : cases) {
    std::string out;
    PacketWriter w(out);
    w.lenenc_int(c.value);
    EXPECT_EQ(to_hex(out), hex(c.hex)) << c.value;
    PacketReader r(out);
    EXPECT_EQ(r.lenenc_int(), c.value);
  }
}

TEST(PacketWriter, WritesStrings) {
  std::string out;
  PacketWriter w(out);
  w.lenenc_string("abc");
  w.null_string("xy");
  w.raw(std::string_view("12"));
  w.zeros(3);
  EXPECT_EQ(to_hex(out), hex("03 61 62 63  78 79 00  31 32  00 00 00"));
  EXPECT_EQ(w.size(), out.size());
}

TEST(PacketWriter, AppendsToAByteVectorToo) {
  std::vector<std::uint8_t> out = {0xAA};
  PacketWriter w(out);
  w.u16(0x0102);
  w.lenenc_string("z");
  w.zeros(20);
  EXPECT_EQ(out.size(), 1u + 2u + 2u + 20u);
  EXPECT_EQ(out[0], 0xAA);
  EXPECT_EQ(out[1], 0x02);
  EXPECT_EQ(out[4], 'z');
  EXPECT_EQ(w.size(), out.size());
}

}  // namespace
}  // namespace ticketd::mysql
