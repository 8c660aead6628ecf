// The arithmetic of `ticketd plan` (docs/capacity.md): pure functions of measured figures, the
// sequence settings and the Snowflake layout. No I/O, no clock.
#pragma once

#include <cstdint>
#include <string>

#include "server/core/snowflake_layout.h"
#include "server/plan/reference_figures.h"

namespace ticketd::plan {

/// Value spaces and their products pass 2^64 (a 64-bit space, or years of a rate): every such
/// figure is 128 bits wide.
using u128 = unsigned __int128;

/// A Julian year, 365.25 days: what "years" means in every answer.
inline constexpr std::uint64_t kSecondsPerYear = 31557600;
inline constexpr std::uint64_t kMsPerYear = kSecondsPerYear * 1000;
inline constexpr std::uint64_t kSecondsPerDay = 86400;

/// UUIDv7 (server/core/uuidv7_generator.cpp): each millisecond starts the 12-bit counter at a
/// random value at most kCounterInit (0x7FF) and counts to kCounterMax (0xFFF), so one generator
/// issues at least 0xFFF - 0x7FF = 2048 IDs in a millisecond before its timestamp runs ahead.
inline constexpr std::uint64_t kUuidV7IdsPerMs = 0xFFF - 0x7FF;
/// UUIDv7 and ULID carry 48 bits of Unix milliseconds (ulid_generator.cpp's kMaxUnixMs).
inline constexpr std::int64_t kLastUnixMs48 = (std::int64_t{1} << 48) - 1;

/// ceil(a / b); b > 0.
[[nodiscard]] u128 ceil_div(u128 a, u128 b);
/// The decimal digits of `v`.
[[nodiscard]] std::string digits(u128 v);
/// `num / den` with `places` decimals, rounded down ("69.68"); den > 0.
[[nodiscard]] std::string decimal(u128 num, u128 den, int places);

/// IDs/s per core of an IDs/s figure: its value / kReferenceCores, rounded down.
[[nodiscard]] std::uint64_t ids_per_core(const ReferenceFigure& ids);
/// What a server of `cores` cores does by the figure, scaled linearly: value × cores /
/// kReferenceCores, rounded down.
[[nodiscard]] u128 cpu_ids_per_server(const ReferenceFigure& ids, std::uint64_t cores);
/// Synced writes a server completes per second: the group committer runs one at a time, so
/// 1 s / the mean synced write, rounded down (at least 1).
[[nodiscard]] std::uint64_t commits_per_second(std::uint64_t synced_write_us);

/// The IDs/s one ticket sequence reaches on one server when each synced write carries only its
/// `cache` values ahead: cache × commits/s. A floor, not a ceiling: callers queued behind a
/// write add their own values to the next one (group commit).
[[nodiscard]] u128 write_bound(std::uint64_t cache, std::uint64_t commits);
/// Durable writes/s that serve `ids_per_second` of one ticket sequence: ceil(ids / cache), each
/// raising the ceiling `cache` values ahead.
[[nodiscard]] u128 durable_writes(u128 ids_per_second, std::uint64_t cache);
/// fsyncs/s of a RocksDB server making `writes` synced writes/s, at most: one WAL fsync per
/// write, plus the durable mark's fdatasync once a second while it writes, plus one more per
/// write with durability.external_mark (docs/durability.md).
[[nodiscard]] u128 fsyncs(u128 writes, bool external_mark);

/// Servers that carry `target` IDs/s at `per_server` each: ceil(target / per_server).
[[nodiscard]] u128 servers_for_load(std::uint64_t target, u128 per_server);
/// The same with one spare, so that any one server may be down: for_load + 1 (for tickets this
/// is at least the odd/even pair).
[[nodiscard]] u128 servers_with_spare(u128 for_load);
/// One server's share of `target` over `servers`: ceil(target / servers).
[[nodiscard]] u128 share(std::uint64_t target, u128 servers);

/// The values of a counter from `start` to `max_value`: max_value - start + 1 (0 when start is
/// above max_value).
[[nodiscard]] u128 value_space(std::uint64_t start, std::uint64_t max_value);
/// The values `ids_per_second` uses in `years`.
[[nodiscard]] u128 values_needed(std::uint64_t ids_per_second, std::uint64_t years);

/// What a Snowflake layout gives each worker, and for how long. Needs a valid layout.
struct SnowflakeBudget {
  u128 ids_per_tick = 0;    // per worker: max_sequence + 1
  u128 ids_per_second = 0;  // per worker: ids_per_tick × 1000 / time_unit_ms, rounded down
  u128 workers = 0;         // worker IDs: max_worker + 1
  u128 range_ms = 0;        // the time field's span: (max_ticks + 1) × time_unit_ms
};
[[nodiscard]] SnowflakeBudget snowflake_budget(const SnowflakeLayout& layout);
/// Synced writes/s of one busy Snowflake generator: its high-water mark is kept `hwm_margin_ms`
/// ahead of the clock and rewritten every margin / 2 of activity (snowflake_generator.h).
[[nodiscard]] std::uint64_t snowflake_mark_writes(std::int64_t hwm_margin_ms);

}  // namespace ticketd::plan
