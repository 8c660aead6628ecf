// Hex helpers and the prefix check shared by the codec tests.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "server/mysql/protocol/bytes.h"

namespace ticketd::mysql::testing {

/// "0a 35 2e" (any whitespace, any case) -> bytes. Throws on odd digits or non-hex.
inline std::string from_hex(std::string_view hex) {
  std::string out;
  int high = -1;
  for (const char c : hex) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) throw std::invalid_argument("bad hex");
    const int v = std::isdigit(static_cast<unsigned char>(c))
                      ? c - '0'
                      : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<char>((high << 4) | v));
      high = -1;
    }
  }
  if (high >= 0) throw std::invalid_argument("odd hex");
  return out;
}

/// Bytes -> "0a 35 2e", the canonical form the tests compare (readable in failure output).
inline std::string to_hex(std::string_view bytes) {
  std::string out;
  char buf[4];
  for (const char c : bytes) {
    std::snprintf(buf, sizeof(buf), "%02x", static_cast<unsigned char>(c));
    if (!out.empty()) out.push_back(' ');
    out += buf;
  }
  return out;
}

/// Normalizes a hand-written hex literal to to_hex()'s form.
inline std::string hex(std::string_view h) { return to_hex(from_hex(h)); }

/// Runs `decode` on each prefix of `payload` with length in [0, end) and expects an error. Each
/// prefix lives in its own exactly sized heap buffer so AddressSanitizer flags any over-read.
template <class Decode>
void expect_prefixes_fail(std::string_view payload, std::size_t end, Decode decode) {
  for (std::size_t n = 0; n < end && n < payload.size(); ++n) {
    const std::vector<std::uint8_t> prefix(payload.data(), payload.data() + n);
    const auto result = decode(ByteView(prefix.data(), prefix.size()));
    EXPECT_FALSE(result.has_value()) << "prefix of " << n << " bytes decoded";
  }
}

/// Every strict prefix must fail.
template <class Decode>
void expect_every_strict_prefix_fails(std::string_view payload, Decode decode) {
  expect_prefixes_fail(payload, payload.size(), decode);
}

}  // namespace ticketd::mysql::testing
