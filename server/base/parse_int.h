// Strict decimal integer parsing, for text that must be a number and nothing else.
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace ticketd {

/// Parses all of `text` as a base-10 integer of type T. Refused: the empty string, any space,
/// a '+', a '-' for an unsigned type, a trailing byte of any kind, and a value outside T's range
/// (never wrapped or clamped). A '-' is accepted for signed types, and leading zeros are
/// accepted: keys in the store are zero-padded.
template <std::integral T>
requires(!std::same_as<std::remove_cv_t<T>, bool>)
    [[nodiscard]] std::optional<T> parse_int(std::string_view text) noexcept {
  if (text.empty()) return std::nullopt;
  T value{};
  const char* const end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

[[nodiscard]] inline std::optional<std::uint64_t> parse_u64(std::string_view text) noexcept {
  return parse_int<std::uint64_t>(text);
}

[[nodiscard]] inline std::optional<std::int64_t> parse_i64(std::string_view text) noexcept {
  return parse_int<std::int64_t>(text);
}

}  // namespace ticketd
