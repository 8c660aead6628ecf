// Bearer-token checks for the HTTP front end.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticketd::http {

/// True when a and b are equal. Takes the same time whatever the contents and lengths: both
/// sides are hashed (SHA-256) and the digests compared with CRYPTO_memcmp, so neither a
/// matching prefix nor the token's length leaks through timing.
[[nodiscard]] bool constant_time_equals(std::string_view a, std::string_view b);

/// The token of an "Authorization: Bearer <token>" value (scheme case-insensitive), or nullopt.
[[nodiscard]] std::optional<std::string_view> bearer_token(std::string_view authorization);

/// True when `authorization` carries one of `tokens`. Every token is compared (no early exit).
[[nodiscard]] bool authorized(const std::vector<std::string>& tokens,
                              std::string_view authorization);

}  // namespace ticketd::http
