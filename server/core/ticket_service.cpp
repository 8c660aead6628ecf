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

TicketService::TicketService(CounterStore& store, GroupCommitter& committer, const Clock& clock)
    : store_(store), committer_(committer), clock_(clock) {}

Error TicketService::unknown(std::string_view name) {
  return Error{TicketErrc::kUnknownSequence, "sequence '" + std::string(name) + "' does not exist"};
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
                                                  TimerQueue& retries, const Clock& clock) {
  use_snowflake_retries(&retries, &clock);
  const std::string name = generator->name();
  return add_configured(name, std::move(generator));
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
  // A full tick or a short clock step back: retry on the timer queue, a bounded number of times
  // (about a second of waiting), never by sleeping on the caller's thread.
  constexpr int kMaxAttempts = 1000;
  const SnowflakeRetries* retries = snowflake_retries_.load(std::memory_order_acquire);
  if (r.retry_later() && attempts < kMaxAttempts && retries != nullptr) {
    const auto now_ms = retries->clock->now_unix_ms();
    const auto delay =
        std::chrono::milliseconds(std::clamp<std::int64_t>(r.retry_at_unix_ms - now_ms, 0, 1000));
    retries->timers->after(delay, [this, generator = std::move(generator), done = std::move(done),
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

void TicketService::use_snowflake_retries(TimerQueue* timers, const Clock* clock) {
  if (timers == nullptr || clock == nullptr) return;
  std::unique_lock lock(mutex_);
  if (snowflake_retries_storage_ != nullptr) return;  // the first pair serves every Snowflake
  snowflake_retries_storage_ = std::make_unique<SnowflakeRetries>(SnowflakeRetries{timers, clock});
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
