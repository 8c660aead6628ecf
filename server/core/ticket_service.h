// The sequence engine's facade: the registry of sequences of every kind (SequenceRegistry),
// their DDL and administration (SequenceDdl) and allocation (SequenceAllocation), behind the
// one object the front ends, tools and tests hold.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/result.h"
#include "server/core/audit.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/kind_context.h"
#include "server/core/kind_module.h"
#include "server/core/sequence_allocation.h"
#include "server/core/sequence_ddl.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_handle.h"
#include "server/core/sequence_registry.h"
#include "server/core/ticket_sequence.h"
#include "server/core/timer_queue.h"
#include "storage/counter_store.h"

namespace ticketd {

/// The one engine of sequences, whatever their kind. Knows nothing of sockets, protocols or the
/// storage engine behind CounterStore. It owns its three parts and forwards to them (inline:
/// the request path costs no extra call); a caller that needs one part only may take it
/// (registry(), ddl(), allocation()). All durable writes go through the GroupCommitter;
/// callbacks run inline, on the committer thread or on the RuntimeKinds background thread.
/// Thread safety: all members may be called concurrently, except load(),
/// enable_runtime_kinds(), set_audit() and the add*() methods, which run before serving.
class TicketService {
 public:
  /// `clock` times each ticket sequence's max_rate allowance.
  TicketService(CounterStore& store, GroupCommitter& committer, const Clock& clock = system_clock())
      : kinds_(store, committer, clock),
        ddl_(registry_, kinds_, audit_),
        allocation_(registry_, kinds_, audit_) {}

  [[nodiscard]] const SequenceRegistry& registry() const { return registry_; }
  [[nodiscard]] SequenceDdl& ddl() { return ddl_; }
  [[nodiscard]] const SequenceAllocation& allocation() const { return allocation_; }

  /// Lets create() and load() build the run-time kinds' sequences (before load()).
  void enable_runtime_kinds(RuntimeKinds kinds) { kinds_.enable_runtime_kinds(std::move(kinds)); }
  /// Where administrative changes are reported once durable (before serving): every create
  /// (forced re-creates apart), drop and forward move (SETVAL, ALTER TABLE AUTO_INCREMENT).
  /// Without a sink they are info log lines.
  void set_audit(AuditSink sink) { audit_.set_sink(std::move(sink)); }

  // DDL and administration: SequenceDdl.
  [[nodiscard]] DetailedResult<void> load() { return ddl_.load(); }
  [[nodiscard]] DetailedResult<void> open_deferred_definitions() {
    return ddl_.open_deferred_definitions();
  }
  [[nodiscard]] DetailedResult<void> ensure_configured(const SequenceSpec& spec,
                                                       ConfigForce force = {}) {
    return ddl_.ensure_configured(spec, force);
  }
  [[nodiscard]] DetailedResult<void> configure(const SequenceDefinition& definition,
                                               ConfigForce force = {}) {
    return ddl_.configure(definition, force);
  }
  [[nodiscard]] DetailedResult<void> add(const std::string& name, SequenceHandle handle,
                                         bool force = false) {
    return ddl_.add(name, std::move(handle), force);
  }
  /// add() for a Snowflake generator; its "retry later" answers are retried on `retries`
  /// unless enable_runtime_kinds() gave a queue first, so callers never wait on a timer of
  /// their own.
  [[nodiscard]] DetailedResult<void> add_snowflake(std::shared_ptr<SnowflakeGenerator> generator,
                                                   TimerQueue& retries, const Clock& clock);
  [[nodiscard]] DetailedResult<void> add_gapless(std::shared_ptr<GaplessSequence> sequence,
                                                 bool force = false);
  [[nodiscard]] DetailedResult<void> add_uuidv7(std::string name,
                                                std::shared_ptr<UuidV7Generator> generator) {
    return ddl_.add(name, std::move(generator));
  }
  void accept_not_in_backup(std::vector<std::string> names) {
    ddl_.accept_not_in_backup(std::move(names));
  }
  void create(const SequenceDefinition& definition, CreateOptions options, DoneCallback done) {
    ddl_.create(definition, options, std::move(done));
  }
  void create(const SequenceSpec& spec, CreateOptions options, DoneCallback done) {
    ddl_.create(SequenceDefinition{spec, {}}, options, std::move(done));
  }
  void drop(std::string_view name, DoneCallback done) { ddl_.drop(name, std::move(done)); }

  // Lookups: SequenceRegistry.
  [[nodiscard]] std::optional<SequenceHandle> find_any(std::string_view name) const {
    return registry_.find(name);
  }
  [[nodiscard]] std::optional<SequenceKind> kind_of(std::string_view name) const {
    return registry_.kind_of(name);
  }
  [[nodiscard]] std::shared_ptr<TicketSequence> find(std::string_view name) const {
    return registry_.find_as<TicketSequence>(name);
  }
  [[nodiscard]] std::shared_ptr<GaplessSequence> find_gapless(std::string_view name) const {
    return registry_.find_as<GaplessSequence>(name);
  }
  [[nodiscard]] std::shared_ptr<SnowflakeGenerator> find_snowflake(std::string_view name) const {
    return registry_.find_as<SnowflakeGenerator>(name);
  }
  /// UUIDv7 IDs are UUIDs, not integers: front ends take them from here; next() and blocks
  /// refuse the name (kWrongKind, pointing to the UUID interfaces).
  [[nodiscard]] std::shared_ptr<UuidV7Generator> find_uuidv7(std::string_view name) const {
    return registry_.find_as<UuidV7Generator>(name);
  }
  [[nodiscard]] bool exists(std::string_view name) const { return find_any(name).has_value(); }
  /// Ticket sequences, by name (metrics and tools).
  [[nodiscard]] std::vector<SequenceInfo> list() const;
  [[nodiscard]] std::vector<std::shared_ptr<SnowflakeGenerator>> snowflakes() const;
  /// The sequences whose kind keeps deadlines for its callers (KindModule::keeps_deadlines):
  /// read by the 20 ms expiry task each round (with etcd, sequences appear once this instance
  /// leads) and at shutdown.
  [[nodiscard]] std::vector<SequenceHandle> with_deadlines() const {
    return registry_.with_deadlines();
  }
  /// Every sequence of every kind, by name (background upkeep and shutdown iterate over these
  /// through their kinds' modules).
  [[nodiscard]] std::vector<std::pair<std::string, SequenceHandle>> handles() const {
    return registry_.handles();
  }
  /// Every sequence of every kind, by name.
  [[nodiscard]] std::vector<SequenceDescription> describe_all() const;
  [[nodiscard]] std::optional<SequenceDescription> describe(std::string_view name) const;

  // Allocation: SequenceAllocation.
  void next_text(std::string_view name, std::uint64_t count, TextForm form, TextIdsCallback done) {
    allocation_.next_text(name, count, form, std::move(done));
  }
  void next(std::string_view name, std::uint64_t count, BlockCallback done) {
    allocation_.next(name, count, std::move(done));
  }
  void next_recorded(std::string_view name, std::uint64_t count, BlockRecorder record,
                     BlockCallback done) {
    allocation_.next_recorded(name, count, std::move(record), std::move(done));
  }
  void advance_to(std::string_view name, std::uint64_t value, BlockCallback done) {
    allocation_.advance_to(name, value, std::move(done));
  }
  void advance_past(std::string_view name, std::uint64_t last_used, BlockCallback done) {
    allocation_.advance_past(name, last_used, std::move(done));
  }
  void set_fence(std::string_view name, std::uint64_t fence, BlockCallback done) {
    allocation_.set_fence(name, fence, std::move(done));
  }
  void restride(std::string_view name, const Restride& r, BlockCallback done) {
    allocation_.restride(name, r, std::move(done));
  }

 private:
  KindContext kinds_;
  AuditTrail audit_;
  SequenceRegistry registry_;
  SequenceDdl ddl_;
  SequenceAllocation allocation_;
};

/// Blocking helpers for start-up, tools, the crash-test child and benchmarks. Never call them
/// on an I/O thread.
[[nodiscard]] DetailedResult<Block> next_and_wait(TicketService& service, std::string_view name,
                                                  std::uint64_t count);
[[nodiscard]] DetailedResult<Block> take_and_wait(TicketSequence& sequence, std::uint64_t count);

}  // namespace ticketd
