// RFC 9562 version 7 UUIDs, monotonic within the process.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

#include "server/core/clock.h"

namespace ticketd {

/// 16 bytes in network order, as RFC 9562 lays them out; comparing two with `<` compares them
/// as the byte strings (and the canonical strings) they sort as.
using Uuid = std::array<std::uint8_t, 16>;

/// Counters since construction, for metrics.
struct UuidV7Stats {
  std::uint64_t issued = 0;
  std::uint64_t counter_overflows = 0;      // a ms ran out of counter: the timestamp moved ahead
  std::uint64_t clock_backward_events = 0;  // readings lower than the previous one
};

/// Issues UUIDv7s (RFC 9562 section 5.7): 48-bit big-endian unix_ms, version 7, a 12-bit
/// counter in rand_a (section 6.2, method 1), variant 0b10, 62 random bits in rand_b.
///
/// Each new millisecond starts the counter at a random value below 2048 (the leftmost counter
/// bit is the RFC's rollover guard), so a millisecond holds at least 2,048 IDs; when the
/// counter runs out, the timestamp moves one ms ahead of the clock. If the clock steps back,
/// the generator keeps its last ms and counts on. So every ID sorts after the previous one, as
/// bytes and as a canonical string, whatever the clock does.
///
/// The random bits come from xoshiro256** seeded from std::random_device: unique and unguessable
/// enough for IDs, not for secrets (do not use these UUIDs as tokens). Thread safety: all
/// members may be called concurrently.
class UuidV7Generator {
 public:
  explicit UuidV7Generator(const Clock& clock);
  /// A fixed seed, for reproducible tests.
  UuidV7Generator(const Clock& clock, std::uint64_t seed);

  [[nodiscard]] Uuid next();
  [[nodiscard]] UuidV7Stats stats() const;

 private:
  [[nodiscard]] std::uint64_t random_locked();

  const Clock& clock_;
  mutable std::mutex mutex_;
  std::array<std::uint64_t, 4> rng_{};
  std::int64_t last_ms_ = -1;       // timestamp of the newest UUID (may be ahead of the clock)
  std::int64_t last_reading_ = -1;  // the previous clock reading
  std::uint32_t counter_ = 0;       // rand_a of the newest UUID
  UuidV7Stats stats_;
};

/// Canonical 8-4-4-4-12 lowercase hex ("0190d2a4-1c3e-7a5f-8b2c-0123456789ab").
[[nodiscard]] std::string to_string(const Uuid& uuid);
/// The 48-bit unix_ms field.
[[nodiscard]] std::int64_t uuidv7_unix_ms(const Uuid& uuid);

}  // namespace ticketd
