// The registry's DDL: configured sequences (ensure_configured), create and drop of every kind,
// tombstones, and the restore floor a restored store applies to names its backup did not hold.
#include <algorithm>
#include <chrono>
#include <future>
#include <iterator>
#include <mutex>
#include <type_traits>
#include <utility>

#include "server/base/log.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_service.h"

namespace ticketd {

using u128 = unsigned __int128;

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
  if (!force) {
    std::shared_lock lock(mutex_);
    if (auto t = tombstones_.find(name); t != tombstones_.end()) tomb = t->second;
  }
  const auto& module = kind_module(d.spec.kind);
  auto handle = open_definition(d, tomb);
  if (handle && module.without_stored_state(*handle)) {
    if (auto refused = unstored_refused(name, d.spec.kind, force)) handle = *refused;
  }
  DetailedResult<void> written;
  if (handle) {
    std::vector<Mutation> mutations;
    mutations.push_back(Mutation{definition_key(name), encode_definition(d)});
    if (module.supersedes_tombstone()) mutations.push_back(Mutation{tombstone_key(name), {}});
    for (auto& m : module.first_writes(*handle)) mutations.push_back(std::move(m));
    written = commit_and_wait(committer_, std::move(mutations));
    if (written) module.first_writes_durable(*handle);
  }
  std::unique_lock lock(mutex_);
  ddl_in_flight_.erase(name);
  if (!handle)
    return Error{handle.error().code, "sequence '" + name + "': " + handle.error().message};
  if (!written) return written.error();
  if (module.supersedes_tombstone()) tombstones_.erase(name);
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
  std::uint64_t ceiling = 0;
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
    auto resumes_above = ticket_ceiling_locked(spec, options);
    if (!resumes_above) {
      ddl_in_flight_.erase(spec.name);
      lock.unlock();
      done(resumes_above.error());
      return;
    }
    ceiling = *resumes_above;
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

DetailedResult<std::uint64_t> TicketService::ticket_ceiling_locked(const SequenceSpec& spec,
                                                                   CreateOptions options) const {
  std::uint64_t ceiling = spec.start - 1;
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
  return ceiling;
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
  const auto& module = kind_module(handle);
  const std::optional<std::uint64_t> ceiling = module.retire(handle);
  std::vector<Mutation> mutations = module.drop_writes(n);
  if (defined) mutations.push_back(Mutation{definition_key(n), std::nullopt});
  if (ceiling) mutations.push_back(Mutation{tombstone_key(n), encode_tombstone(*ceiling)});
  committer_.submit(
      std::move(mutations), [this, n, handle, ceiling, &module,
                             done = std::move(done)](const DetailedResult<void>& r) mutable {
        {
          std::unique_lock lock(mutex_);
          ddl_in_flight_.erase(n);
          if (r) {
            if (ceiling) tombstones_[n] = *ceiling;
            defined_.erase(n);
          } else {
            // The drop did not land: the sequence is still on disk. Serve it again.
            sequences_[n] = module.revive(handle, kind_env());
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

std::optional<Error> TicketService::unstored_refused(const std::string& name, SequenceKind kind,
                                                     bool force) const {
  std::shared_lock lock(mutex_);
  if (!restore_floor_ || force || floor_waived(name)) return std::nullopt;
  return Error{TicketErrc::kInvalidArgument,
               std::string(kind_name(kind)) + " sequence '" + name +
                   "' is not in the backup this store was restored from: if it was created "
                   "after that backup, numbers it committed are not here and would be issued "
                   "again. If it never existed after that backup, start ticketd with "
                   "--force-not-in-backup " +
                   name + " (and create it again)"};
}

}  // namespace ticketd
