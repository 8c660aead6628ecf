// How sequence state is laid out in the key-value store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/core/sequence_spec.h"

namespace ticketd {

/// A live sequence: its spec and its durable ceiling (the highest value that may ever have been
/// issued; after a restart the sequence resumes above it). Stored under "seq/<name>".
struct SequenceRecord {
  SequenceSpec spec;
  std::uint64_t ceiling = 0;
  /// 0, or the highest value the sequence may issue on its current grid: set before a restride
  /// (docs/restride.md) so that the values this server issues until its own restride stay below
  /// the floor the other servers restride above. Cleared by the restride.
  std::uint64_t fence = 0;
  /// The grid (increment/offset) was set by a restride: it wins over the config's at start.
  bool restrided = false;
  /// Where the sequence's max_rate allowance stands (microseconds since the Unix epoch, the
  /// theoretical arrival time of GCRA): kept with the ceiling so a restart does not refill it.
  std::uint64_t rate_tat_us = 0;
  friend bool operator==(const SequenceRecord&, const SequenceRecord&) = default;
};

inline constexpr std::string_view kSequencePrefix = "seq/";
/// A dropped sequence leaves its last ceiling under "tomb/<name>", so that re-creating the name
/// resumes above it and a drop-and-recreate can never reissue a value.
inline constexpr std::string_view kTombstonePrefix = "tomb/";

[[nodiscard]] std::string sequence_key(std::string_view name);
[[nodiscard]] std::string tombstone_key(std::string_view name);

/// A line of `key=value` pairs: readable with `ldb scan`, and new fields can be added later.
[[nodiscard]] std::string encode_record(const SequenceRecord& record);
[[nodiscard]] std::optional<SequenceRecord> decode_record(std::string_view name,
                                                          std::string_view text);
[[nodiscard]] std::string encode_tombstone(std::uint64_t ceiling);
[[nodiscard]] std::optional<std::uint64_t> decode_tombstone(std::string_view text);

/// Written by `ticketd restore` under "restore/floor": the span of time the restored backup did
/// not see (its age at the restore plus a clock margin) and the values an explicit
/// `--skip-ahead N` stated, summed over every restore of this store. A ticket sequence the
/// backup did not hold may have been created and issued values in that span; when such a name
/// is created in the restored store it starts above what it can have issued
/// (restore_floor_skip), and a gapless one is refused unless forced (docs/durability.md).
struct RestoreFloor {
  std::uint64_t span_ms = 0;
  std::uint64_t values = 0;
  friend bool operator==(const RestoreFloor&, const RestoreFloor&) = default;
};

inline constexpr std::string_view kRestoreFloorKey = "restore/floor";

[[nodiscard]] std::string encode_restore_floor(const RestoreFloor& floor);
[[nodiscard]] std::optional<RestoreFloor> decode_restore_floor(std::string_view text);

/// The values a ticket sequence of `spec` can have issued in the floor's span, held to its
/// max_rate (span plus one rate window, as restore's auto skip counts), plus the stated values;
/// saturates at 2^64-1.
[[nodiscard]] std::uint64_t restore_floor_skip(const RestoreFloor& floor, const SequenceSpec& spec);

}  // namespace ticketd
