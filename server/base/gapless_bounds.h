// Bounds of a gapless sequence's options, in one place for both readers: the core's
// validate(SequenceDefinition) and the config loader. They live in base because config/ sits
// below the core and may include nothing above base.
#pragma once

#include <cstdint>

namespace ticketd {

/// reservation_ttl_ms and max_reservation_ttl_ms are 1..kMaxReservationTtlMs.
inline constexpr std::int64_t kMaxReservationTtlMs = 86400000;  // one day
/// strict_wait_ms is 1..kMaxStrictWaitMs.
inline constexpr std::int64_t kMaxStrictWaitMs = 3600000;  // one hour

}  // namespace ticketd
