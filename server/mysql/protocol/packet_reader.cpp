#include "server/mysql/protocol/packet_reader.h"

#include <algorithm>

namespace ticketd::mysql {

void PacketReader::fail(ProtocolErrc e) noexcept {
  if (!error_) error_ = make_error_code(e);
  pos_ = data_.size();
}

ByteView PacketReader::bytes(std::size_t n) noexcept {
  if (error_ || n > remaining()) {
    fail(ProtocolErrc::kTruncated);
    return {};
  }
  ByteView out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

std::uint64_t PacketReader::fixed_int(std::size_t n) noexcept {
  ByteView b = bytes(n);
  std::uint64_t v = 0;
  for (std::size_t i = b.size(); i-- > 0;) v = (v << 8) | b[i];
  return v;
}

std::uint8_t PacketReader::u8() noexcept { return static_cast<std::uint8_t>(fixed_int(1)); }
std::uint16_t PacketReader::u16() noexcept { return static_cast<std::uint16_t>(fixed_int(2)); }
std::uint32_t PacketReader::u24() noexcept { return static_cast<std::uint32_t>(fixed_int(3)); }
std::uint32_t PacketReader::u32() noexcept { return static_cast<std::uint32_t>(fixed_int(4)); }
std::uint64_t PacketReader::u64() noexcept { return fixed_int(8); }

std::uint8_t PacketReader::peek() noexcept {
  if (error_ || empty()) {
    fail(ProtocolErrc::kTruncated);
    return 0;
  }
  return data_[pos_];
}

void PacketReader::expect_u8(std::uint8_t expected) noexcept {
  const std::uint8_t actual = u8();
  if (ok() && actual != expected) fail(ProtocolErrc::kUnexpectedPacket);
}

std::uint64_t PacketReader::lenenc_int() noexcept {
  const std::uint8_t first = u8();
  if (first < 0xFB) return first;
  switch (first) {
    case 0xFC:
      return fixed_int(2);
    case 0xFD:
      return fixed_int(3);
    case 0xFE:
      return fixed_int(8);
    default:
      fail(ProtocolErrc::kMalformed);
      return 0;
  }
}

std::string_view PacketReader::lenenc_string() noexcept {
  const std::uint64_t n = lenenc_int();
  if (n > remaining()) {
    fail(ProtocolErrc::kTruncated);
    return {};
  }
  return as_chars(bytes(static_cast<std::size_t>(n)));
}

std::string_view PacketReader::null_string() noexcept {
  if (error_) return {};
  const auto begin = data_.begin() + static_cast<std::ptrdiff_t>(pos_);
  const auto nul = std::find(begin, data_.end(), std::uint8_t{0});
  if (nul == data_.end()) {
    fail(ProtocolErrc::kTruncated);
    return {};
  }
  const auto n = static_cast<std::size_t>(nul - begin);
  std::string_view s = as_chars(bytes(n));
  skip(1);
  return s;
}

std::string_view PacketReader::fixed_string(std::size_t n) noexcept { return as_chars(bytes(n)); }

std::string_view PacketReader::rest() noexcept { return as_chars(bytes(remaining())); }

}  // namespace ticketd::mysql
