#include "server/core/ticket_service.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <mutex>
#include <utility>

#include "server/base/log.h"
#include "server/core/ticket_errc.h"

namespace ticketd {

TicketService::TicketService(CounterStore& store, GroupCommitter& committer)
    : store_(store), committer_(committer) {}

Error TicketService::unknown(std::string_view name) {
  return Error{TicketErrc::kUnknownSequence, "sequence '" + std::string(name) + "' does not exist"};
}

DetailedResult<void> TicketService::load() {
  auto records = store_.scan(kSequencePrefix);
  if (!records) return records.error();
  auto tombs = store_.scan(kTombstonePrefix);
  if (!tombs) return tombs.error();
  std::unique_lock lock(mutex_);
  for (auto& [key, value] : *records) {
    auto name = key.substr(kSequencePrefix.size());
    auto record = decode_record(name, value);
    if (!record) {
      return Error{StorageErrc::kCorruption, "cannot decode stored sequence '" + name + "'"};
    }
    sequences_[name] = std::make_shared<TicketSequence>(std::move(*record), committer_);
  }
  for (auto& [key, value] : *tombs) {
    auto name = key.substr(kTombstonePrefix.size());
    auto ceiling = decode_tombstone(value);
    if (!ceiling) {
      return Error{StorageErrc::kCorruption, "cannot decode tombstone of '" + name + "'"};
    }
    tombstones_[name] = *ceiling;
  }
  return {};
}

DetailedResult<void> TicketService::ensure_configured(const SequenceSpec& spec) {
  if (auto problem = validate(spec); !problem.empty()) {
    return Error{TicketErrc::kInvalidArgument, "sequence '" + spec.name + "': " + problem};
  }
  auto seq = find(spec.name);
  if (!seq) {
    std::promise<DetailedResult<void>> p;
    create(spec, CreateOptions{}, [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
  const auto current = seq->info();
  if (current.spec.kind != spec.kind) {
    return Error{TicketErrc::kWrongKind, "sequence '" + spec.name + "' is stored as kind '" +
                                             std::string(kind_name(current.spec.kind)) +
                                             "', the config says '" +
                                             std::string(kind_name(spec.kind)) + "'"};
  }
  SequenceSpec wanted = spec;
  if (spec.start < current.spec.start) {
    log::info("sequence '" + spec.name + "': configured start " + std::to_string(spec.start) +
              " is below the stored start " + std::to_string(current.spec.start) +
              "; keeping the stored state");
    wanted.start = current.spec.start;
  }
  if (!(wanted == current.spec)) {
    log::info("sequence '" + spec.name + "': applying changed settings from the config");
    auto r = [&] {
      std::promise<DetailedResult<Block>> p;
      seq->update_spec(wanted, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
      return p.get_future().get();
    }();
    if (!r) return r.error();
  }
  if (spec.start > current.spec.start) {
    std::promise<DetailedResult<Block>> p;
    seq->advance_to(spec.start, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
    auto r = p.get_future().get();
    if (!r) return r.error();
  }
  return {};
}

void TicketService::create(const SequenceSpec& spec, CreateOptions options, DoneCallback done) {
  if (auto problem = validate(spec); !problem.empty()) {
    done(Error{TicketErrc::kInvalidArgument, "sequence '" + spec.name + "': " + problem});
    return;
  }
  std::uint64_t ceiling = spec.start - 1;
  {
    std::unique_lock lock(mutex_);
    if (snowflakes_.contains(spec.name) || uuidv7s_.contains(spec.name) ||
        gapless_.contains(spec.name)) {
      lock.unlock();
      done(Error{TicketErrc::kAlreadyExists,
                 "sequence '" + spec.name + "' already exists (configured, of another kind)"});
      return;
    }
    if (sequences_.contains(spec.name)) {
      lock.unlock();
      if (options.if_not_exists) {
        done({});
      } else {
        done(Error{TicketErrc::kAlreadyExists, "sequence '" + spec.name + "' already exists"});
      }
      return;
    }
    if (ddl_in_flight_.contains(spec.name)) {
      lock.unlock();
      done(Error{TicketErrc::kRetryLater,
                 "another create or drop of '" + spec.name + "' is in progress"});
      return;
    }
    ddl_in_flight_[spec.name] = true;
    if (auto t = tombstones_.find(spec.name); t != tombstones_.end()) {
      if (options.force) {
        log::warn("sequence '" + spec.name + "': forced re-create ignores the tombstone ceiling " +
                  std::to_string(t->second) + "; values at or below it may be issued again");
      } else if (t->second > ceiling) {
        log::info("sequence '" + spec.name + "': re-created above its tombstone ceiling " +
                  std::to_string(t->second));
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
                              std::make_shared<TicketSequence>(record, committer_);
                        }
                      }
                      if (r) {
                        log::info("sequence '" + record.spec.name + "' created (" +
                                  std::string(kind_name(record.spec.kind)) + ", resumes above " +
                                  std::to_string(record.ceiling) + ")");
                      }
                      done(r);
                    });
}

void TicketService::drop(std::string_view name, DoneCallback done) {
  std::shared_ptr<TicketSequence> seq;
  {
    std::unique_lock lock(mutex_);
    auto it = sequences_.find(std::string(name));
    if (it == sequences_.end()) {
      const bool configured = gapless_.contains(name) || snowflakes_.contains(std::string(name));
      lock.unlock();
      if (configured) {
        done(Error{TicketErrc::kWrongKind, "sequence '" + std::string(name) +
                                               "' is configured (gapless or Snowflake): remove "
                                               "it from the config file instead"});
        return;
      }
      done(unknown(name));
      return;
    }
    seq = it->second;
    sequences_.erase(it);
    ddl_in_flight_[std::string(name)] = true;
  }
  const SequenceInfo before = seq->info();
  const std::uint64_t ceiling = seq->mark_dropped();
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{sequence_key(name), std::nullopt});
  mutations.push_back(Mutation{tombstone_key(name), encode_tombstone(ceiling)});
  committer_.submit(std::move(mutations), [this, before, ceiling, done = std::move(done)](
                                              const DetailedResult<void>& r) mutable {
    const auto& n = before.spec.name;
    {
      std::unique_lock lock(mutex_);
      ddl_in_flight_.erase(n);
      if (r) {
        tombstones_[n] = ceiling;
      } else {
        // The drop did not land: the sequence is still on disk. Bring it back, resuming above
        // the last ceiling known durable.
        sequences_[n] = std::make_shared<TicketSequence>(
            SequenceRecord{before.spec, before.durable_ceiling}, committer_);
      }
    }
    if (r) log::info("sequence '" + n + "' dropped; tombstone ceiling " + std::to_string(ceiling));
    done(r);
  });
}

void TicketService::next(std::string_view name, std::uint64_t count, BlockCallback done) {
  auto seq = find(name);
  if (!seq) {
    if (auto sf = find_snowflake(name)) {
      next_snowflake(std::move(sf), count, std::move(done), 0);
      return;
    }
    if (auto g = find_gapless(name)) {
      if (count != 1) {
        done(Error{TicketErrc::kWrongKind, "sequence '" + g->spec().name +
                                               "' is a gapless sequence: it issues one number per "
                                               "call, blocks are refused"});
        return;
      }
      const auto step = g->spec().increment;
      g->take("autocommit", [done = std::move(done), step](DetailedResult<Reservation> r) {
        if (!r) return done(r.error());
        done(Block{r->number, step, 1});
      });
      return;
    }
    if (find_uuidv7(name) != nullptr) {
      done(Error{TicketErrc::kWrongKind,
                 "sequence '" + std::string(name) +
                     "' is a uuidv7 sequence: its IDs are UUIDs, not integers; use SELECT "
                     "UUID_V7() over MySQL, or POST /v1/sequences/" +
                     std::string(name) + "/next over HTTP"});
      return;
    }
    done(unknown(name));
    return;
  }
  seq->take(count, std::move(done));
}

void TicketService::add_snowflake(std::shared_ptr<SnowflakeGenerator> generator,
                                  RetryScheduler& retries, const Clock& clock) {
  std::unique_lock lock(mutex_);
  retries_ = &retries;
  clock_ = &clock;
  snowflakes_[generator->name()] = std::move(generator);
}

void TicketService::add_gapless(std::shared_ptr<GaplessSequence> sequence) {
  std::unique_lock lock(mutex_);
  const std::string name = sequence->spec().name;
  gapless_[name] = std::move(sequence);
}

std::shared_ptr<GaplessSequence> TicketService::find_gapless(std::string_view name) const {
  std::shared_lock lock(mutex_);
  if (gapless_.empty()) return nullptr;
  auto it = gapless_.find(name);
  return it == gapless_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<GaplessSequence>> TicketService::gapless() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<GaplessSequence>> out;
  for (const auto& [_, g] : gapless_) out.push_back(g);
  return out;
}

std::shared_ptr<SnowflakeGenerator> TicketService::find_snowflake(std::string_view name) const {
  std::shared_lock lock(mutex_);
  if (snowflakes_.empty()) return nullptr;
  auto it = snowflakes_.find(std::string(name));
  return it == snowflakes_.end() ? nullptr : it->second;
}

void TicketService::add_uuidv7(std::string name, std::shared_ptr<UuidV7Generator> generator) {
  std::unique_lock lock(mutex_);
  uuidv7s_[std::move(name)] = std::move(generator);
}

std::shared_ptr<UuidV7Generator> TicketService::find_uuidv7(std::string_view name) const {
  std::shared_lock lock(mutex_);
  if (uuidv7s_.empty()) return nullptr;
  auto it = uuidv7s_.find(name);
  return it == uuidv7s_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<SnowflakeGenerator>> TicketService::snowflakes() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<SnowflakeGenerator>> out;
  for (const auto& [_, g] : snowflakes_) out.push_back(g);
  return out;
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
  if (r.retry_later() && attempts < kMaxAttempts && retries_ != nullptr) {
    const auto now_ms = clock_->now_unix_ms();
    const auto delay =
        std::chrono::milliseconds(std::clamp<std::int64_t>(r.retry_at_unix_ms - now_ms, 0, 1000));
    retries_->after(delay, [this, generator = std::move(generator), done = std::move(done),
                            attempts]() mutable {
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

void TicketService::advance_to(std::string_view name, std::uint64_t value, BlockCallback done) {
  auto seq = find(name);
  if (!seq) {
    done(unknown(name));
    return;
  }
  seq->advance_to(value, std::move(done));
}

std::shared_ptr<TicketSequence> TicketService::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = sequences_.find(name);
  return it == sequences_.end() ? nullptr : it->second;
}

std::vector<SequenceInfo> TicketService::list() const {
  std::vector<std::shared_ptr<TicketSequence>> all;
  {
    std::shared_lock lock(mutex_);
    for (const auto& [_, s] : sequences_) all.push_back(s);
  }
  std::vector<SequenceInfo> out;
  out.reserve(all.size());
  for (const auto& s : all) out.push_back(s->info());
  std::sort(out.begin(), out.end(),
            [](const SequenceInfo& a, const SequenceInfo& b) { return a.spec.name < b.spec.name; });
  return out;
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
