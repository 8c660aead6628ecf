#include "server/mysql/protocol/framing.h"

#include <gtest/gtest.h>

#include "server/mysql/protocol/protocol_errc.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::from_hex;
using testing::hex;
using testing::to_hex;

constexpr std::size_t k16M = kMaxPhysicalPayload;  // 16 MiB - 1

// Collects every frame currently decodable; fails the test on error.
std::vector<Frame> drain(FrameDecoder& d) {
  std::vector<Frame> frames;
  for (;;) {
    auto r = d.next();
    EXPECT_TRUE(r.has_value()) << r.error().message();
    if (!r.has_value() || !r->has_value()) return frames;
    frames.push_back(std::move(**r));
  }
}

// The COM_QUERY example of
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query.html
// ("select @@version_comment limit 1", sequence id 0).
constexpr std::string_view kComQueryPacket =
    "21 00 00 00 03 73 65 6c 65 63 74 20 40 40 76 65 72 73 69 6f 6e 5f 63 6f 6d 6d 65 6e 74 20 6c "
    "69 6d 69 74 20 31";

TEST(Frame, WritesHeaderWithLengthAndSequenceId) {
  std::uint8_t seq = 0;
  EXPECT_EQ(to_hex(frame("\x03select @@version_comment limit 1", seq)), hex(kComQueryPacket));
  EXPECT_EQ(seq, 1);
}

TEST(Frame, EmptyPayloadIsAnEmptyPacket) {
  std::uint8_t seq = 7;
  EXPECT_EQ(to_hex(frame("", seq)), hex("00 00 00 07"));
  EXPECT_EQ(seq, 8);
}

TEST(Frame, SequenceIdWrapsAt256) {
  std::uint8_t seq = 255;
  EXPECT_EQ(to_hex(frame("x", seq)), hex("01 00 00 ff 78"));
  EXPECT_EQ(seq, 0);
}

TEST(Frame, PayloadOfExactly16MiBMinus1IsFollowedByAnEmptyPacket) {
  const std::string payload(k16M, 'a');
  std::uint8_t seq = 3;
  const std::string bytes = frame(payload, seq);
  ASSERT_EQ(bytes.size(), 4 + k16M + 4);
  EXPECT_EQ(to_hex(bytes.substr(0, 4)), hex("ff ff ff 03"));
  EXPECT_EQ(to_hex(bytes.substr(4 + k16M)), hex("00 00 00 04"));
  EXPECT_EQ(seq, 5);
}

TEST(Frame, LargerPayloadIsSplitIntoFullPacketsAndARemainder) {
  const std::string payload(2 * k16M + 10, 'b');
  std::uint8_t seq = 0;
  const std::string bytes = frame(payload, seq);
  ASSERT_EQ(bytes.size(), payload.size() + 3 * kPacketHeaderSize);
  EXPECT_EQ(to_hex(bytes.substr(0, 4)), hex("ff ff ff 00"));
  EXPECT_EQ(to_hex(bytes.substr(4 + k16M, 4)), hex("ff ff ff 01"));
  EXPECT_EQ(to_hex(bytes.substr(2 * (4 + k16M), 4)), hex("0a 00 00 02"));
  EXPECT_EQ(seq, 3);
}

TEST(FrameDecoder, DecodesOnePacket) {
  FrameDecoder d(1024);
  d.feed(from_hex(kComQueryPacket));
  const auto frames = drain(d);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "\x03select @@version_comment limit 1");
  EXPECT_EQ(frames[0].first_sequence_id, 0);
  EXPECT_EQ(frames[0].last_sequence_id, 0);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameDecoder, HandlesEverySplitPointAndSeveralPacketsPerChunk) {
  std::uint8_t seq = 0;
  std::string stream = frame("first", seq);
  stream += frame("", seq);
  stream += frame("third payload", seq);
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    FrameDecoder d(1024);
    std::vector<Frame> frames;
    d.feed(std::string_view(stream).substr(0, split));
    for (auto& f : drain(d)) frames.push_back(std::move(f));
    d.feed(std::string_view(stream).substr(split));
    for (auto& f : drain(d)) frames.push_back(std::move(f));
    ASSERT_EQ(frames.size(), 3u) << split;
    EXPECT_EQ(frames[0].payload, "first");
    EXPECT_EQ(frames[1].payload, "");
    EXPECT_EQ(frames[2].payload, "third payload");
    EXPECT_EQ(frames[2].last_sequence_id, 2);
  }
}

TEST(FrameDecoder, ByteAtATime) {
  std::uint8_t seq = 0;
  const std::string stream = frame("hello", seq) + frame("world", seq);
  FrameDecoder d(1024);
  std::vector<Frame> frames;
  for (const char c : stream) {
    d.feed(std::string_view(&c, 1));
    for (auto& f : drain(d)) frames.push_back(std::move(f));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1].payload, "world");
}

TEST(FrameDecoder, JoinsContinuationPackets) {
  std::string payload(2 * k16M + 5, 'c');
  payload[0] = 'X';
  payload[k16M] = 'Y';
  payload.back() = 'Z';
  std::uint8_t seq = 4;
  const std::string stream = frame(payload, seq);
  FrameDecoder d(std::size_t{64} * 1024 * 1024);
  // Feed in odd-sized chunks so headers straddle chunk boundaries.
  std::vector<Frame> frames;
  for (std::size_t i = 0; i < stream.size(); i += 1000003) {
    d.feed(std::string_view(stream).substr(i, 1000003));
    for (auto& f : drain(d)) frames.push_back(std::move(f));
  }
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload.size(), payload.size());
  EXPECT_TRUE(frames[0].payload == payload);
  EXPECT_EQ(frames[0].first_sequence_id, 4);
  EXPECT_EQ(frames[0].last_sequence_id, 6);
}

TEST(FrameDecoder, Exactly16MiBMinus1NeedsTheTrailingEmptyPacket) {
  const std::string payload(k16M, 'd');
  std::uint8_t seq = 0;
  const std::string stream = frame(payload, seq);
  FrameDecoder d(k16M);
  d.feed(std::string_view(stream).substr(0, stream.size() - 4));
  EXPECT_TRUE(drain(d).empty());  // the empty packet is still missing
  d.feed(std::string_view(stream).substr(stream.size() - 4));
  const auto frames = drain(d);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload.size(), k16M);
  EXPECT_EQ(frames[0].last_sequence_id, 1);
}

TEST(FrameDecoder, RejectsAnOversizedPacketFromItsHeaderAlone) {
  FrameDecoder d(1000);
  d.feed(from_hex("e9 03 00 00"));  // announces 1001 bytes; no body sent
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), ProtocolErrc::kPacketTooLarge);
  EXPECT_LE(d.buffered(), 4u);
  // The error is sticky.
  d.feed(std::string(10, 'x'));
  EXPECT_EQ(d.next().error(), ProtocolErrc::kPacketTooLarge);
}

TEST(FrameDecoder, AcceptsAPacketOfExactlyTheLimit) {
  FrameDecoder d(3);
  d.feed(from_hex("03 00 00 00 61 62 63"));
  const auto frames = drain(d);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "abc");
}

TEST(FrameDecoder, RejectsAContinuationHeaderOverTheLimitBeforeItsBody) {
  FrameDecoder d(std::size_t{1024} * 1024);
  d.feed(from_hex("ff ff ff 00"));
  EXPECT_EQ(d.next().error(), ProtocolErrc::kPacketTooLarge);
}

TEST(FrameDecoder, CountsContinuationsTowardsTheLimit) {
  // The first packet fits, the total does not: rejected at the second header, so the decoder
  // never holds more than the limit.
  const std::size_t limit = k16M + 100;
  std::string payload(k16M + 101, 'e');
  std::uint8_t seq = 0;
  const std::string stream = frame(payload, seq);
  FrameDecoder d(limit);
  d.feed(std::string_view(stream).substr(0, 4 + k16M + 4));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), ProtocolErrc::kPacketTooLarge);
}

TEST(FrameDecoder, RejectsOutOfOrderContinuation) {
  std::string stream = from_hex("ff ff ff 00") + std::string(k16M, 'f') + from_hex("00 00 00 05");
  FrameDecoder d(std::size_t{64} * 1024 * 1024);
  d.feed(stream);
  EXPECT_EQ(d.next().error(), ProtocolErrc::kBadSequence);
}

TEST(FrameDecoder, LimitCanBeRaisedAfterAuthentication) {
  FrameDecoder d(4);
  d.set_max_allowed_packet(8);
  EXPECT_EQ(d.max_allowed_packet(), 8u);
  d.feed(from_hex("06 00 00 00 61 62 63 64 65 66"));
  ASSERT_EQ(drain(d).size(), 1u);
}

TEST(FrameDecoder, GivesALargePacketsMemoryBackOnceItIsParsed) {
  // An idle connection kept 32 MiB after one 15 MiB packet (issue 27.12).
  FrameDecoder d(32 * 1024 * 1024);
  const std::string payload(15 * 1024 * 1024, 'q');
  std::uint8_t seq = 0;
  const std::string wire = frame(payload, seq);
  for (std::size_t at = 0; at < wire.size(); at += 65536) {
    d.feed(std::string_view(wire).substr(at, 65536));
  }
  EXPECT_GE(d.held(), payload.size());  // held while it arrives: what the budget is charged
  auto f = d.next();
  ASSERT_TRUE(f && *f);
  EXPECT_EQ((*f)->payload.size(), payload.size());
  EXPECT_LE(d.held(), FrameDecoder::kMaxIdleHeld);
  d.recycle(std::move((*f)->payload));  // too large to keep
  EXPECT_LE(d.held(), FrameDecoder::kMaxIdleHeld);
  // Small packets afterwards reuse a small buffer.
  seq = 0;
  d.feed(frame("x", seq));
  ASSERT_TRUE(d.next());
  EXPECT_LE(d.held(), FrameDecoder::kMaxIdleHeld);
}

}  // namespace
}  // namespace ticketd::mysql
