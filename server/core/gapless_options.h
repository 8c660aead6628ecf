// A gapless sequence's own settings, apart from its spec: what a definition, the config and
// the HTTP create carry for it.
#pragma once

#include <cstdint>
#include <string_view>

namespace ticketd {

/// relaxed: many reservations in flight, a released number goes to the next caller, so commit
/// order may differ from number order. strict: one reservation in flight per sequence, others
/// queue FIFO, so numbers are committed in time order.
enum class GaplessOrder { kRelaxed, kStrict };

[[nodiscard]] std::string_view order_name(GaplessOrder order);

struct GaplessOptions {
  GaplessOrder order = GaplessOrder::kRelaxed;
  std::int64_t reservation_ttl_ms = 30000;  // when the caller names none
  std::int64_t max_reservation_ttl_ms = 3600000;
  std::int64_t strict_wait_ms = 5000;  // strict: how long a caller may queue for its turn
};

}  // namespace ticketd
