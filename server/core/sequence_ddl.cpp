#include "server/core/sequence_ddl.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

#include "server/base/log.h"
#include "server/core/kind_module.h"
#include "server/core/ticket_errc.h"

namespace ticketd {

using u128 = unsigned __int128;

namespace {

// The answer to a create of a name that is served already (as `existing`).
void answer_served(const SequenceSpec& spec, SequenceKind existing, CreateOptions options,
                   const DoneCallback& done) {
  if (existing != spec.kind) {
    return done(Error{TicketErrc::kAlreadyExists, "sequence '" + spec.name +
                                                      "' already exists (of kind " +
                                                      std::string(kind_name(existing)) + ")"});
  }
  if (options.if_not_exists) return done({});
  done(Error{TicketErrc::kAlreadyExists, "sequence '" + spec.name + "' already exists"});
}

// Claims the name of a sequence to create; false, with `done` answered, when it is served
// (created since the caller looked) or another create or drop of it runs.
bool claim_for_create(SequenceRegistry& registry, const SequenceSpec& spec, CreateOptions options,
                      const DoneCallback& done) {
  switch (registry.claim_new(spec.name)) {
    case SequenceRegistry::Claim::kClaimed:
      return true;
    case SequenceRegistry::Claim::kServed:
      answer_served(spec, registry.kind_of(spec.name).value_or(spec.kind), options, done);
      return false;
    case SequenceRegistry::Claim::kBusy:
      done(SequenceRegistry::busy(spec.name));
      return false;
  }
  return false;
}

}  // namespace

DetailedResult<void> SequenceDdl::load() {
  auto& store = kinds_.store();
  auto records = store.scan(kSequencePrefix);
  if (!records) return records.error();
  auto tombs = store.scan(kTombstonePrefix);
  if (!tombs) return tombs.error();
  auto definitions = store.scan(kDefinitionPrefix);
  if (!definitions) return definitions.error();
  auto floor = store.get(kRestoreFloorKey);
  if (!floor) return floor.error();
  std::optional<RestoreFloor> restore_floor;
  if (*floor) {
    restore_floor = decode_restore_floor(**floor);
    if (!restore_floor) return Error{StorageErrc::kCorruption, "cannot decode the restore floor"};
  }
  std::vector<SequenceDefinition> others;
  for (auto& [key, value] : *definitions) {
    auto name = key.substr(kDefinitionPrefix.size());
    auto d = decode_definition(name, value);
    if (!d)
      return Error{StorageErrc::kCorruption, "cannot decode the definition of '" + name + "'"};
    others.push_back(std::move(*d));
  }
  for (auto& [key, value] : *records) {
    auto name = key.substr(kSequencePrefix.size());
    auto record = decode_record(name, value);
    if (!record) {
      return Error{StorageErrc::kCorruption, "cannot decode stored sequence '" + name + "'"};
    }
    registry_.put(name, std::make_shared<TicketSequence>(std::move(*record), kinds_.committer(),
                                                         kinds_.clock()));
  }
  {
    std::lock_guard lock(mutex_);
    restore_floor_ = restore_floor;
    for (auto& [key, value] : *tombs) {
      auto name = key.substr(kTombstonePrefix.size());
      auto ceiling = decode_tombstone(value);
      if (!ceiling) {
        return Error{StorageErrc::kCorruption, "cannot decode tombstone of '" + name + "'"};
      }
      tombstones_[name] = *ceiling;
    }
  }
  for (auto& d : others) {
    const std::string name = d.spec.name;
    {
      std::lock_guard lock(mutex_);
      defined_.insert(name);
    }
    if (registry_.find(name)) {
      return Error{StorageErrc::kCorruption,
                   "'" + name + "' is stored both as a ticket sequence and as kind " +
                       std::string(kind_name(d.spec.kind))};
    }
    if (kind_module(d.spec.kind).opens_after_worker_id()) {
      deferred_.push_back(std::move(d));
      continue;
    }
    auto handle = open_definition(d);
    if (!handle) {
      return Error{handle.error().code,
                   "stored sequence '" + name + "': " + handle.error().message};
    }
    registry_.put(name, std::move(*handle));
  }
  return {};
}

DetailedResult<void> SequenceDdl::open_deferred_definitions() {
  for (const auto& d : deferred_) {
    if (registry_.find(d.spec.name)) continue;  // configured: the config's sequence serves
    auto handle = open_definition(d);
    if (!handle) {
      return Error{handle.error().code,
                   "stored sequence '" + d.spec.name + "': " + handle.error().message};
    }
    registry_.put(d.spec.name, std::move(*handle));
  }
  deferred_.clear();
  return {};
}

DetailedResult<SequenceHandle> SequenceDdl::open_definition(
    const SequenceDefinition& d, std::optional<std::uint64_t> tombstone) {
  if (!kinds_.opens_runtime_kinds()) {
    return Error{
        TicketErrc::kInvalidArgument,
        "sequences of kind " + std::string(kind_name(d.spec.kind)) + " cannot be created here"};
  }
  return kind_module(d.spec.kind).open(d, tombstone, kinds_.env());
}

DetailedResult<void> SequenceDdl::add(const std::string& name, SequenceHandle handle, bool force) {
  const auto kind = kind_of_handle(handle);
  if (auto stored = registry_.kind_of(name); stored && *stored != kind) {
    return Error{TicketErrc::kAlreadyExists,
                 "a sequence '" + name + "' of kind " + std::string(kind_name(*stored)) +
                     " is stored; the config says kind " + std::string(kind_name(kind))};
  }
  const auto& module = kind_module(kind);
  if (module.without_stored_state(handle)) {
    if (auto refused = unstored_refused(name, kind, force)) return *refused;
  }
  if (auto writes = module.first_writes(handle); !writes.empty()) {
    if (auto r = kinds_.store().commit(writes); !r) return r.error();
    module.first_writes_durable(handle);
  }
  registry_.put(name, std::move(handle));
  return {};
}

DetailedResult<void> SequenceDdl::configure(const SequenceDefinition& definition,
                                            ConfigForce force) {
  const auto& spec = definition.spec;
  if (spec.kind == SequenceKind::kTicket) return ensure_configured(spec, force);
  if (auto problem = validate(definition); !problem.empty()) {
    return Error{TicketErrc::kInvalidArgument, problem};
  }
  if (auto stored = registry_.kind_of(spec.name); stored && *stored != spec.kind) {
    return Error{TicketErrc::kAlreadyExists,
                 "a sequence of kind " + std::string(kind_name(*stored)) +
                     " is stored under this name; a " + std::string(kind_name(spec.kind)) +
                     " sequence needs a name of its own"};
  }
  auto handle = open_definition(definition);
  if (!handle) return handle.error();
  return add(spec.name, std::move(*handle));
}

bool SequenceDdl::floor_waived(const std::string& name) const {
  if (std::find(not_in_backup_.begin(), not_in_backup_.end(), name) == not_in_backup_.end()) {
    return false;
  }
  audit_.record("sequence_not_in_backup", name,
                "sequence '" + name +
                    "' created without the restore floor (--force-not-in-backup: it "
                    "never existed after the backup this store was restored from)");
  return true;
}

DetailedResult<void> SequenceDdl::ensure_configured(const SequenceSpec& spec, ConfigForce force) {
  if (auto problem = validate(spec); !problem.empty()) {
    return Error{TicketErrc::kInvalidArgument, "sequence '" + spec.name + "': " + problem};
  }
  auto seq = registry_.find_as<TicketSequence>(spec.name);
  if (!seq) {
    std::promise<DetailedResult<void>> p;
    create(SequenceDefinition{spec, {}}, CreateOptions{},
           [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
  // A ticket sequence's kind never changes: reading it outside the sequence's lock is safe.
  const auto stored_kind = seq->info().spec.kind;
  if (stored_kind != spec.kind) {
    return Error{TicketErrc::kWrongKind, "sequence '" + spec.name + "' is stored as kind '" +
                                             std::string(kind_name(stored_kind)) +
                                             "', the config says '" +
                                             std::string(kind_name(spec.kind)) + "'"};
  }
  // Compared with the stored settings and queued under the sequence's own lock: a restride or
  // fence that commits before it is seen, one that is in flight makes this kRetryLater.
  std::promise<DetailedResult<ConfigOutcome>> p;
  seq->apply_config(spec, force,
                    [&p](DetailedResult<ConfigOutcome> r) { p.set_value(std::move(r)); });
  auto r = p.get_future().get();
  if (!r) return r.error();
  const auto grid_text = [](const SequenceSpec& s) {
    return "increment " + std::to_string(s.increment) + " offset " + std::to_string(s.offset);
  };
  if (r->grid_kept) {
    log::warn("sequence '" + spec.name + "': the config says " + grid_text(spec) +
                  ", but a restride set " + grid_text(r->after) +
                  "; keeping the restrided grid (update the config to it: docs/restride.md)",
              {{"sequence", spec.name}});
  }
  if (spec.start < r->before.start) {
    log::info("sequence '" + spec.name + "': configured start " + std::to_string(spec.start) +
                  " is below the stored start " + std::to_string(r->before.start) +
                  "; keeping the stored state",
              {{"sequence", spec.name}});
  }
  if (r->grid_forced) {
    audit_.record(
        "sequence_grid_forced", spec.name,
        "sequence '" + spec.name + "' moved by a forced config change from " +
            grid_text(r->before) + " to " + grid_text(r->after) +
            " (--force-grid-change: values of other servers on the old grid may be reissued "
            "if they share this value space)");
  }
  if (r->rate_raised) {
    audit_.record(
        "sequence_rate_raised", spec.name,
        "sequence '" + spec.name + "': max_rate raised by a forced config change from " +
            std::to_string(r->before.max_rate) + " to " + std::to_string(r->after.max_rate) +
            " (--force-rate-raise: a restore of a backup taken before now needs an explicit "
            "--skip-ahead " +
            spec.name + "=N; take a new backup)");
  }
  if (r->changed && !r->grid_forced && !r->rate_raised) {
    log::info("sequence '" + spec.name + "': applied changed settings from the config",
              {{"sequence", spec.name}});
  }
  return {};
}

void SequenceDdl::create(const SequenceDefinition& definition, CreateOptions options,
                         DoneCallback done) {
  const auto& spec = definition.spec;
  if (auto problem = validate(definition); !problem.empty()) {
    return done(Error{TicketErrc::kInvalidArgument, "sequence '" + spec.name + "': " + problem});
  }
  if (auto existing = registry_.kind_of(spec.name)) {
    return answer_served(spec, *existing, options, done);
  }
  if (spec.kind == SequenceKind::kTicket) return create_ticket(spec, options, std::move(done));
  const auto& runtime = kinds_.runtime();
  if (runtime.background == nullptr || runtime.clock == nullptr) {
    return done(Error{
        TicketErrc::kInvalidArgument,
        "sequences of kind " + std::string(kind_name(spec.kind)) + " cannot be created here"});
  }
  if (!claim_for_create(registry_, spec, options, done)) return;
  // Opening reads the sequence's stored state (gapless) or writes a high-water mark
  // (Snowflake): blocking work, so it runs on the background thread, never the caller's.
  runtime.background->after(std::chrono::milliseconds(0),
                            [this, definition, options, done = std::move(done)]() mutable {
                              auto r = create_other(std::move(definition), options.force);
                              done(std::move(r));
                            });
}

DetailedResult<void> SequenceDdl::create_other(SequenceDefinition d, bool force) {
  const std::string name = d.spec.name;
  std::optional<std::uint64_t> tomb;
  if (!force) {
    std::lock_guard lock(mutex_);
    if (auto t = tombstones_.find(name); t != tombstones_.end()) tomb = t->second;
  }
  const auto& module = kind_module(d.spec.kind);
  auto handle = open_definition(d, tomb);
  if (handle && module.without_stored_state(*handle)) {
    if (auto refused = unstored_refused(name, d.spec.kind, force)) handle = *refused;
  }
  if (!handle) {
    registry_.release(name);
    return Error{handle.error().code, "sequence '" + name + "': " + handle.error().message};
  }
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{definition_key(name), encode_definition(d)});
  if (module.supersedes_tombstone()) mutations.push_back(Mutation{tombstone_key(name), {}});
  for (auto& m : module.first_writes(*handle)) mutations.push_back(std::move(m));
  if (auto written = commit_and_wait(kinds_.committer(), std::move(mutations)); !written) {
    registry_.release(name);
    return written.error();
  }
  module.first_writes_durable(*handle);
  {
    std::lock_guard lock(mutex_);
    if (module.supersedes_tombstone()) tombstones_.erase(name);
    defined_.insert(name);
  }
  registry_.release(name, std::move(*handle));
  audit_.record("sequence_created", name,
                "sequence '" + name + "' created (" + std::string(kind_name(d.spec.kind)) +
                    (force ? ", forced" : "") + ")");
  return {};
}

void SequenceDdl::create_ticket(const SequenceSpec& spec, CreateOptions options,
                                DoneCallback done) {
  if (!claim_for_create(registry_, spec, options, done)) return;
  auto resumes_above = ticket_ceiling(spec, options);
  if (!resumes_above) {
    registry_.release(spec.name);
    return done(resumes_above.error());
  }
  SequenceRecord record{spec, *resumes_above};
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{sequence_key(spec.name), encode_record(record)});
  mutations.push_back(Mutation{tombstone_key(spec.name), std::nullopt});
  kinds_.committer().submit(std::move(mutations), [this, record, done = std::move(done)](
                                                      const DetailedResult<void>& r) mutable {
    const std::string& name = record.spec.name;
    if (!r) {
      registry_.release(name);
      return done(r);
    }
    {
      std::lock_guard lock(mutex_);
      tombstones_.erase(name);
    }
    registry_.release(name,
                      std::make_shared<TicketSequence>(record, kinds_.committer(), kinds_.clock()));
    audit_.record("sequence_created", name,
                  "sequence '" + name + "' created (" + std::string(kind_name(record.spec.kind)) +
                      ", resumes above " + std::to_string(record.ceiling) + ")");
    done(r);
  });
}

DetailedResult<std::uint64_t> SequenceDdl::ticket_ceiling(const SequenceSpec& spec,
                                                          CreateOptions options) const {
  std::uint64_t ceiling = spec.start - 1;
  std::lock_guard lock(mutex_);
  if (auto t = tombstones_.find(spec.name); t == tombstones_.end()) {
    if (restore_floor_ && !options.force && !floor_waived(spec.name)) {
      // The name may have lived after the backup this store was restored from.
      const std::uint64_t skip = restore_floor_skip(*restore_floor_, spec);
      const u128 above =
          align_up(u128{spec.start} - 1 + u128{skip} * spec.increment, spec.increment, spec.offset);
      if (above >= spec.max_value) {
        return Error{TicketErrc::kInvalidArgument,
                     "sequence '" + spec.name +
                         "' is not in the backup this store was restored "
                         "from: it may have issued up to " +
                         std::to_string(skip) +
                         " values since (its max_rate over the time the backup did not see), which "
                         "do not fit below its max_value " +
                         std::to_string(spec.max_value) +
                         "; if it never existed after that backup, start ticketd with "
                         "--force-not-in-backup " +
                         spec.name + " and create it again"};
      }
      ceiling = static_cast<std::uint64_t>(above);
      log::info("sequence '" + spec.name +
                    "': not in the backup this store was restored "
                    "from; created above " +
                    std::to_string(ceiling) + " (" + std::to_string(skip) +
                    " values at its max_rate)",
                {{"sequence", spec.name}});
    }
  } else {
    if (options.force) {
      audit_.record("sequence_force_created", spec.name,
                    "sequence '" + spec.name +
                        "': forced re-create ignores the tombstone ceiling " +
                        std::to_string(t->second) + "; values at or below it may be issued again");
    } else if (t->second > ceiling) {
      log::info("sequence '" + spec.name + "': re-created above its tombstone ceiling " +
                    std::to_string(t->second),
                {{"sequence", spec.name}});
      ceiling = t->second;
    }
  }
  return ceiling;
}

void SequenceDdl::drop(std::string_view name, DoneCallback done) {
  const std::string n(name);
  auto claimed = registry_.claim_for_drop(n);
  if (!claimed) return done(claimed.error());
  SequenceHandle handle = std::move(*claimed);
  bool defined = false;
  {
    std::lock_guard lock(mutex_);
    defined = defined_.contains(n);
  }
  // What the tombstone must cover: the highest value the sequence may have issued.
  const auto& module = kind_module(handle);
  const std::optional<std::uint64_t> ceiling = module.retire(handle);
  std::vector<Mutation> mutations = module.drop_writes(n);
  if (defined) mutations.push_back(Mutation{definition_key(n), std::nullopt});
  if (ceiling) mutations.push_back(Mutation{tombstone_key(n), encode_tombstone(*ceiling)});
  kinds_.committer().submit(
      std::move(mutations), [this, n, handle, ceiling, &module,
                             done = std::move(done)](const DetailedResult<void>& r) mutable {
        if (!r) {
          // The drop did not land: the sequence is still on disk. Serve it again.
          registry_.release(n, module.revive(handle, kinds_.env()));
          return done(r);
        }
        {
          std::lock_guard lock(mutex_);
          if (ceiling) tombstones_[n] = *ceiling;
          defined_.erase(n);
        }
        registry_.release(n);
        audit_.record(
            "sequence_dropped", n,
            "sequence '" + n + "' dropped" +
                (ceiling ? "; tombstone ceiling " + std::to_string(*ceiling) : std::string()));
        done(r);
      });
}

std::optional<Error> SequenceDdl::unstored_refused(const std::string& name, SequenceKind kind,
                                                   bool force) const {
  {
    std::lock_guard lock(mutex_);
    if (!restore_floor_ || force) return std::nullopt;
  }
  if (floor_waived(name)) return std::nullopt;
  return Error{TicketErrc::kInvalidArgument,
               std::string(kind_name(kind)) + " sequence '" + name +
                   "' is not in the backup this store was restored from: if it was created "
                   "after that backup, numbers it committed are not here and would be issued "
                   "again. If it never existed after that backup, start ticketd with "
                   "--force-not-in-backup " +
                   name + " (and create it again)"};
}

}  // namespace ticketd
