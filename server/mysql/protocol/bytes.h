// Byte-view vocabulary shared by the codec: payloads are read as spans of unsigned bytes and
// produced as std::string (cheap to move, easy to append, what socket writes take).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace ticketd::mysql {

/// A non-owning view of wire bytes. The viewed memory must outlive every use of the view.
using ByteView = std::span<const std::uint8_t>;

inline ByteView as_bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

inline std::string_view as_chars(ByteView b) noexcept {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace ticketd::mysql
