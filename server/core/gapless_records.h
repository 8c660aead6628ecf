// The stored form of a gapless sequence: its keys and records under "gapless/<name>/", and
// the verifier `ticketd verify` runs over them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/counter_store.h"

namespace ticketd {

/// A number held by one caller until it commits or releases it, or until `expires_at_unix_ms`.
struct Reservation {
  std::string id;  // "<number>-<16 hex digits>": unique across restarts
  std::uint64_t number = 0;
  std::string holder;
  std::int64_t expires_at_unix_ms = 0;
};

/// "<prefix><kind>/<number as 20 digits>": the key of number `n`'s record of `kind`.
[[nodiscard]] std::string gapless_number_key(std::string_view prefix, std::string_view kind,
                                             std::uint64_t n);

/// What `ticketd verify` checks, read straight from the store: `records` are every key under
/// "gapless/" (all gapless sequences). The records decode, no number is both committed and
/// reserved, nothing reserved lies below "f", every number is on its sequence's grid, every void
/// is committed. Returns one line per violation (empty: the invariants hold).
[[nodiscard]] std::vector<std::string> verify_gapless_records(const KeyValues& records);

inline constexpr std::string_view kGaplessPrefix = "gapless/";

/// A key under "gapless/", taken apart: "<name>/f" (kind "f") or "<name>/<c|r|v>/<20 digits>".
struct GaplessKey {
  std::string name;
  std::string kind;  // "f", "c", "r", "v"
  std::uint64_t number = 0;
};
/// `rest` is the key without "gapless/"; nullopt when it is none of the forms above.
[[nodiscard]] std::optional<GaplessKey> parse_gapless_key(std::string_view rest);

/// The record under "gapless/<name>/f": every number below `first_open` is committed, and the
/// sequence was stored with this first value and step.
struct GaplessFrontier {
  std::uint64_t first_open = 0;
  std::uint64_t first = 0;
  std::uint64_t step = 0;
  friend bool operator==(const GaplessFrontier&, const GaplessFrontier&) = default;
};

/// "first_open=N first=F step=S": no version field (the format predates it; a later one would
/// add "v=2", which this reader ignores only if the fields above still mean the same).
[[nodiscard]] std::string encode_frontier(const GaplessFrontier& frontier);
[[nodiscard]] std::optional<GaplessFrontier> decode_frontier(std::string_view text);
/// The record under "gapless/<name>/r/<number>": "id=<id> expires_at_ms=<ms> holder=<the rest,
/// any bytes>". The id must belong to `number`.
[[nodiscard]] std::string encode_reservation(const Reservation& reservation);
[[nodiscard]] std::optional<Reservation> decode_reservation(std::uint64_t number,
                                                            std::string_view text);

}  // namespace ticketd
