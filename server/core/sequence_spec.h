// What a sequence is, independent of where it is configured or stored.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/sequence_kind.h"

namespace ticketd {

/// Largest value a sequence issues unless configured otherwise: INT64_MAX, so that drivers that
/// read BIGINT into a signed 64-bit integer (Java long, Go int64) never see a negative ID.
inline constexpr std::uint64_t kDefaultMaxValue = std::numeric_limits<std::int64_t>::max();

/// One limit per concept, whichever front end or config file a value comes from.
/// increment and offset: MySQL's auto_increment_increment range.
inline constexpr std::uint64_t kMaxIncrement = 65535;
/// Values reserved by one durable write.
inline constexpr std::uint64_t kMaxCache = 1000000000;
/// The most values per second a ticket sequence hands out unless its `max_rate` says otherwise.
/// Enforced on every ceiling raise (TicketSequence), so that a restore knows how far a counter
/// can have run since a backup: elapsed time × max_rate (docs/durability.md).
inline constexpr std::uint64_t kDefaultMaxRate = 100000000;
inline constexpr std::uint64_t kMaxMaxRate = 1000000000000;
/// IDs one call may take: HTTP `next` and blocks, MySQL multi-row REPLACE and `NEXT n VALUES`.
inline constexpr std::uint64_t kMaxIdsPerCall = 100000;

/// The definition of one sequence. Values of a ticket sequence are the numbers v with
/// start <= v <= max_value and v ≡ offset (mod increment), as MySQL's auto_increment_increment /
/// auto_increment_offset define them; `cache` is how many values one durable write reserves.
struct SequenceSpec {
  std::string name;
  SequenceKind kind = SequenceKind::kTicket;
  std::uint64_t start = 1;
  std::uint64_t increment = 1;
  std::uint64_t offset = 1;
  std::uint64_t max_value = kDefaultMaxValue;
  std::uint64_t cache = 1000;
  /// Values per second the sequence may hand out at most (over any window, plus one burst of
  /// rate_window_us()); ticket sequences only.
  std::uint64_t max_rate = kDefaultMaxRate;

  friend bool operator==(const SequenceSpec&, const SequenceSpec&) = default;
};

/// The one naming rule for sequences (and worker pools), applied by the config, the HTTP API and
/// SQL DDL alike: 1-64 bytes; no '/', '`', space, control character (below 0x20, or 0x7f);
/// not "." or "..". Names are case-sensitive; bytes from 0x80 up are allowed when they are
/// well-formed UTF-8 (a name appears in JSON answers).
/// Returns a message naming the first problem ("... contains a space"), or empty. The message
/// never repeats the name, which may hold bytes unfit for a log line.
[[nodiscard]] std::string validate_name(std::string_view name);

/// Checks the invariants of a spec (the name through validate_name); returns a message naming
/// the first problem, or empty.
[[nodiscard]] std::string validate(const SequenceSpec& spec);

/// The burst a ticket sequence may issue above `max_rate` × time, as a window in microseconds:
/// at least a second, and long enough for one write's worth (a full cache plus the largest
/// call) at the rate, so a single request is never refused for its size alone.
[[nodiscard]] std::uint64_t rate_window_us(const SequenceSpec& spec);

/// An arithmetic progression of issued values: first, first+step, ..., count of them.
struct Block {
  std::uint64_t first = 0;
  std::uint64_t step = 1;
  std::uint64_t count = 0;

  [[nodiscard]] std::uint64_t last() const {
    return count == 0 ? first : first + (count - 1) * step;
  }
  friend bool operator==(const Block&, const Block&) = default;
};

}  // namespace ticketd
