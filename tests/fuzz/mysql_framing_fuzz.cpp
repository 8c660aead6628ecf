// FrameDecoder on arbitrary byte streams.
//
// Input: a limit selector, a chunking seed, then either the raw stream or (selector bit 7) a list
// of physical packets to synthesize, so that 16 MiB continuation packets are reachable from a
// small input: [flags][sequence id][u16 length][bytes], the flags making the packet a full
// 0xFFFFFF bytes (the bytes repeated) when it is 0xFF.
//
// Invariants: the stream fed at once and fed in random chunks (with recycled payloads) gives the
// same frames, the same error and the same buffered bytes; no frame is over the limit; framing
// the frames again (append_frame from their first sequence id) gives back exactly the bytes
// consumed, and ends at their last sequence id.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/protocol_errc.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using ticketd::ErrorCode;
using ticketd::fuzz::Input;
using ticketd::mysql::Frame;
using ticketd::mysql::FrameDecoder;
using ticketd::mysql::kMaxPhysicalPayload;

constexpr std::array<std::size_t, 8> kLimits = {0,
                                                1,
                                                100,
                                                64 * 1024,
                                                kMaxPhysicalPayload - 1,
                                                kMaxPhysicalPayload,
                                                16 * 1024 * 1024,
                                                1024 * 1024 * 1024};

struct Outcome {
  std::vector<Frame> frames;  // decode_at_once only; decode_in_chunks compares as it goes
  std::size_t count = 0;
  ErrorCode error;
  std::uint8_t error_seq = 0;
  std::size_t buffered = 0;
};

bool same(const Frame& a, const Frame& b) {
  return a.first_sequence_id == b.first_sequence_id && a.last_sequence_id == b.last_sequence_id &&
         a.payload == b.payload;
}

// Drains every complete frame into `out.frames`, or checks each against `expected` and recycles
// it; false once the decoder reported its (sticky) error.
bool drain(FrameDecoder& decoder, Outcome& out, const std::vector<Frame>* expected, bool recycle) {
  for (;;) {
    auto next = decoder.next();
    if (!next) {
      out.error = next.error();
      out.error_seq = decoder.error_sequence_id();
      // Sticky: asking again gives the same error.
      auto again = decoder.next();
      FUZZ_CHECK(!again && again.error() == out.error);
      return false;
    }
    if (!next->has_value()) return true;
    Frame& f = **next;
    FUZZ_CHECK(f.payload.size() <= decoder.max_allowed_packet());
    if (expected == nullptr) {
      out.frames.push_back(std::move(f));
    } else {
      FUZZ_CHECK(out.count < expected->size() && same(f, (*expected)[out.count]));
      if (recycle) decoder.recycle(std::move(f.payload));
    }
    ++out.count;
  }
}

Outcome decode_at_once(std::string_view stream, std::size_t limit) {
  FrameDecoder decoder(limit);
  decoder.feed(stream);
  Outcome out;
  if (drain(decoder, out, nullptr, false)) out.buffered = decoder.buffered();
  return out;
}

Outcome decode_in_chunks(std::string_view stream, std::size_t limit, std::uint32_t seed,
                         const std::vector<Frame>& expected) {
  FrameDecoder decoder(limit);
  Outcome out;
  std::size_t pos = 0;
  std::uint32_t state = seed * 2654435761u + 1;
  bool ok = true;
  while (pos < stream.size() && ok) {
    state = state * 1103515245u + 12345u;
    // Mostly small chunks (header boundaries), sometimes large ones; a few dozen feeds for a
    // 16 MiB stream, so that it stays quick.
    const std::size_t small =
        stream.size() < 64 * 1024 ? 1 + (state >> 16) % 9 : (state >> 16) % 64 + stream.size() / 32;
    const std::size_t n = (state >> 16) % 8 == 0 ? 1 + (state >> 8) % 100000 : small;
    decoder.feed(stream.substr(pos, n));
    pos += std::min(n, stream.size() - pos);
    ok = drain(decoder, out, &expected, (state & 1) != 0);
  }
  if (ok) out.buffered = decoder.buffered();
  return out;
}

std::string synthesize(Input& in, std::size_t limit) {
  std::string stream;
  int full_packets = 0;
  while (!in.empty()) {
    const std::uint8_t flags = in.u8();
    const std::uint8_t seq = in.u8();
    const std::uint16_t n = in.u16();
    const std::string_view fill = in.bytes(n);
    std::size_t length = fill.size();
    bool header_only = false;
    if (flags == 0xFF && full_packets < 2) {
      ++full_packets;
      length = kMaxPhysicalPayload;
      // Under a smaller limit the header alone is refused: the 16 MiB would never be read.
      header_only = limit < kMaxPhysicalPayload;
    }
    if (!header_only) stream.reserve(stream.size() + 4 + length);
    stream.push_back(static_cast<char>(length & 0xFF));
    stream.push_back(static_cast<char>((length >> 8) & 0xFF));
    stream.push_back(static_cast<char>((length >> 16) & 0xFF));
    stream.push_back(static_cast<char>(seq));
    if (header_only) {
      continue;
    } else if (fill.empty()) {
      stream.append(length, '\0');
    } else {
      // The bytes repeated, by doubling what is already there (a few copies, not a loop per
      // repetition of a one-byte fill).
      const std::size_t start = stream.size();
      stream.append(fill.substr(0, length));
      while (stream.size() - start < length) {
        const std::size_t have = stream.size() - start;
        stream.append(stream, start, std::min(have, length - have));
      }
    }
  }
  return stream;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t selector = in.u8();
  const std::uint32_t seed = in.u8();
  const std::size_t limit = kLimits[selector & 7];
  const std::string stream =
      (selector & 0x80) != 0 ? synthesize(in, limit) : std::string(in.rest());

  const Outcome whole = decode_at_once(stream, limit);
  const Outcome chunked = decode_in_chunks(stream, limit, seed, whole.frames);

  FUZZ_CHECK(whole.count == chunked.count);
  FUZZ_CHECK(whole.error == chunked.error);
  if (whole.error) {
    FUZZ_CHECK(whole.error_seq == chunked.error_seq);
    FUZZ_CHECK(whole.error == ticketd::mysql::ProtocolErrc::kPacketTooLarge ||
               whole.error == ticketd::mysql::ProtocolErrc::kBadSequence);
  } else {
    FUZZ_CHECK(whole.buffered == chunked.buffered);
  }

  // Framing is canonical: the frames, framed again, are the bytes they were decoded from.
  std::size_t reframed = 0;
  std::string scratch;
  for (const Frame& f : whole.frames) {
    std::uint8_t seq = f.first_sequence_id;
    scratch.clear();
    ticketd::mysql::append_frame(scratch, f.payload, seq);
    FUZZ_CHECK(static_cast<std::uint8_t>(seq - 1) == f.last_sequence_id);
    FUZZ_CHECK(std::string_view(stream).substr(reframed, scratch.size()) == scratch);
    reframed += scratch.size();
  }
  if (!whole.error) {
    // What is left is buffered: unparsed bytes, and the payload of a continuation in progress
    // (without its 4-byte headers).
    FUZZ_CHECK(reframed + whole.buffered <= stream.size());
    FUZZ_CHECK((stream.size() - reframed - whole.buffered) % 4 == 0);
  }
  return 0;
}
