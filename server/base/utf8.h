// UTF-8 checks for text that leaves the server where UTF-8 is required (JSON answers).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ticketd {

/// The length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or 0 when it does not start with one.
[[nodiscard]] std::size_t utf8_sequence_length(std::string_view text) noexcept;

/// True when all of `text` is well-formed UTF-8.
[[nodiscard]] bool is_valid_utf8(std::string_view text) noexcept;

/// `text` with every byte that does not belong to a well-formed sequence replaced by U+FFFD,
/// as a browser decodes it: request bytes echoed into a JSON answer keep it valid JSON.
[[nodiscard]] std::string to_valid_utf8(std::string_view text);

}  // namespace ticketd
