// What `ticketd plan` answers for one kind and target: the lines it prints, as data (pure: no
// I/O, no clock), so that the unit tests and docs/capacity.md check the same text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/sequence_kind.h"
#include "server/core/sequence_spec.h"
#include "server/core/snowflake_layout.h"
#include "server/plan/reference_figures.h"

namespace ticketd::plan {

/// The largest target: a ticket sequence's own limit on max_rate (kMaxMaxRate, 10^12 IDs/s).
inline constexpr std::uint64_t kMaxTargetIdsPerSecond = kMaxMaxRate;
inline constexpr std::uint64_t kMaxYears = 1000000;
inline constexpr std::uint64_t kMaxCores = 65536;
/// The servers of one restrided group: the increment is their number (kMaxIncrement).
inline constexpr std::uint64_t kMaxServers = kMaxIncrement;

/// What the plan is asked: a kind, its targets and the settings the formulas read. A plain
/// value; the defaults are the server's own (SequenceSpec, the Twitter layout).
struct PlanInput {
  SequenceKind kind = SequenceKind::kTicket;
  FrontEnd front_end = FrontEnd::kMysql;
  Engine engine = Engine::kRocksDb;
  std::optional<std::uint64_t> ids_per_second;  // the target rate of one sequence
  std::optional<std::uint64_t> years;           // how long its values must last
  std::uint64_t cores = kReferenceCores;        // per server
  std::uint64_t servers = 2;                    // ticket: running now (the odd/even pair)
  SequenceSpec spec{.name = "plan"};            // ticket and gapless: start, max_value, cache
  bool external_mark = false;                   // durability.external_mark
  std::string layout_name = "twitter";          // snowflake: the preset the layout came from
  bool layout_changed = false;                  // a width, the unit or the epoch was given
  SnowflakeLayout layout = SnowflakeLayout::twitter();
};

/// One answer: printed as "key: value".
struct PlanLine {
  std::string key;
  std::string value;
  friend bool operator==(const PlanLine&, const PlanLine&) = default;
};

struct PlanReport {
  std::vector<PlanLine> lines;
  /// Why the targets are not shown to be met (a limit passed, or no figure to judge by); empty
  /// when they are, or when there was no target.
  std::vector<std::string> misses;
};

/// The first problem with `input` (a value out of range, an invalid sequence setting or
/// Snowflake layout, --years without a rate where the kind needs one); empty when there is none.
[[nodiscard]] std::string check_input(const PlanInput& input);
/// Every answer for `input`, which must pass check_input. With a target (a rate or years), the
/// last line is "fits: yes" or "fits: no: <misses>".
[[nodiscard]] PlanReport make_plan(const PlanInput& input);
/// One line per row of reference_figures() (`ticketd plan --figures`).
[[nodiscard]] std::vector<PlanLine> figure_lines();

/// Whether `kind`'s plan reads a Snowflake layout (--layout, --epoch, the widths).
[[nodiscard]] bool plan_reads_layout(SequenceKind kind);
/// Whether `kind`'s plan grows an odd/even group by restride (--servers).
[[nodiscard]] bool plan_restrides(SequenceKind kind);

/// The named layouts of docs/snowflake.md: twitter, instagram, discord, sonyflake.
[[nodiscard]] std::optional<SnowflakeLayout> named_layout(std::string_view name);
/// "twitter, instagram, discord or sonyflake", for messages.
[[nodiscard]] std::string layout_names_text();

}  // namespace ticketd::plan
