// A sequence kind's own code behind one interface: what differs between ticket, gapless,
// Snowflake and UUIDv7 sequences lives in the kind's module (server/core/*_kind.cpp), and the
// registry (TicketService), its DDL and start-up iterate over modules instead of switching on
// a kind. What every layer may know of a kind as data (its name, the keys it takes) is its row
// in server/base/sequence_kind.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/record_codec.h"
#include "server/base/result.h"
#include "server/core/group_committer.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_handle.h"
#include "storage/counter_store.h"

namespace ticketd {

using TextIdsCallback = std::function<void(DetailedResult<std::vector<std::string>>)>;

/// How text IDs are written: the kind's canonical text (a UUID's 8-4-4-4-12, a ULID's 26
/// characters of Crockford base32) or the 16 bytes of its binary form as 32 lower-case hex
/// digits.
enum class TextForm { kCanonical, kHex };

/// Where "retry later" answers wait (a full Snowflake tick, a short clock step back), and the
/// clock that times them.
struct RetryTimers {
  TimerQueue* timers = nullptr;
  const Clock* clock = nullptr;
};

/// Runs `again` on the retry queue at `retry_at_unix_ms` (at most a second from now: a later
/// time is tried again after a second) and returns true; false when there is no queue,
/// `attempts` retries were made already, or `retry_at_unix_ms` is more than 5 s away, and the
/// caller answers kRetryLater itself. A kind never sleeps on the caller's thread.
[[nodiscard]] bool retry_on_queue(const RetryTimers* retries, std::int64_t retry_at_unix_ms,
                                  int attempts, std::function<void()> again);

/// One metric a kind exports per sequence of it, labelled `sequence` (a counter also `event`).
struct KindMetricRow {
  enum Type { kCounter, kGauge };
  std::string_view name;  // the full metric name: "ticketd_<kind>_..."
  Type type = kGauge;
  std::string_view help;
};

/// One reading of one sequence for a row of its kind's metric_rows(): a counter's running
/// total of one event since the sequence was opened (the scrape exports what grew), or a
/// gauge's value.
struct KindReading {
  std::size_t row = 0;
  std::string_view event;  // counters only
  double value = 0;
};

/// What the registry lends a kind's module for one call.
struct KindEnv {
  CounterStore& store;
  GroupCommitter& committer;
  const Clock& rate_clock;  // times each ticket sequence's max_rate allowance
  const RuntimeKinds& runtime;
  const RetryTimers* retries = nullptr;  // null until one is given
};

/// One kind's behaviour. Stateless: one instance per kind, shared by every registry. A ticket
/// sequence is the registry's own record ("seq/"), loaded, created and configured by the
/// registry; the other kinds are built by their module from a definition.
class KindModule {
 public:
  virtual ~KindModule() = default;
  [[nodiscard]] virtual SequenceKind kind() const = 0;

  /// Its part of a stored definition ("def/<name>", sequence_definition.h), after `kind`:
  /// written as key=value fields, read back (false: a field does not read; an absent one keeps
  /// its default), and checked (a message naming the first problem, or empty).
  virtual void encode_definition(const SequenceDefinition& /*definition*/,
                                 RecordWriter& /*out*/) const {}
  [[nodiscard]] virtual bool decode_definition(const RecordView& /*in*/,
                                               SequenceDefinition& /*definition*/) const {
    return true;
  }
  [[nodiscard]] virtual std::string validate_definition(
      const SequenceDefinition& /*definition*/) const {
    return {};
  }

  /// Builds a sequence from its definition (one created at run time, or one from the config
  /// file). `tombstone`: the highest value a dropped sequence of the name may have issued,
  /// when the create is not forced; a counter starts above it. Blocking (it may read stored
  /// state or write a high-water mark): start-up or the registry's background thread only.
  [[nodiscard]] virtual DetailedResult<SequenceHandle> open(const SequenceDefinition& definition,
                                                            std::optional<std::uint64_t> tombstone,
                                                            const KindEnv& env) const = 0;

  /// It is opened only once the server's worker ID is known (start-up opens its stored and
  /// configured definitions after the others).
  [[nodiscard]] virtual bool opens_after_worker_id() const { return false; }

  /// `count` values of sequence `name` as one Block. A kind that issues one value per call
  /// refuses a count above 1, and one that issues no integers refuses every call (kWrongKind,
  /// naming what to use instead).
  virtual void next(const SequenceHandle& handle, std::string_view name, std::uint64_t count,
                    BlockCallback done, const KindEnv& env) const = 0;
  /// `count` IDs as text, for a kind whose IDs are text (its row's `integer_ids` is false);
  /// the others refuse with kWrongKind. May complete inline.
  virtual void next_text(const SequenceHandle& handle, std::string_view name, std::uint64_t count,
                         TextForm form, TextIdsCallback done, const KindEnv& env) const;
  /// The kWrongKind message when a block (a hi-lo lease, a fence, a count) is asked of it.
  [[nodiscard]] virtual std::string no_blocks(std::string_view name) const = 0;

  /// Its fields of a description: the spec it has and its kind's own part.
  virtual void describe(const SequenceHandle& handle, SequenceDescription& out) const = 0;

  /// It has no stored state yet: in a store restored from a backup it may have issued values
  /// after the backup that the store cannot see, so the registry refuses it unless forced.
  [[nodiscard]] virtual bool without_stored_state(const SequenceHandle& /*handle*/) const {
    return false;
  }
  /// What making it exist writes besides its definition, in the same commit (a gapless
  /// sequence's first frontier), and what to note once that commit is durable.
  [[nodiscard]] virtual std::vector<Mutation> first_writes(const SequenceHandle& /*handle*/) const {
    return {};
  }
  virtual void first_writes_durable(const SequenceHandle& /*handle*/) const {}
  /// Its own stored state continues above its name's tombstone, which a create may delete.
  [[nodiscard]] virtual bool supersedes_tombstone() const { return false; }

  /// Stops it at a drop. Returns the highest value it may have issued, which its name's
  /// tombstone keeps so that a counter of that name starts above it (none: it issues no
  /// integers).
  [[nodiscard]] virtual std::optional<std::uint64_t> retire(const SequenceHandle& handle) const = 0;
  /// What a drop deletes besides the definition (a ticket sequence's record).
  [[nodiscard]] virtual std::vector<Mutation> drop_writes(std::string_view /*name*/) const {
    return {};
  }
  /// Background upkeep a few times a second (a time kind raises its durable mark ahead of the
  /// clock, so that an idle sequence's next caller does not wait for a write).
  virtual void refresh(const SequenceHandle& /*handle*/) const {}
  /// It keeps deadlines for its callers (a gapless reservation's TTL, a strict-order wait's
  /// timeout): the registry's with_deadlines() lists it, and the server checks them every
  /// 20 ms (expire_due) and answers its waiting callers at shutdown (fail_waiters).
  [[nodiscard]] virtual bool keeps_deadlines() const { return false; }
  /// Ends what is past its deadline (and retries what a deadline waits on).
  virtual void expire_due(const SequenceHandle& /*handle*/) const {}
  /// The server stops, its committer stopped: callers still waiting are answered with `why`,
  /// so that no callback outlives the front ends' executors.
  virtual void fail_waiters(const SequenceHandle& /*handle*/, const Error& /*why*/) const {}
  /// A clean shutdown: stops it and writes what lets the next start resume without waiting
  /// (a time kind lowers its mark to the newest ID). Blocks for a commit.
  [[nodiscard]] virtual DetailedResult<void> close(const SequenceHandle& /*handle*/) const {
    return {};
  }
  /// The metrics it exports for each of its sequences, and one sequence's readings of them
  /// (a gauge left out is not exported for that sequence). `now_unix_ms`: the scrape's clock.
  [[nodiscard]] virtual std::span<const KindMetricRow> metric_rows() const { return {}; }
  virtual void read_metrics(const SequenceHandle& /*handle*/, std::int64_t /*now_unix_ms*/,
                            std::vector<KindReading>& /*out*/) const {}

  /// The sequence to serve again when a drop's write did not land (the same one, unless
  /// retiring it ended it for good).
  [[nodiscard]] virtual SequenceHandle revive(const SequenceHandle& handle,
                                              const KindEnv& /*env*/) const {
    return handle;
  }
};

/// The module of `kind`: one registration row per kind (kind_module.cpp).
[[nodiscard]] const KindModule& kind_module(SequenceKind kind);
[[nodiscard]] inline const KindModule& kind_module(const SequenceHandle& handle) {
  return kind_module(kind_of_handle(handle));
}

/// A ticket sequence's description fields: GET /v1/sequences/{name} and the answers of the
/// routes that move one (advance, restride) show the same.
[[nodiscard]] std::vector<DescribedField> ticket_fields(const SequenceInfo& info);

// Each kind's module, defined in its own file.
[[nodiscard]] const KindModule& ticket_kind();
[[nodiscard]] const KindModule& gapless_kind();
[[nodiscard]] const KindModule& snowflake_kind();
[[nodiscard]] const KindModule& uuidv7_kind();
[[nodiscard]] const KindModule& ulid_kind();

}  // namespace ticketd
