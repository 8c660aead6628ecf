// Shared by the fuzz targets: invariant checks that abort, so that libFuzzer (or the replay
// program of the regular builds) reports a broken invariant like a crash, and a cursor that
// splits one fuzz input into the structured pieces a target needs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ticketd::fuzz {

[[noreturn]] inline void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line, what);
  std::abort();
}

}  // namespace ticketd::fuzz

/// Aborts with the condition's text when it does not hold (a macro for the text and the line).
#define FUZZ_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::ticketd::fuzz::invariant_failed(#cond, __FILE__, __LINE__))

namespace ticketd::fuzz {

/// Reads the fuzz input front to back. Reads past the end return zeros and short strings, so
/// that every input is a valid (if truncated) script: libFuzzer's mutations then never waste
/// an execution on a framing error of the harness itself.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size)
      : data_(reinterpret_cast<const char*>(data), size) {}
  explicit Input(std::string_view data) : data_(data) {}

  [[nodiscard]] bool empty() const { return pos_ >= data_.size(); }
  [[nodiscard]] std::size_t remaining() const { return data_.size() - pos_; }

  std::uint8_t u8() {
    if (empty()) return 0;
    return static_cast<std::uint8_t>(data_[pos_++]);
  }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u24() {
    const std::uint32_t lo = u16();
    return lo | (static_cast<std::uint32_t>(u8()) << 16);
  }
  std::uint32_t u32() {
    const std::uint32_t lo = u16();
    return lo | (static_cast<std::uint32_t>(u16()) << 16);
  }
  /// Up to `n` bytes (fewer at the end of the input).
  std::string_view bytes(std::size_t n) {
    n = std::min(n, remaining());
    const std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  /// A piece prefixed by its 3-byte little-endian length.
  std::string_view piece24() { return bytes(u24()); }
  std::string_view rest() { return bytes(remaining()); }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

}  // namespace ticketd::fuzz
