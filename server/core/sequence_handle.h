// One sequence of any kind as the registry holds it, and what describing one shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/gapless_sequence.h"
#include "server/core/sequence_spec.h"
#include "server/core/snowflake_generator.h"
#include "server/core/ticket_sequence.h"
#include "server/core/timer_queue.h"
#include "server/core/ulid_sequence.h"
#include "server/core/uuidv7_generator.h"

namespace ticketd {

/// One sequence of any kind, as the registry holds it.
using SequenceHandle =
    std::variant<std::shared_ptr<TicketSequence>, std::shared_ptr<GaplessSequence>,
                 std::shared_ptr<SnowflakeGenerator>, std::shared_ptr<UuidV7Generator>,
                 std::shared_ptr<UlidSequence>>;

// The handle's alternatives are listed in SequenceKind's order, so the index is the kind.
namespace detail {
template <SequenceKind K, class T>
constexpr bool alternative_is =
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(K), SequenceHandle>,
                   std::shared_ptr<T>>;
}  // namespace detail
static_assert(detail::alternative_is<SequenceKind::kTicket, TicketSequence> &&
              detail::alternative_is<SequenceKind::kGapless, GaplessSequence> &&
              detail::alternative_is<SequenceKind::kSnowflake, SnowflakeGenerator> &&
              detail::alternative_is<SequenceKind::kUuidV7, UuidV7Generator> &&
              detail::alternative_is<SequenceKind::kUlid, UlidSequence> &&
              std::variant_size_v<SequenceHandle> == std::size(kAllSequenceKinds));

/// The kind of sequence a handle holds.
[[nodiscard]] inline SequenceKind kind_of_handle(const SequenceHandle& h) {
  return static_cast<SequenceKind>(h.index());
}

/// One field of a kind's own description, which every front end shows as it is: a member of
/// GET /v1/sequences' JSON, in order. Values that can pass 2^53 are text (JSON clients read
/// numbers as doubles); absent is null.
using DescribedValue = std::variant<std::monostate, bool, std::uint64_t, std::string>;
struct DescribedField {
  std::string_view key;
  DescribedValue value;
  friend bool operator==(const DescribedField&, const DescribedField&) = default;
};

/// A point-in-time description of one sequence: what SHOW TABLES, SHOW CREATE and
/// GET /v1/sequences show. Its kind's module fills it; front ends render `fields`,
/// `comment_detail` and `next_value` without knowing the kind.
struct SequenceDescription {
  SequenceSpec spec;  // name and kind always; the grid for ticket and gapless sequences
  /// The kind's fields after "name" and "kind", in the order they are shown.
  std::vector<DescribedField> fields;
  /// What SQL's table comment says after "ticketd <kind> sequence" (" (order strict)").
  std::string comment_detail;
  /// The next value a counter issues (AUTO_INCREMENT); none for kinds that are not counters.
  std::optional<std::uint64_t> next_value;

  // The kind's typed view, for callers that know the kind (tools, tests).
  std::optional<SequenceInfo> ticket;
  struct Gapless {
    GaplessOptions options;
    std::uint64_t next_value = 0;
    std::optional<std::uint64_t> committed_through;
    std::size_t pending = 0;  // reservations in flight
  };
  std::optional<Gapless> gapless;
  struct Snowflake {
    SnowflakeLayout layout;
    std::uint64_t worker_id = 0;
    ClockPolicy policy = ClockPolicy::kWait;
    std::uint64_t issued = 0;
  };
  std::optional<Snowflake> snowflake;
};

/// What creating kinds other than ticket at run time needs: their clock, a thread for the
/// blocking work of opening one (reading a gapless sequence's state, writing a Snowflake
/// high-water mark), and how a Snowflake generator is built from the server's layout and worker
/// ID (null: Snowflake sequences are only configured).
struct RuntimeKinds {
  const Clock* clock = nullptr;
  TimerQueue* background = nullptr;
  std::function<DetailedResult<std::shared_ptr<SnowflakeGenerator>>(const std::string& name)>
      open_snowflake;
  /// Where "retry later" answers wait (a full Snowflake tick); null: on `background`.
  TimerQueue* retries = nullptr;
  /// What a time-based kind without a layout of its own (ULID) does when the clock reads
  /// earlier than its last ID: the server's `snowflake.clock` settings.
  ClockPolicy clock_policy = ClockPolicy::kWait;
  std::int64_t max_backward_ms = 5;
};

}  // namespace ticketd
