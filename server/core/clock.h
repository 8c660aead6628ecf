// The engine's only source of time.
#pragma once

#include <chrono>
#include <cstdint>

// format_utc_ms() lives in base; whoever prints a Clock reading finds it here too.
#include "server/base/utc_time.h"

namespace ticketd {

/// Wall-clock milliseconds since the Unix epoch. Injected everywhere time matters so tests can
/// step it; nothing outside SystemClock reads the system clock. Thread safety: implementations
/// must allow concurrent calls.
class Clock {
 public:
  virtual ~Clock() = default;
  [[nodiscard]] virtual std::int64_t now_unix_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_unix_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace ticketd
