// The kinds of sequence, as one row each: what every layer (the config file, the HTTP body, the
// core's registry, the backup manifest) may know of a kind without knowing its code. What a kind
// does lives in its module (server/core/kinds/).
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ticketd {

/// Ticket and gapless sequences are counters (their values are numbers on an increment/offset
/// grid); Snowflake IDs are time | worker | sequence; UUIDv7 IDs are time-ordered UUIDs; ULIDs are
/// 48-bit milliseconds and 80 random bits as 26 characters of Crockford base32.
enum class SequenceKind { kTicket, kGapless, kSnowflake, kUuidV7, kUlid };

/// The keys a definition may carry besides `name` and `kind`, in the config file and in the
/// body of PUT /v1/sequences/{name}; each kind takes a subset.
namespace kind_key {
inline constexpr std::string_view kStart = "start";
inline constexpr std::string_view kIncrement = "increment";
inline constexpr std::string_view kOffset = "offset";
inline constexpr std::string_view kMaxValue = "max_value";
inline constexpr std::string_view kCache = "cache";
inline constexpr std::string_view kMaxRate = "max_rate";
inline constexpr std::string_view kOrder = "order";
inline constexpr std::string_view kReservationTtl = "reservation_ttl_ms";
inline constexpr std::string_view kMaxReservationTtl = "max_reservation_ttl_ms";
inline constexpr std::string_view kStrictWait = "strict_wait_ms";
}  // namespace kind_key
inline constexpr std::string_view kAllKindKeys[] = {
    kind_key::kStart,     kind_key::kIncrement,      kind_key::kOffset,
    kind_key::kMaxValue,  kind_key::kCache,          kind_key::kMaxRate,
    kind_key::kOrder,     kind_key::kReservationTtl, kind_key::kMaxReservationTtl,
    kind_key::kStrictWait};

/// One kind, as data.
struct SequenceKindRow {
  SequenceKind kind;
  std::string_view name;  // in the config file, JSON, SQL comments and the store's records
  /// The keys it takes (kind_key); any other is refused by name.
  std::span<const std::string_view> keys;
  /// It issues 64-bit integers (NEXTVAL, HTTP next as numbers); false: 128-bit IDs as text of
  /// `text_id_length` characters (SQL shows its id column as char(N)).
  bool integer_ids;
  std::size_t text_id_length;
  /// It hands out many values in one call (next with a count, hi-lo blocks).
  bool blocks;
};

namespace detail {
inline constexpr std::string_view kTicketKeys[] = {kind_key::kStart,  kind_key::kIncrement,
                                                   kind_key::kOffset, kind_key::kMaxValue,
                                                   kind_key::kCache,  kind_key::kMaxRate};
inline constexpr std::string_view kGaplessKeys[] = {kind_key::kStart,
                                                    kind_key::kIncrement,
                                                    kind_key::kOffset,
                                                    kind_key::kMaxValue,
                                                    kind_key::kOrder,
                                                    kind_key::kReservationTtl,
                                                    kind_key::kMaxReservationTtl,
                                                    kind_key::kStrictWait};
}  // namespace detail

/// Every kind, in SequenceKind's order (a row's index is its enumerator).
inline constexpr SequenceKindRow kSequenceKindRows[] = {
    {SequenceKind::kTicket, "ticket", detail::kTicketKeys, true, 0, true},
    {SequenceKind::kGapless, "gapless", detail::kGaplessKeys, true, 0, false},
    {SequenceKind::kSnowflake, "snowflake", {}, true, 0, false},
    {SequenceKind::kUuidV7, "uuidv7", {}, false, 36, false},
    {SequenceKind::kUlid, "ulid", {}, false, 26, false},
};

inline constexpr auto kAllSequenceKinds = [] {
  std::array<SequenceKind, std::size(kSequenceKindRows)> all{};
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = kSequenceKindRows[i].kind;
  return all;
}();

/// Whether a per-kind table (the core's modules, the backup's parts) has `rows[i]->kind()` == the
/// i-th kind for every i, so that it can be indexed by the enumerator.
template <class Row, std::size_t N>
[[nodiscard]] bool in_kind_order(const std::array<const Row*, N>& rows) {
  if (N != std::size(kSequenceKindRows)) return false;
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(rows[i]->kind()) != i) return false;
  }
  return true;
}

[[nodiscard]] const SequenceKindRow& kind_row(SequenceKind kind);
[[nodiscard]] std::string_view kind_name(SequenceKind kind);
[[nodiscard]] std::optional<SequenceKind> parse_kind(std::string_view name);
/// Whether `kind` takes `key` (one of kind_key).
[[nodiscard]] bool kind_takes(SequenceKind kind, std::string_view key);
/// "ticket, gapless, snowflake, uuidv7 or ulid", for messages.
[[nodiscard]] std::string kind_names_text();

}  // namespace ticketd
