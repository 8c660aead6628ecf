#include "server/core/ticket_service.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <iterator>
#include <mutex>
#include <type_traits>
#include <utility>

#include "server/base/log.h"
#include "server/core/ticket_errc.h"

namespace ticketd {

using u128 = unsigned __int128;

namespace {

// The variant's alternatives are in SequenceKind's order.
static_assert(std::variant_size_v<SequenceHandle> == std::size(kAllSequenceKinds));
// The handle's alternatives are listed in SequenceKind's order, so the index is the kind.
template <SequenceKind K, class T>
constexpr bool alternative_is =
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(K), SequenceHandle>,
                   std::shared_ptr<T>>;
static_assert(alternative_is<SequenceKind::kTicket, TicketSequence> &&
              alternative_is<SequenceKind::kGapless, GaplessSequence> &&
              alternative_is<SequenceKind::kSnowflake, SnowflakeGenerator> &&
              alternative_is<SequenceKind::kUuidV7, UuidV7Generator> &&
              std::variant_size_v<SequenceHandle> == std::size(kAllSequenceKinds));

SequenceKind kind_of_handle(const SequenceHandle& h) {
  return static_cast<SequenceKind>(h.index());
}

}  // namespace

TicketService::TicketService(CounterStore& store, GroupCommitter& committer, const Clock& clock)
    : store_(store), committer_(committer), clock_(clock) {}

Error TicketService::unknown(std::string_view name) {
  return Error{TicketErrc::kUnknownSequence, "sequence '" + std::string(name) + "' does not exist"};
}

void TicketService::accept_not_in_backup(std::vector<std::string> names) {
  not_in_backup_ = std::move(names);
}

bool TicketService::floor_waived(const std::string& name) const {
  if (std::find(not_in_backup_.begin(), not_in_backup_.end(), name) == not_in_backup_.end()) {
    return false;
  }
  audit("sequence_not_in_backup", name,
        "sequence '" + name +
            "' created without the restore floor (--force-not-in-backup: it "
            "never existed after the backup this store was restored from)");
  return true;
}

void TicketService::enable_runtime_kinds(RuntimeKinds kinds) { runtime_ = std::move(kinds); }

DetailedResult<void> TicketService::load() {
  auto records = store_.scan(kSequencePrefix);
  if (!records) return records.error();
  auto tombs = store_.scan(kTombstonePrefix);
  if (!tombs) return tombs.error();
  auto definitions = store_.scan(kDefinitionPrefix);
  if (!definitions) return definitions.error();
  auto floor = store_.get(kRestoreFloorKey);
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
  std::unique_lock lock(mutex_);
  restore_floor_ = restore_floor;
  for (auto& [key, value] : *records) {
    auto name = key.substr(kSequencePrefix.size());
    auto record = decode_record(name, value);
    if (!record) {
      return Error{StorageErrc::kCorruption, "cannot decode stored sequence '" + name + "'"};
    }
    sequences_[name] = std::make_shared<TicketSequence>(std::move(*record), committer_, clock_);
  }
  for (auto& [key, value] : *tombs) {
    auto name = key.substr(kTombstonePrefix.size());
    auto ceiling = decode_tombstone(value);
    if (!ceiling) {
      return Error{StorageErrc::kCorruption, "cannot decode tombstone of '" + name + "'"};
    }
    tombstones_[name] = *ceiling;
  }
  lock.unlock();
  for (auto& d : others) {
    const std::string name = d.spec.name;
    {
      std::unique_lock l(mutex_);
      defined_[name] = true;
      if (sequences_.contains(name)) {
        return Error{StorageErrc::kCorruption,
                     "'" + name + "' is stored both as a ticket sequence and as kind " +
                         std::string(kind_name(d.spec.kind))};
      }
    }
    if (d.spec.kind == SequenceKind::kSnowflake) {
      stored_snowflakes_.push_back(std::move(d));
      continue;
    }
    auto handle = open_definition(d);
    if (!handle) {
      return Error{handle.error().code,
                   "stored sequence '" + name + "': " + handle.error().message};
    }
    std::unique_lock l(mutex_);
    sequences_[name] = std::move(*handle);
  }
  return {};
}

DetailedResult<void> TicketService::open_stored_snowflakes() {
  for (const auto& d : stored_snowflakes_) {
    if (find_snowflake(d.spec.name)) continue;  // configured: the config's generator serves
    auto handle = open_definition(d);
    if (!handle) {
      return Error{handle.error().code,
                   "stored sequence '" + d.spec.name + "': " + handle.error().message};
    }
    std::unique_lock l(mutex_);
    sequences_[d.spec.name] = std::move(*handle);
  }
  stored_snowflakes_.clear();
  return {};
}

DetailedResult<SequenceHandle> TicketService::open_definition(const SequenceDefinition& d) {
  if (runtime_.clock == nullptr) {
    return Error{
        TicketErrc::kInvalidArgument,
        "sequences of kind " + std::string(kind_name(d.spec.kind)) + " cannot be created here"};
  }
  switch (d.spec.kind) {
    case SequenceKind::kGapless: {
      auto g = GaplessSequence::open(d.spec, d.gapless, store_, committer_, *runtime_.clock);
      if (!g) return g.error();
      return SequenceHandle{std::move(*g)};
    }
    case SequenceKind::kUuidV7:
      return SequenceHandle{std::make_shared<UuidV7Generator>(*runtime_.clock)};
    case SequenceKind::kSnowflake: {
      if (!runtime_.open_snowflake) {
        return Error{TicketErrc::kInvalidArgument,
                     "Snowflake sequences cannot be created here: the storage engine or the "
                     "worker ID source does not allow it"};
      }
      auto g = runtime_.open_snowflake(d.spec.name);
      if (!g) return g.error();
      use_snowflake_retries(runtime_.background, runtime_.clock);
      return SequenceHandle{std::move(*g)};
    }
    case SequenceKind::kTicket:
      break;
  }
  return Error{TicketErrc::kInvalidArgument, "not a definition"};
}

DetailedResult<void> TicketService::ensure_configured(const SequenceSpec& spec, ConfigForce force) {
  if (auto problem = validate(spec); !problem.empty()) {
    return Error{TicketErrc::kInvalidArgument, "sequence '" + spec.name + "': " + problem};
  }
  auto seq = find(spec.name);
  if (!seq) {
    std::promise<DetailedResult<void>> p;
    create(spec, CreateOptions{}, [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
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
    audit("sequence_grid_forced", spec.name,
          "sequence '" + spec.name + "' moved by a forced config change from " +
              grid_text(r->before) + " to " + grid_text(r->after) +
              " (--force-grid-change: values of other servers on the old grid may be reissued "
              "if they share this value space)");
  }
  if (r->rate_raised) {
    audit("sequence_rate_raised", spec.name,
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

std::optional<Error> TicketService::claim_ddl_locked(const std::string& name) {
  if (ddl_in_flight_.contains(name)) {
    return Error{TicketErrc::kRetryLater,
                 "another create or drop of '" + name + "' is in progress"};
  }
  ddl_in_flight_[name] = true;
  return std::nullopt;
}

void TicketService::create(const SequenceDefinition& definition, CreateOptions options,
                           DoneCallback done) {
  const auto& spec = definition.spec;
  if (auto problem = validate(definition); !problem.empty()) {
    done(Error{TicketErrc::kInvalidArgument, "sequence '" + spec.name + "': " + problem});
    return;
  }
  {
    std::unique_lock lock(mutex_);
    if (auto it = sequences_.find(spec.name); it != sequences_.end()) {
      const auto existing = kind_of_handle(it->second);
      lock.unlock();
      if (options.if_not_exists && existing == spec.kind) {
        done({});
      } else if (existing == spec.kind) {
        done(Error{TicketErrc::kAlreadyExists, "sequence '" + spec.name + "' already exists"});
      } else {
        done(Error{TicketErrc::kAlreadyExists, "sequence '" + spec.name +
                                                   "' already exists (of kind " +
                                                   std::string(kind_name(existing)) + ")"});
      }
      return;
    }
  }
  if (spec.kind == SequenceKind::kTicket) {
    create_ticket(spec, options, std::move(done));
    return;
  }
  if (runtime_.background == nullptr || runtime_.clock == nullptr) {
    done(Error{
        TicketErrc::kInvalidArgument,
        "sequences of kind " + std::string(kind_name(spec.kind)) + " cannot be created here"});
    return;
  }
  {
    std::unique_lock lock(mutex_);
    if (auto busy = claim_ddl_locked(spec.name)) {
      lock.unlock();
      done(*busy);
      return;
    }
  }
  // Opening reads the sequence's stored state (gapless) or writes a high-water mark
  // (Snowflake): blocking work, so it runs on the background thread, never the caller's.
  runtime_.background->after(std::chrono::milliseconds(0),
                             [this, definition, options, done = std::move(done)]() mutable {
                               auto r = create_other(std::move(definition), options.force);
                               done(std::move(r));
                             });
}

DetailedResult<void> TicketService::create_other(SequenceDefinition d, bool force) {
  const std::string name = d.spec.name;
  std::optional<std::uint64_t> tomb;
  {
    std::shared_lock lock(mutex_);
    if (auto t = tombstones_.find(name); t != tombstones_.end()) tomb = t->second;
  }
  auto handle = open_definition(d);
  // A gapless sequence is a counter: it starts above anything its name issued before. With
  // stored state of its own (dropped and created again) it continues that run; otherwise (the
  // tombstone of a ticket sequence, say) it starts above the tombstone.
  if (handle && d.spec.kind == SequenceKind::kGapless && tomb && !force) {
    auto& g = std::get<std::shared_ptr<GaplessSequence>>(*handle);
    const auto high = g->audit(0).high;
    if (!high && d.spec.start <= *tomb) {
      const auto above = align_up(u128{*tomb} + 1, d.spec.increment, d.spec.offset);
      if (above > d.spec.max_value) {
        handle = Error{TicketErrc::kInvalidArgument,
                       "its tombstone " + std::to_string(*tomb) + " leaves no value to issue"};
      } else {
        log::info(
            "sequence '" + name + "': created above its tombstone ceiling " + std::to_string(*tomb),
            {{"sequence", name}});
        d.spec.start = static_cast<std::uint64_t>(above);
        handle = open_definition(d);
      }
    } else if (high && *high < *tomb) {
      // The name issued values above this run after it was dropped (as another kind).
      handle = Error{TicketErrc::kInvalidArgument,
                     "its stored gapless run ends at " + std::to_string(*high) +
                         ", below its tombstone " + std::to_string(*tomb) +
                         ": continuing it could issue a value twice"};
    }
  }
  if (handle && d.spec.kind == SequenceKind::kGapless) {
    const bool fresh =
        std::get<std::shared_ptr<GaplessSequence>>(*handle)->unstored_frontier().has_value();
    if (auto refused = new_gapless_refused(name, fresh, force)) handle = *refused;
  }
  DetailedResult<void> written;
  if (handle) {
    std::vector<Mutation> mutations;
    mutations.push_back(Mutation{definition_key(name), encode_definition(d)});
    std::shared_ptr<GaplessSequence> gapless;
    if (d.spec.kind == SequenceKind::kGapless) {
      mutations.push_back(Mutation{tombstone_key(name), std::nullopt});
      gapless = std::get<std::shared_ptr<GaplessSequence>>(*handle);
      if (auto frontier = gapless->unstored_frontier()) mutations.push_back(std::move(*frontier));
    }
    written = commit_and_wait(committer_, std::move(mutations));
    if (written && gapless) gapless->frontier_stored();
  }
  std::unique_lock lock(mutex_);
  ddl_in_flight_.erase(name);
  if (!handle)
    return Error{handle.error().code, "sequence '" + name + "': " + handle.error().message};
  if (!written) return written.error();
  if (d.spec.kind == SequenceKind::kGapless) tombstones_.erase(name);
  defined_[name] = true;
  sequences_[name] = std::move(*handle);
  lock.unlock();
  audit("sequence_created", name,
        "sequence '" + name + "' created (" + std::string(kind_name(d.spec.kind)) +
            (force ? ", forced" : "") + ")");
  return {};
}

void TicketService::create_ticket(const SequenceSpec& spec, CreateOptions options,
                                  DoneCallback done) {
  std::uint64_t ceiling = spec.start - 1;
  {
    std::unique_lock lock(mutex_);
    if (sequences_.contains(spec.name)) {  // created meanwhile
      lock.unlock();
      if (options.if_not_exists) {
        done({});
      } else {
        done(Error{TicketErrc::kAlreadyExists, "sequence '" + spec.name + "' already exists"});
      }
      return;
    }
    if (auto busy = claim_ddl_locked(spec.name)) {
      lock.unlock();
      done(*busy);
      return;
    }
    if (auto t = tombstones_.find(spec.name); t == tombstones_.end()) {
      if (restore_floor_ && !options.force && !floor_waived(spec.name)) {
        // The name may have lived after the backup this store was restored from.
        const std::uint64_t skip = restore_floor_skip(*restore_floor_, spec);
        const u128 above = align_up(u128{spec.start} - 1 + u128{skip} * spec.increment,
                                    spec.increment, spec.offset);
        if (above >= spec.max_value) {
          ddl_in_flight_.erase(spec.name);
          lock.unlock();
          done(Error{TicketErrc::kInvalidArgument,
                     "sequence '" + spec.name +
                         "' is not in the backup this store was restored "
                         "from: it may have issued up to " +
                         std::to_string(skip) +
                         " values since (its max_rate over the time the backup did not see), which "
                         "do not fit below its max_value " +
                         std::to_string(spec.max_value) +
                         "; if it never existed after that backup, start ticketd with "
                         "--force-not-in-backup " +
                         spec.name + " and create it again"});
          return;
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
        audit("sequence_force_created", spec.name,
              "sequence '" + spec.name + "': forced re-create ignores the tombstone ceiling " +
                  std::to_string(t->second) + "; values at or below it may be issued again");
      } else if (t->second > ceiling) {
        log::info("sequence '" + spec.name + "': re-created above its tombstone ceiling " +
                      std::to_string(t->second),
                  {{"sequence", spec.name}});
        ceiling = t->second;
      }
    }
  }
  SequenceRecord record{spec, ceiling};
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{sequence_key(spec.name), encode_record(record)});
  mutations.push_back(Mutation{tombstone_key(spec.name), std::nullopt});
  committer_.submit(std::move(mutations),
                    [this, record, done = std::move(done)](const DetailedResult<void>& r) mutable {
                      {
                        std::unique_lock lock(mutex_);
                        ddl_in_flight_.erase(record.spec.name);
                        if (r) {
                          tombstones_.erase(record.spec.name);
                          sequences_[record.spec.name] =
                              std::make_shared<TicketSequence>(record, committer_, clock_);
                        }
                      }
                      if (r) {
                        audit("sequence_created", record.spec.name,
                              "sequence '" + record.spec.name + "' created (" +
                                  std::string(kind_name(record.spec.kind)) + ", resumes above " +
                                  std::to_string(record.ceiling) + ")");
                      }
                      done(r);
                    });
}

void TicketService::drop(std::string_view name, DoneCallback done) {
  const std::string n(name);
  SequenceHandle handle;
  bool defined = false;
  {
    std::unique_lock lock(mutex_);
    auto it = sequences_.find(name);
    if (it == sequences_.end()) {
      lock.unlock();
      done(unknown(name));
      return;
    }
    if (auto busy = claim_ddl_locked(n)) {
      lock.unlock();
      done(*busy);
      return;
    }
    handle = it->second;
    sequences_.erase(it);
    defined = defined_.contains(n);
  }
  // What the tombstone must cover: the highest value the sequence may have issued.
  std::optional<std::uint64_t> ceiling;
  std::optional<SequenceInfo> ticket_before;
  if (auto* t = std::get_if<std::shared_ptr<TicketSequence>>(&handle)) {
    ticket_before = (*t)->info();
    ceiling = (*t)->mark_dropped();
  } else if (auto* g = std::get_if<std::shared_ptr<GaplessSequence>>(&handle)) {
    const auto audit = (*g)->audit(0);
    ceiling = audit.high.value_or((*g)->spec().start - 1);
  } else if (auto* sf = std::get_if<std::shared_ptr<SnowflakeGenerator>>(&handle)) {
    // Its high-water mark stays in the store (a new Snowflake sequence of the name starts
    // after it); the tombstone keeps a counter of that name above every ID it may have used.
    const auto& layout = (*sf)->layout();
    const auto stats = (*sf)->stats();
    const auto tick =
        std::clamp<std::int64_t>(layout.tick_of(std::max(stats.hwm_unix_ms, stats.last_id_unix_ms)),
                                 0, static_cast<std::int64_t>(layout.max_ticks()));
    ceiling = layout.compose(static_cast<std::uint64_t>(tick), layout.max_worker(),
                             layout.max_sequence());
  }
  std::vector<Mutation> mutations;
  if (ticket_before) mutations.push_back(Mutation{sequence_key(name), std::nullopt});
  if (defined) mutations.push_back(Mutation{definition_key(name), std::nullopt});
  if (ceiling) mutations.push_back(Mutation{tombstone_key(name), encode_tombstone(*ceiling)});
  committer_.submit(
      std::move(mutations), [this, n, handle, ceiling, ticket_before,
                             done = std::move(done)](const DetailedResult<void>& r) mutable {
        {
          std::unique_lock lock(mutex_);
          ddl_in_flight_.erase(n);
          if (r) {
            if (ceiling) tombstones_[n] = *ceiling;
            defined_.erase(n);
          } else if (ticket_before) {
            // The drop did not land: the sequence is still on disk. Bring it back, resuming above
            // the last ceiling known durable.
            sequences_[n] = std::make_shared<TicketSequence>(
                SequenceRecord{ticket_before->spec, ticket_before->durable_ceiling,
                               ticket_before->fence, ticket_before->restrided,
                               ticket_before->rate_tat_us},
                committer_, clock_);
          } else {
            sequences_[n] = handle;
          }
        }
        if (r) {
          audit("sequence_dropped", n,
                "sequence '" + n + "' dropped" +
                    (ceiling ? "; tombstone ceiling " + std::to_string(*ceiling) : std::string()));
        }
        done(r);
      });
}

std::optional<Error> TicketService::check_count(std::uint64_t count) {
  if (count >= 1 && count <= kMaxIdsPerCall) return std::nullopt;
  return Error{TicketErrc::kInvalidArgument,
               "count must be 1.." + std::to_string(kMaxIdsPerCall) + " IDs per call"};
}

void TicketService::next(std::string_view name, std::uint64_t count, BlockCallback done) {
  if (auto bad = check_count(count)) return done(*bad);
  auto handle = find_any(name);
  if (!handle) return done(unknown(name));
  if (auto* t = std::get_if<std::shared_ptr<TicketSequence>>(&*handle)) {
    (*t)->take(count, std::move(done));
    return;
  }
  if (auto* sf = std::get_if<std::shared_ptr<SnowflakeGenerator>>(&*handle)) {
    next_snowflake(std::move(*sf), count, std::move(done), 0);
    return;
  }
  if (auto* g = std::get_if<std::shared_ptr<GaplessSequence>>(&*handle)) {
    if (count != 1) return done(not_a_ticket_sequence(name));
    const auto step = (*g)->spec().increment;
    (*g)->take("autocommit", [done = std::move(done), step](DetailedResult<Reservation> r) {
      if (!r) return done(r.error());
      done(Block{r->number, step, 1});
    });
    return;
  }
  done(Error{TicketErrc::kWrongKind,
             "sequence '" + std::string(name) +
                 "' is a uuidv7 sequence: its IDs are UUIDs, not integers; use SELECT "
                 "UUID_V7() over MySQL, or POST /v1/sequences/" +
                 std::string(name) + "/next over HTTP"});
}

DetailedResult<void> TicketService::add_configured(const std::string& name, SequenceHandle handle) {
  std::unique_lock lock(mutex_);
  if (auto it = sequences_.find(name); it != sequences_.end()) {
    const auto stored = kind_of_handle(it->second);
    if (stored != kind_of_handle(handle)) {
      return Error{TicketErrc::kAlreadyExists, "a sequence '" + name + "' of kind " +
                                                   std::string(kind_name(stored)) +
                                                   " is stored; the config says kind " +
                                                   std::string(kind_name(kind_of_handle(handle)))};
    }
  }
  sequences_[name] = std::move(handle);
  return {};
}

DetailedResult<void> TicketService::add_snowflake(std::shared_ptr<SnowflakeGenerator> generator,
                                                  RetryScheduler& retries, const Clock& clock) {
  use_snowflake_retries(&retries, &clock);
  const std::string name = generator->name();
  return add_configured(name, std::move(generator));
}

std::optional<Error> TicketService::new_gapless_refused(const std::string& name, bool fresh,
                                                        bool force) const {
  std::shared_lock lock(mutex_);
  if (!restore_floor_ || !fresh || force || floor_waived(name)) return std::nullopt;
  return Error{TicketErrc::kInvalidArgument,
               "gapless sequence '" + name +
                   "' is not in the backup this store was restored from: if it was created "
                   "after that backup, numbers it committed are not here and would be issued "
                   "again. If it never existed after that backup, start ticketd with "
                   "--force-not-in-backup " +
                   name + " (and create it again)"};
}

DetailedResult<void> TicketService::add_gapless(std::shared_ptr<GaplessSequence> sequence,
                                                bool force) {
  const std::string name = sequence->spec().name;
  if (auto refused = new_gapless_refused(name, sequence->unstored_frontier().has_value(), force)) {
    return *refused;
  }
  if (auto frontier = sequence->unstored_frontier()) {
    if (auto r = store_.commit(std::span(&*frontier, 1)); !r) return r.error();
    sequence->frontier_stored();
  }
  return add_configured(name, std::move(sequence));
}

DetailedResult<void> TicketService::add_uuidv7(std::string name,
                                               std::shared_ptr<UuidV7Generator> generator) {
  return add_configured(name, std::move(generator));
}

std::optional<SequenceHandle> TicketService::find_any(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = sequences_.find(name);
  if (it == sequences_.end()) return std::nullopt;
  return it->second;
}

std::optional<SequenceKind> TicketService::kind_of(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = sequences_.find(name);
  if (it == sequences_.end()) return std::nullopt;
  return kind_of_handle(it->second);
}

namespace {

template <class T>
std::shared_ptr<T> find_as(const std::optional<SequenceHandle>& h) {
  if (!h) return nullptr;
  auto* p = std::get_if<std::shared_ptr<T>>(&*h);
  return p == nullptr ? nullptr : *p;
}

}  // namespace

std::shared_ptr<TicketSequence> TicketService::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = sequences_.find(name);
  if (it == sequences_.end()) return nullptr;
  auto* p = std::get_if<std::shared_ptr<TicketSequence>>(&it->second);
  return p == nullptr ? nullptr : *p;
}

std::shared_ptr<GaplessSequence> TicketService::find_gapless(std::string_view name) const {
  return find_as<GaplessSequence>(find_any(name));
}

std::shared_ptr<SnowflakeGenerator> TicketService::find_snowflake(std::string_view name) const {
  return find_as<SnowflakeGenerator>(find_any(name));
}

std::shared_ptr<UuidV7Generator> TicketService::find_uuidv7(std::string_view name) const {
  return find_as<UuidV7Generator>(find_any(name));
}

namespace {

template <class T>
std::vector<std::pair<std::string, std::shared_ptr<T>>> all_of(const auto& sequences) {
  std::vector<std::pair<std::string, std::shared_ptr<T>>> out;
  for (const auto& [name, h] : sequences) {
    if (auto* p = std::get_if<std::shared_ptr<T>>(&h)) out.emplace_back(name, *p);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// The handles of kind T, by name.
template <class T>
std::vector<std::shared_ptr<T>> handles_of(const auto& m) {
  std::vector<std::shared_ptr<T>> out;
  for (auto& [_, h] : all_of<T>(m)) out.push_back(std::move(h));
  return out;
}

}  // namespace

std::vector<std::shared_ptr<GaplessSequence>> TicketService::gapless() const {
  std::shared_lock lock(mutex_);
  return handles_of<GaplessSequence>(sequences_);
}

std::vector<std::shared_ptr<SnowflakeGenerator>> TicketService::snowflakes() const {
  std::shared_lock lock(mutex_);
  return handles_of<SnowflakeGenerator>(sequences_);
}

std::vector<SequenceInfo> TicketService::list() const {
  std::vector<std::pair<std::string, std::shared_ptr<TicketSequence>>> all;
  {
    std::shared_lock lock(mutex_);
    all = all_of<TicketSequence>(sequences_);
  }
  std::vector<SequenceInfo> out;
  out.reserve(all.size());
  for (const auto& [_, s] : all) out.push_back(s->info());
  return out;
}

SequenceDescription TicketService::describe_handle(const std::string& name,
                                                   const SequenceHandle& handle) const {
  SequenceDescription d;
  d.spec.name = name;
  d.spec.kind = kind_of_handle(handle);
  std::visit(
      [&](const auto& p) {
        using T = typename std::decay_t<decltype(p)>::element_type;
        if constexpr (std::is_same_v<T, TicketSequence>) {
          d.ticket = p->info();
          d.spec = d.ticket->spec;
        } else if constexpr (std::is_same_v<T, GaplessSequence>) {
          const auto audit = p->audit(0);
          d.spec = p->spec();
          d.spec.kind = SequenceKind::kGapless;
          // audit(0) lists nothing; the count comes from counts().
          d.gapless = SequenceDescription::Gapless{p->options(), p->next_value(),
                                                   audit.committed_through, p->counts().pending};
        } else if constexpr (std::is_same_v<T, SnowflakeGenerator>) {
          d.snowflake = SequenceDescription::Snowflake{p->layout(), p->worker_id(), p->policy(),
                                                       p->stats().issued};
        } else {
          d.uuids_issued = p->stats().issued;
        }
      },
      handle);
  return d;
}

std::vector<SequenceDescription> TicketService::describe_all() const {
  std::vector<std::pair<std::string, SequenceHandle>> all;
  {
    std::shared_lock lock(mutex_);
    all.assign(sequences_.begin(), sequences_.end());
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SequenceDescription> out;
  out.reserve(all.size());
  for (const auto& [name, h] : all) out.push_back(describe_handle(name, h));
  return out;
}

std::optional<SequenceDescription> TicketService::describe(std::string_view name) const {
  auto h = find_any(name);
  if (!h) return std::nullopt;
  return describe_handle(std::string(name), *h);
}

void TicketService::next_snowflake(std::shared_ptr<SnowflakeGenerator> generator,
                                   std::uint64_t count, BlockCallback done, int attempts) {
  if (count != 1) {
    done(Error{TicketErrc::kWrongKind, "sequence '" + generator->name() +
                                           "' is a Snowflake sequence: it issues one ID per "
                                           "call, blocks are refused"});
    return;
  }
  auto r = generator->try_next();
  if (r.ok()) {
    done(Block{r.id, 1, 1});
    return;
  }
  // A full tick or a short clock step back: retry on the scheduler, a bounded number of times
  // (about a second of waiting), never by sleeping on the caller's thread.
  constexpr int kMaxAttempts = 1000;
  const SnowflakeRetries* retries = snowflake_retries_.load(std::memory_order_acquire);
  if (r.retry_later() && attempts < kMaxAttempts && retries != nullptr) {
    const auto now_ms = retries->clock->now_unix_ms();
    const auto delay =
        std::chrono::milliseconds(std::clamp<std::int64_t>(r.retry_at_unix_ms - now_ms, 0, 1000));
    retries->scheduler->after(delay, [this, generator = std::move(generator),
                                      done = std::move(done), attempts]() mutable {
      next_snowflake(std::move(generator), 1, std::move(done), attempts + 1);
    });
    return;
  }
  if (r.retry_later()) {
    done(Error{TicketErrc::kRetryLater, "Snowflake sequence '" + generator->name() +
                                            "' cannot issue yet: " + r.error.message});
    return;
  }
  done(r.error);
}

void TicketService::use_snowflake_retries(RetryScheduler* scheduler, const Clock* clock) {
  if (scheduler == nullptr || clock == nullptr) return;
  std::unique_lock lock(mutex_);
  if (snowflake_retries_storage_ != nullptr) return;  // the first pair serves every Snowflake
  snowflake_retries_storage_ =
      std::make_unique<SnowflakeRetries>(SnowflakeRetries{scheduler, clock});
  snowflake_retries_.store(snowflake_retries_storage_.get(), std::memory_order_release);
}

Error TicketService::not_a_ticket_sequence(std::string_view name) const {
  const auto kind = kind_of(name);
  if (!kind) return unknown(name);
  const std::string n(name);
  switch (*kind) {
    case SequenceKind::kSnowflake:
      return Error{TicketErrc::kWrongKind, "sequence '" + n +
                                               "' is a Snowflake sequence: it issues one ID per "
                                               "call, blocks are refused"};
    case SequenceKind::kGapless:
      return Error{TicketErrc::kWrongKind, "sequence '" + n +
                                               "' is a gapless sequence: it issues one number "
                                               "per call, blocks are refused"};
    case SequenceKind::kUuidV7:
      return Error{TicketErrc::kWrongKind, "sequence '" + n +
                                               "' is a uuidv7 sequence: its IDs are UUIDs, "
                                               "blocks are refused"};
    case SequenceKind::kTicket:
      break;
  }
  return unknown(name);
}

void TicketService::next_recorded(std::string_view name, std::uint64_t count, BlockRecorder record,
                                  BlockCallback done) {
  if (auto bad = check_count(count)) return done(*bad);
  auto seq = find(name);
  if (!seq) {
    done(not_a_ticket_sequence(name));
    return;
  }
  seq->take_recorded(count, std::move(record), std::move(done));
}

void TicketService::advance_to(std::string_view name, std::uint64_t value, BlockCallback done) {
  advance(name, value, false, std::move(done));
}

void TicketService::advance_past(std::string_view name, std::uint64_t last_used,
                                 BlockCallback done) {
  advance(name, last_used, true, std::move(done));
}

void TicketService::advance(std::string_view name, std::uint64_t value, bool past,
                            BlockCallback done) {
  auto seq = find(name);
  if (!seq) {
    done(unknown(name));
    return;
  }
  BlockCallback then = std::move(done);
  if (audit_) {
    then = [this, n = std::string(name), value, past,
            done = std::move(then)](DetailedResult<Block> b) {
      if (b) {
        audit("sequence_advanced", n,
              "sequence '" + n + "' moved " + (past ? "past " : "to at least ") +
                  std::to_string(value) + " (next value " + std::to_string(b->first) + ")");
      }
      done(std::move(b));
    };
  }
  if (past) {
    seq->advance_past(value, std::move(then));
  } else {
    seq->advance_to(value, std::move(then));
  }
}

Error TicketService::not_restridable(std::string_view name) const {
  const auto kind = kind_of(name);
  if (!kind) return unknown(name);
  return Error{TicketErrc::kWrongKind, "sequence '" + std::string(name) + "' is a " +
                                           std::string(kind_name(*kind)) +
                                           " sequence: only ticket sequences are restrided"};
}

void TicketService::set_fence(std::string_view name, std::uint64_t fence, BlockCallback done) {
  auto seq = find(name);
  if (!seq) return done(not_restridable(name));
  seq->set_fence(fence, [this, n = std::string(name), fence,
                         done = std::move(done)](DetailedResult<Block> b) {
    if (b) {
      audit("sequence_fenced", n,
            fence == 0
                ? "sequence '" + n + "': fence lifted"
                : "sequence '" + n + "' fenced at " + std::to_string(fence) + " for a restride");
    }
    done(std::move(b));
  });
}

void TicketService::restride(std::string_view name, const Restride& r, BlockCallback done) {
  auto seq = find(name);
  if (!seq) return done(not_restridable(name));
  const auto before = seq->info().spec;
  seq->restride(r, [this, n = std::string(name), before, r,
                    done = std::move(done)](DetailedResult<Block> b) {
    if (b) {
      audit("sequence_restrided", n,
            "sequence '" + n + "' restrided from increment " + std::to_string(before.increment) +
                " offset " + std::to_string(before.offset) + " to increment " +
                std::to_string(r.increment) + " offset " + std::to_string(r.offset) + " above " +
                std::to_string(r.floor) + " (next value " + std::to_string(b->first) + ")");
    }
    done(std::move(b));
  });
}

void TicketService::audit(std::string_view event, std::string_view sequence,
                          const std::string& detail) const {
  if (audit_) {
    audit_(event, detail, {{"sequence", sequence}});
  } else {
    log::info(detail, {{"sequence", sequence}});
  }
}

DetailedResult<Block> take_and_wait(TicketSequence& sequence, std::uint64_t count) {
  std::promise<DetailedResult<Block>> p;
  auto f = p.get_future();
  sequence.take(count, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  return f.get();
}

DetailedResult<Block> next_and_wait(TicketService& service, std::string_view name,
                                    std::uint64_t count) {
  std::promise<DetailedResult<Block>> p;
  auto f = p.get_future();
  service.next(name, count, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  return f.get();
}

}  // namespace ticketd
