#include "server/mysql/protocol/generic_packets.h"

#include <gtest/gtest.h>

#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/protocol_errc.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::expect_every_strict_prefix_fails;
using testing::expect_prefixes_fail;
using testing::from_hex;
using testing::hex;
using testing::to_hex;

constexpr Capabilities kCaps41 = kClientProtocol41 | kClientTransactions;
constexpr Capabilities kCapsTrack = kCaps41 | kClientSessionTrack;

struct OkCase {
  std::string_view name;
  OkPacket ok;
  Capabilities caps;
  std::string_view hex;  // payload only
};

const std::vector<OkCase> kOkCases = {
    // Example of
    // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_ok_packet.html
    // (0 rows, last id 0, AUTOCOMMIT, 0 warnings), header stripped; the framed form is tested
    // below.
    {"docs_example", {0, 0, kServerStatusAutocommit, 0, ""}, kCaps41, "00 00 00 02 00 00 00"},
    // Hand-built from the layout: lenenc 300 is fc 2c 01; with SESSION_TRACK the info is lenenc.
    {"insert_with_info_session_track",
     {1, 300, kServerStatusAutocommit | kServerStatusInTrans, 1, "Rows: 1"},
     kCapsTrack,
     "00 01 fc 2c 01 03 00 01 00 07 52 6f 77 73 3a 20 31"},
    // Hand-built: without SESSION_TRACK the info is string<EOF>.
    {"info_as_rest_of_packet",
     {2, 0, kServerStatusAutocommit, 0, "ok"},
     kCaps41,
     "00 02 00 02 00 00 00 6f 6b"},
    // Hand-built: a 9-byte lenenc last_insert_id (Snowflake-sized IDs).
    {"large_insert_id",
     {1, 0x0123456789ABCDEFULL, kServerStatusAutocommit, 0, ""},
     kCapsTrack,
     "00 01 fe ef cd ab 89 67 45 23 01 02 00 00 00"},
};

TEST(OkPacket, EncodesByteForByte) {
  for (const auto& c : kOkCases) {
    EXPECT_EQ(to_hex(to_payload(c.ok, c.caps)), hex(c.hex)) << c.name;
  }
}

TEST(OkPacket, DecodesWhatItEncodes) {
  for (const auto& c : kOkCases) {
    const std::string payload = from_hex(c.hex);
    auto r = decode_ok_packet(as_bytes(payload), c.caps);
    ASSERT_TRUE(r.has_value()) << c.name;
    EXPECT_EQ(*r, c.ok) << c.name;
  }
}

TEST(OkPacket, MatchesTheFramedDocsExample) {
  std::uint8_t seq = 2;
  const OkPacket ok{0, 0, kServerStatusAutocommit, 0, ""};
  EXPECT_EQ(to_hex(frame(to_payload(ok, kCaps41), seq)), hex("07 00 00 02 00 00 00 02 00 00 00"));
}

TEST(OkPacket, AsEofUsesHeaderFe) {
  std::string out;
  PacketWriter w(out);
  encode_ok_as_eof(OkPacket{0, 0, kServerStatusAutocommit, 0, ""}, kCaps41 | kClientDeprecateEof,
                   w);
  EXPECT_EQ(to_hex(out), hex("fe 00 00 02 00 00 00"));
  auto r = decode_ok_packet(as_bytes(out), kCaps41);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status_flags, kServerStatusAutocommit);
}

TEST(OkPacket, EveryPrefixOfTheFixedPartFails) {
  for (const auto& c : kOkCases) {
    const std::string payload = from_hex(c.hex);
    // Everything up to the warnings is mandatory; the info may legitimately be absent.
    const std::size_t mandatory =
        payload.size() - (c.ok.info.empty()              ? 0
                          : c.caps & kClientSessionTrack ? c.ok.info.size() + 1
                                                         : c.ok.info.size());
    expect_prefixes_fail(payload, mandatory,
                         [&](ByteView b) { return decode_ok_packet(b, c.caps); });
  }
}

TEST(OkPacket, RejectsOtherHeaders) {
  const std::string payload = from_hex("ff 00 00 02 00 00 00");
  EXPECT_EQ(decode_ok_packet(as_bytes(payload), kCaps41).error(), ProtocolErrc::kUnexpectedPacket);
}

struct ErrCase {
  std::string_view name;
  ErrPacket err;
  Capabilities caps;
  std::string_view hex;
};

const std::vector<ErrCase> kErrCases = {
    // Example of
    // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_err_packet.html
    // (1096 "No tables used"), header stripped.
    {"docs_example",
     {1096, "HY000", "No tables used"},
     kCaps41,
     "ff 48 04 23 48 59 30 30 30 4e 6f 20 74 61 62 6c 65 73 20 75 73 65 64"},
    // Hand-built: without CLIENT_PROTOCOL_41 there is no '#' marker or SQLSTATE.
    {"pre_41", {1045, "", "denied"}, 0, "ff 15 04 64 65 6e 69 65 64"},
};

TEST(ErrPacket, EncodesByteForByte) {
  for (const auto& c : kErrCases) {
    EXPECT_EQ(to_hex(to_payload(c.err, c.caps)), hex(c.hex)) << c.name;
  }
}

TEST(ErrPacket, MatchesTheFramedDocsExample) {
  std::uint8_t seq = 1;
  EXPECT_EQ(
      to_hex(frame(to_payload(kErrCases[0].err, kCaps41), seq)),
      hex("17 00 00 01 ff 48 04 23 48 59 30 30 30 4e 6f 20 74 61 62 6c 65 73 20 75 73 65 64"));
}

TEST(ErrPacket, DecodesWhatItEncodes) {
  for (const auto& c : kErrCases) {
    const std::string payload = from_hex(c.hex);
    auto r = decode_err_packet(as_bytes(payload));
    ASSERT_TRUE(r.has_value()) << c.name;
    EXPECT_EQ(*r, c.err) << c.name;
  }
}

TEST(ErrPacket, SqlStateIsAlwaysFiveCharacters) {
  EXPECT_EQ(to_hex(to_payload(ErrPacket{1, "42", ""}, kCaps41)), hex("ff 01 00 23 34 32 30 30 30"));
  EXPECT_EQ(to_hex(to_payload(ErrPacket{1, "4200012", ""}, kCaps41)),
            hex("ff 01 00 23 34 32 30 30 30"));
}

TEST(ErrPacket, PrefixesCuttingTheFixedPartFail) {
  const std::string payload = from_hex(kErrCases[0].hex);
  // header(1) + code(2) may be followed by nothing; '#' + 5 state bytes must be complete. A
  // prefix of 3 bytes is a valid ERR without state; prefixes of 4..8 cut the state.
  expect_prefixes_fail(payload, 3, [](ByteView b) { return decode_err_packet(b); });
  for (std::size_t n = 4; n < 9; ++n) {
    EXPECT_FALSE(decode_err_packet(as_bytes(payload.substr(0, n))).has_value()) << n;
  }
}

TEST(EofPacket, EncodesTheDocsExample) {
  // Example of
  // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_eof_packet.html
  std::uint8_t seq = 5;
  const EofPacket eof{0, kServerStatusAutocommit};
  EXPECT_EQ(to_hex(frame(to_payload(eof, kCaps41), seq)), hex("05 00 00 05 fe 00 00 02 00"));
  const std::string payload = from_hex("fe 00 00 02 00");
  auto r = decode_eof_packet(as_bytes(payload), kCaps41);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, eof);
  expect_every_strict_prefix_fails(payload,
                                   [](ByteView b) { return decode_eof_packet(b, kCaps41); });
}

TEST(EofPacket, IsEofPacketNeedsFeAndFewerThanNineBytes) {
  EXPECT_TRUE(is_eof_packet(as_bytes(from_hex("fe 00 00 02 00"))));
  EXPECT_TRUE(is_eof_packet(as_bytes(from_hex("fe 00 00 02 00 00 00"))));
  // A text row whose first value has a 9-byte length prefix.
  EXPECT_FALSE(is_eof_packet(as_bytes(from_hex("fe 00 00 00 01 00 00 00 00"))));
  EXPECT_FALSE(is_eof_packet(as_bytes(from_hex("00 00 00 02 00"))));
  EXPECT_FALSE(is_eof_packet({}));
}

TEST(GenericPackets, GarbageNeverCrashes) {
  // Every 2-byte input and a few structured ones; the point is that nothing reads out of bounds.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 15) {
      const std::vector<std::uint8_t> in = {static_cast<std::uint8_t>(a),
                                            static_cast<std::uint8_t>(b)};
      (void)decode_ok_packet(in, kCapsTrack);
      (void)decode_err_packet(in);
      (void)decode_eof_packet(in, kCaps41);
    }
  }
  const std::string huge_info = from_hex("00 00 00 02 00 00 00 fe ff ff ff ff ff ff ff 7f");
  EXPECT_EQ(decode_ok_packet(as_bytes(huge_info), kCapsTrack).error(), ProtocolErrc::kTruncated);
}

}  // namespace
}  // namespace ticketd::mysql
