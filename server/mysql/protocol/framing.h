// Splitting a byte stream into logical MySQL payloads, and the reverse.
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_packets.html
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/mysql/protocol/bytes.h"

namespace ticketd::mysql {

/// Largest payload of one physical packet. A physical packet of exactly this length says "the
/// logical payload continues in the next packet"; a payload whose length is a multiple of it is
/// therefore followed by an empty packet.
inline constexpr std::size_t kMaxPhysicalPayload = 0xFFFFFF;
inline constexpr std::size_t kPacketHeaderSize = 4;

/// One logical payload, continuation packets already joined.
struct Frame {
  std::uint8_t first_sequence_id = 0;
  /// Sequence id of the last physical packet; a reply to this frame starts at last + 1.
  std::uint8_t last_sequence_id = 0;
  std::string payload;
};

/// Turns arbitrarily split input bytes into Frames.
///
/// Memory stays bounded by max_allowed_packet plus the last chunk fed: the length in each header
/// is checked against the limit as soon as the 4 header bytes are in, before the body arrives, so a
/// peer announcing a huge packet is rejected without buffering it. Callers feed one chunk and then
/// call next() until it returns nullopt. Sequence ids must be consecutive (mod 256) inside one
/// logical payload; across payloads the caller checks them (they reset per command). After an
/// error the decoder keeps returning that error. Not thread safe.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t max_allowed_packet) noexcept
      : max_allowed_packet_(max_allowed_packet) {}

  void feed(ByteView chunk);
  void feed(std::string_view chunk) { feed(as_bytes(chunk)); }

  /// The next complete logical payload, nullopt if more bytes are needed, or an error
  /// (kPacketTooLarge, kBadSequence).
  [[nodiscard]] Result<std::optional<Frame>> next();

  /// Gives a returned Frame's payload back once it has been handled, so the next frame reuses
  /// its memory (kept only up to a small size: a large packet's memory goes back at once).
  void recycle(std::string&& payload) noexcept {
    if (pending_.empty() && payload.capacity() > pending_.capacity() &&
        payload.capacity() <= kMaxRecycledPayload) {
      payload.clear();
      pending_.swap(payload);
    }
  }

  /// E.g. raised after authentication; pre-auth packets are capped lower.
  void set_max_allowed_packet(std::size_t n) noexcept { max_allowed_packet_ = n; }
  std::size_t max_allowed_packet() const noexcept { return max_allowed_packet_; }

  /// Bytes held: unparsed input plus the partially assembled logical payload.
  std::size_t buffered() const noexcept { return input_.size() - consumed_ + pending_.size(); }
  /// Memory held: the capacity of the input buffer and of the payload being assembled, what a
  /// connection's memory budget is charged for. Input read to its end keeps at most
  /// kMaxKeptInput; a large packet's buffer goes back once it is parsed.
  std::size_t held() const noexcept { return input_.capacity() + pending_.capacity(); }
  /// The most held() keeps between packets: the input buffer's and a recycled payload's.
  static constexpr std::size_t kMaxRecycledPayload = 16 * 1024;
  static constexpr std::size_t kMaxKeptInput = 64 * 1024;
  static constexpr std::size_t kMaxIdleHeld = kMaxKeptInput + kMaxRecycledPayload;

  /// Sequence id of the header that caused next()'s error: an error reply continues from it.
  std::uint8_t error_sequence_id() const noexcept { return error_seq_; }

 private:
  std::size_t max_allowed_packet_;
  std::string input_;
  std::size_t consumed_ = 0;  // prefix of input_ already parsed; compacted lazily
  std::size_t awaiting_ = 0;  // bytes from consumed_ of the packet whose header is in, or 0
  std::string pending_;       // joined payload of the continuation packets seen so far
  bool in_continuation_ = false;
  std::uint8_t first_seq_ = 0;
  std::uint8_t last_seq_ = 0;
  ErrorCode error_;
  std::uint8_t error_seq_ = 0;
};

/// Frames `payload` as one or more physical packets, numbering them from `sequence_id`, which is
/// left at the id for the next packet (wrapping at 256).
void append_frame(std::string& out, std::string_view payload, std::uint8_t& sequence_id);
[[nodiscard]] std::string frame(std::string_view payload, std::uint8_t& sequence_id);

}  // namespace ticketd::mysql
