#include "server/mysql/protocol/framing.h"

#include <algorithm>

#include "server/mysql/protocol/protocol_errc.h"

namespace ticketd::mysql {

void FrameDecoder::feed(ByteView chunk) {
  // Compact before growing so the buffer does not keep already-parsed packets alive.
  if (consumed_ > 0 && consumed_ * 2 >= input_.size()) {
    input_.erase(0, consumed_);
    consumed_ = 0;
  }
  // Grown by doubling, but never past the end of the packet being received: a 15 MiB packet
  // holds 15 MiB, not the 16 MiB (or 32 MiB) doubling would round it up to.
  const std::size_t need = input_.size() + chunk.size();
  if (need > input_.capacity()) {
    std::size_t target = std::max(need, 2 * input_.capacity());
    if (awaiting_ > 0) target = std::min(target, std::max(need, consumed_ + awaiting_));
    input_.reserve(target);
  }
  input_.append(as_chars(chunk));
}

Result<std::optional<Frame>> FrameDecoder::next() {
  if (error_) return error_;
  for (;;) {
    const std::size_t available = input_.size() - consumed_;
    if (available < kPacketHeaderSize) return std::optional<Frame>{};
    const auto* h = reinterpret_cast<const std::uint8_t*>(input_.data() + consumed_);
    const std::size_t length = h[0] | (h[1] << 8) | (static_cast<std::size_t>(h[2]) << 16);
    const std::uint8_t seq = h[3];

    error_seq_ = seq;
    if (in_continuation_ && seq != static_cast<std::uint8_t>(last_seq_ + 1)) {
      error_ = make_error_code(ProtocolErrc::kBadSequence);
      return error_;
    }
    // Checked on the header alone: a continuation header (0xFFFFFF) over the limit fails here
    // before any of its 16 MiB arrive.
    if (pending_.size() + length > max_allowed_packet_) {
      error_ = make_error_code(ProtocolErrc::kPacketTooLarge);
      return error_;
    }
    if (available - kPacketHeaderSize < length) {
      awaiting_ = kPacketHeaderSize + length;
      return std::optional<Frame>{};
    }
    awaiting_ = 0;

    if (!in_continuation_) first_seq_ = seq;
    last_seq_ = seq;
    if (pending_.empty() && consumed_ == 0 && available == kPacketHeaderSize + length &&
        length > kMaxKeptInput) {
      // A large packet that arrived alone becomes the payload in place: no second copy of it.
      pending_.swap(input_);
      pending_.erase(0, kPacketHeaderSize);
    } else {
      pending_.append(input_, consumed_ + kPacketHeaderSize, length);
      consumed_ += kPacketHeaderSize + length;
    }
    if (consumed_ == input_.size()) {
      // Read to its end: a buffer a large packet grew goes back (an idle connection keeps
      // no more than kMaxKeptInput).
      if (input_.capacity() > kMaxKeptInput) {
        std::string().swap(input_);
      } else {
        input_.clear();
      }
      consumed_ = 0;
    }

    if (length == kMaxPhysicalPayload) {
      in_continuation_ = true;
      continue;
    }
    in_continuation_ = false;
    Frame done{first_seq_, last_seq_, std::move(pending_)};
    pending_.clear();
    return std::optional<Frame>{std::move(done)};
  }
}

void append_frame(std::string& out, std::string_view payload, std::uint8_t& sequence_id) {
  // Loop at least once so an empty payload still produces its (empty) packet, and keep going
  // after a full-size chunk so a payload of exactly k * 0xFFFFFF ends with an empty packet.
  std::size_t offset = 0;
  for (;;) {
    const std::size_t n = std::min(kMaxPhysicalPayload, payload.size() - offset);
    // Two appends (the header, then the payload): a cached ticket's answer is five small
    // frames, and a byte at a time cost more than the rest of the framing.
    const char header[kPacketHeaderSize] = {
        static_cast<char>(n & 0xFF), static_cast<char>((n >> 8) & 0xFF),
        static_cast<char>((n >> 16) & 0xFF), static_cast<char>(sequence_id++)};
    out.append(header, kPacketHeaderSize);
    out.append(payload.substr(offset, n));
    offset += n;
    if (n < kMaxPhysicalPayload) break;
  }
}

std::string frame(std::string_view payload, std::uint8_t& sequence_id) {
  std::string out;
  out.reserve(payload.size() + kPacketHeaderSize * (1 + payload.size() / kMaxPhysicalPayload));
  append_frame(out, payload, sequence_id);
  return out;
}

}  // namespace ticketd::mysql
