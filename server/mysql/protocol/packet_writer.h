// Appends the protocol's primitive types to a caller-owned buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/mysql/protocol/bytes.h"

namespace ticketd::mysql {

/// Writes the basic data types of
/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_data_types.html
/// by appending to a std::string or std::vector<uint8_t> that the caller owns and that must outlive
/// the writer. Writing cannot fail (apart from std::bad_alloc). Not thread safe.
class PacketWriter {
 public:
  explicit PacketWriter(std::string& out) noexcept : str_(&out) {}
  explicit PacketWriter(std::vector<std::uint8_t>& out) noexcept : vec_(&out) {}

  void u8(std::uint8_t v) { fixed_int(v, 1); }
  void u16(std::uint16_t v) { fixed_int(v, 2); }
  void u24(std::uint32_t v) { fixed_int(v, 3); }
  void u32(std::uint32_t v) { fixed_int(v, 4); }
  void u64(std::uint64_t v) { fixed_int(v, 8); }
  /// int<lenenc>, the shortest of the 1/3/4/9-byte forms.
  void lenenc_int(std::uint64_t v);
  /// string<lenenc>.
  void lenenc_string(std::string_view s);
  /// string<NUL>; `s` must not contain NUL (the reader would stop there).
  void null_string(std::string_view s);
  /// string<fix> and string<EOF> are both just the bytes.
  void raw(std::string_view s) { append(s.data(), s.size()); }
  void raw(ByteView b) { append(b.data(), b.size()); }
  void zeros(std::size_t n);

  std::size_t size() const noexcept { return str_ != nullptr ? str_->size() : vec_->size(); }

 private:
  void fixed_int(std::uint64_t v, std::size_t n);
  void append(const void* data, std::size_t n);

  std::string* str_ = nullptr;
  std::vector<std::uint8_t>* vec_ = nullptr;
};

/// Encodes one packet into a fresh payload: `to_payload(ok, caps)` calls `encode(ok, caps, w)`.
template <class Packet, class... Args>
std::string to_payload(const Packet& packet, const Args&... args) {
  std::string out;
  PacketWriter w(out);
  encode(packet, args..., w);
  return out;
}

}  // namespace ticketd::mysql
