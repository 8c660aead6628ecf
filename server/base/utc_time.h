// UTC timestamps as text: what API answers, log lines and error messages print.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ticketd {

/// "2026-01-01T00:00:00.123Z": ISO 8601 (the RFC 3339 profile) in UTC with milliseconds.
/// Times before 1970 are fine: -1 is "1969-12-31T23:59:59.999Z".
[[nodiscard]] std::string format_utc_ms(std::int64_t unix_ms);

/// "2026-01-01 00:00:00": MySQL's DATETIME text form in UTC, milliseconds dropped (rounded
/// towards the past, so -1 is "1969-12-31 23:59:59").
[[nodiscard]] std::string format_utc_datetime(std::int64_t unix_ms);

/// Reads "YYYY-MM-DDTHH:MM:SS[.fraction]Z" (fraction digits past milliseconds are dropped):
/// the form format_utc_ms writes, and what a config names an epoch with. Refused: another
/// offset than 'Z', a missing 'T', fields without their leading zeros, a date that does not
/// exist (2026-02-30), hours above 23, minutes above 59, seconds above 60 (a leap second, read
/// as the next minute's 00).
[[nodiscard]] std::optional<std::int64_t> parse_utc_ms(std::string_view text);

}  // namespace ticketd
