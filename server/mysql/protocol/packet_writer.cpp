#include "server/mysql/protocol/packet_writer.h"

#include <array>

namespace ticketd::mysql {

void PacketWriter::append(const void* data, std::size_t n) {
  if (n == 0) return;
  const auto* p = static_cast<const std::uint8_t*>(data);
  if (str_ != nullptr) {
    str_->append(reinterpret_cast<const char*>(p), n);
  } else {
    vec_->insert(vec_->end(), p, p + n);
  }
}

void PacketWriter::fixed_int(std::uint64_t v, std::size_t n) {
  std::array<std::uint8_t, 8> buf{};
  for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<std::uint8_t>(v >> (8 * i));
  append(buf.data(), n);
}

void PacketWriter::lenenc_int(std::uint64_t v) {
  if (v < 0xFB) {
    u8(static_cast<std::uint8_t>(v));
  } else if (v <= 0xFFFF) {
    u8(0xFC);
    u16(static_cast<std::uint16_t>(v));
  } else if (v <= 0xFFFFFF) {
    u8(0xFD);
    u24(static_cast<std::uint32_t>(v));
  } else {
    u8(0xFE);
    u64(v);
  }
}

void PacketWriter::lenenc_string(std::string_view s) {
  lenenc_int(s.size());
  raw(s);
}

void PacketWriter::null_string(std::string_view s) {
  raw(s);
  u8(0);
}

void PacketWriter::zeros(std::size_t n) {
  static constexpr std::array<std::uint8_t, 16> kZeros{};
  while (n > 0) {
    const std::size_t k = n < kZeros.size() ? n : kZeros.size();
    append(kZeros.data(), k);
    n -= k;
  }
}

}  // namespace ticketd::mysql
