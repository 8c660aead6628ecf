// The sequence engine: the set of sequences, their creation, drop and allocation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/gapless_sequence.h"
#include "server/core/group_committer.h"
#include "server/core/retry_scheduler.h"
#include "server/core/snowflake_generator.h"
#include "server/core/ticket_sequence.h"
#include "server/core/uuidv7_generator.h"
#include "storage/counter_store.h"

namespace ticketd {

using DoneCallback = std::function<void(DetailedResult<void>)>;

/// How create() treats a name that exists or existed.
struct CreateOptions {
  bool if_not_exists = false;  // an existing live sequence is success, not kAlreadyExists
  bool force = false;          // ignore a tombstone: may re-issue old values (logged)
};

/// Owns every sequence. Knows nothing of sockets, protocols or the storage engine behind
/// CounterStore. All durable writes go through the GroupCommitter; callbacks run inline or on
/// the committer thread (see TicketSequence). Thread safety: all members may be called
/// concurrently, except load(), which runs once before serving.
class TicketService {
 public:
  TicketService(CounterStore& store, GroupCommitter& committer);

  /// Reads every sequence from the store.
  [[nodiscard]] DetailedResult<void> load();

  /// Makes a configured sequence exist (start-up): created when missing (above any tombstone);
  /// when it exists, a larger start moves it forward and changed increment/offset/max/cache
  /// apply to future values. Blocks until durable: start-up only.
  [[nodiscard]] DetailedResult<void> ensure_configured(const SequenceSpec& spec);

  /// Serves `generator` under its name everywhere a ticket sequence is served (next() with
  /// count 1; blocks are refused). "Retry later" answers are retried on `retries`, so callers
  /// never wait on a timer of their own. Start-up only, before serving.
  void add_snowflake(std::shared_ptr<SnowflakeGenerator> generator, RetryScheduler& retries,
                     const Clock& clock);
  [[nodiscard]] std::shared_ptr<SnowflakeGenerator> find_snowflake(std::string_view name) const;
  [[nodiscard]] std::vector<std::shared_ptr<SnowflakeGenerator>> snowflakes() const;

  /// Serves a gapless sequence under its name: next() with count 1 reserves and commits in
  /// one durable write; transactions use find_gapless(). Start-up only, before serving.
  void add_gapless(std::shared_ptr<GaplessSequence> sequence);
  [[nodiscard]] std::shared_ptr<GaplessSequence> find_gapless(std::string_view name) const;
  [[nodiscard]] std::vector<std::shared_ptr<GaplessSequence>> gapless() const;
  /// Serves `generator` as the `kind: uuidv7` sequence `name`. Its IDs are UUIDs, not integers:
  /// front ends take them from find_uuidv7(); next() and blocks refuse the name (kWrongKind,
  /// pointing to the UUID interfaces). Start-up only, before serving.
  void add_uuidv7(std::string name, std::shared_ptr<UuidV7Generator> generator);
  [[nodiscard]] std::shared_ptr<UuidV7Generator> find_uuidv7(std::string_view name) const;

  void create(const SequenceSpec& spec, CreateOptions options, DoneCallback done);
  void drop(std::string_view name, DoneCallback done);

  /// `count` values of sequence `name` as one Block.
  void next(std::string_view name, std::uint64_t count, BlockCallback done);
  void advance_to(std::string_view name, std::uint64_t value, BlockCallback done);

  [[nodiscard]] std::shared_ptr<TicketSequence> find(std::string_view name) const;
  [[nodiscard]] std::vector<SequenceInfo> list() const;
  /// A ticket, Snowflake or UUIDv7 sequence of that name exists.
  [[nodiscard]] bool exists(std::string_view name) const {
    return find(name) != nullptr || find_snowflake(name) != nullptr ||
           find_gapless(name) != nullptr || find_uuidv7(name) != nullptr;
  }

 private:
  [[nodiscard]] static Error unknown(std::string_view name);
  void next_snowflake(std::shared_ptr<SnowflakeGenerator> generator, std::uint64_t count,
                      BlockCallback done, int attempts);

  // Lets find() look names up by string_view, without building a std::string per request.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  CounterStore& store_;
  GroupCommitter& committer_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<TicketSequence>, NameHash, std::equal_to<>>
      sequences_;
  // Names with a create/drop in flight, so two DDLs on one name never interleave.
  std::unordered_map<std::string, bool> ddl_in_flight_;
  // Last ceilings of dropped names (mirrors "tomb/" keys), so create() needs no read I/O.
  std::unordered_map<std::string, std::uint64_t> tombstones_;
  // Snowflake sequences: fixed at start-up, read-only afterwards.
  std::unordered_map<std::string, std::shared_ptr<SnowflakeGenerator>> snowflakes_;
  // Gapless sequences: fixed at start-up, read-only afterwards.
  std::unordered_map<std::string, std::shared_ptr<GaplessSequence>, NameHash, std::equal_to<>>
      gapless_;
  // UUIDv7 sequences: fixed at start-up, read-only afterwards.
  std::unordered_map<std::string, std::shared_ptr<UuidV7Generator>, NameHash, std::equal_to<>>
      uuidv7s_;
  RetryScheduler* retries_ = nullptr;
  const Clock* clock_ = nullptr;
};

/// Blocking helpers for start-up, tools, the crash-test child and benchmarks. Never call them
/// on an I/O thread.
[[nodiscard]] DetailedResult<Block> next_and_wait(TicketService& service, std::string_view name,
                                                  std::uint64_t count);
[[nodiscard]] DetailedResult<Block> take_and_wait(TicketSequence& sequence, std::uint64_t count);

}  // namespace ticketd
