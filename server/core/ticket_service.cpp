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

void TicketService::enable_runtime_kinds(RuntimeKinds kinds) {
  runtime_ = std::move(kinds);
  use_retry_timers(runtime_.retries != nullptr ? runtime_.retries : runtime_.background,
                   runtime_.clock);
}

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
    if (kind_module(d.spec.kind).opens_after_worker_id()) {
      deferred_.push_back(std::move(d));
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

DetailedResult<void> TicketService::open_deferred_definitions() {
  for (const auto& d : deferred_) {
    if (exists(d.spec.name)) continue;  // configured: the config's sequence serves
    auto handle = open_definition(d);
    if (!handle) {
      return Error{handle.error().code,
                   "stored sequence '" + d.spec.name + "': " + handle.error().message};
    }
    std::unique_lock l(mutex_);
    sequences_[d.spec.name] = std::move(*handle);
  }
  deferred_.clear();
  return {};
}

DetailedResult<SequenceHandle> TicketService::open_definition(
    const SequenceDefinition& d, std::optional<std::uint64_t> tombstone) {
  if (runtime_.clock == nullptr) {
    return Error{
        TicketErrc::kInvalidArgument,
        "sequences of kind " + std::string(kind_name(d.spec.kind)) + " cannot be created here"};
  }
  return kind_module(d.spec.kind).open(d, tombstone, kind_env());
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
  kind_module(*handle).next(*handle, name, count, std::move(done), kind_env());
}

void TicketService::next_text(std::string_view name, std::uint64_t count, TextForm form,
                              TextIdsCallback done) {
  if (auto bad = check_count(count)) return done(*bad);
  auto handle = find_any(name);
  if (!handle) return done(unknown(name));
  kind_module(*handle).next_text(*handle, name, count, form, std::move(done), kind_env());
}

DetailedResult<void> TicketService::add(const std::string& name, SequenceHandle handle,
                                        bool force) {
  const auto kind = kind_of_handle(handle);
  {
    std::shared_lock lock(mutex_);
    if (auto it = sequences_.find(name); it != sequences_.end()) {
      const auto stored = kind_of_handle(it->second);
      if (stored != kind) {
        return Error{TicketErrc::kAlreadyExists,
                     "a sequence '" + name + "' of kind " + std::string(kind_name(stored)) +
                         " is stored; the config says kind " + std::string(kind_name(kind))};
      }
    }
  }
  const auto& module = kind_module(kind);
  if (module.without_stored_state(handle)) {
    if (auto refused = unstored_refused(name, kind, force)) return *refused;
  }
  if (auto writes = module.first_writes(handle); !writes.empty()) {
    if (auto r = store_.commit(writes); !r) return r.error();
    module.first_writes_durable(handle);
  }
  std::unique_lock lock(mutex_);
  sequences_[name] = std::move(handle);
  return {};
}

DetailedResult<void> TicketService::add_snowflake(std::shared_ptr<SnowflakeGenerator> generator,
                                                  TimerQueue& retries, const Clock& clock) {
  use_retry_timers(&retries, &clock);
  const std::string name = generator->name();
  return add(name, std::move(generator));
}

DetailedResult<void> TicketService::configure(const SequenceDefinition& definition,
                                              ConfigForce force) {
  const auto& spec = definition.spec;
  if (spec.kind == SequenceKind::kTicket) return ensure_configured(spec, force);
  if (auto problem = validate(definition); !problem.empty()) {
    return Error{TicketErrc::kInvalidArgument, problem};
  }
  if (auto stored = kind_of(spec.name); stored && *stored != spec.kind) {
    return Error{TicketErrc::kAlreadyExists,
                 "a sequence of kind " + std::string(kind_name(*stored)) +
                     " is stored under this name; a " + std::string(kind_name(spec.kind)) +
                     " sequence needs a name of its own"};
  }
  auto handle = open_definition(definition);
  if (!handle) return handle.error();
  return add(spec.name, std::move(*handle));
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

std::vector<SequenceHandle> TicketService::with_deadlines() const {
  std::vector<SequenceHandle> out;
  std::shared_lock lock(mutex_);
  for (const auto& [_, h] : sequences_) {
    if (kind_module(h).keeps_deadlines()) out.push_back(h);
  }
  return out;
}

std::vector<std::pair<std::string, SequenceHandle>> TicketService::handles() const {
  std::vector<std::pair<std::string, SequenceHandle>> out;
  {
    std::shared_lock lock(mutex_);
    out.assign(sequences_.begin(), sequences_.end());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
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
  kind_module(handle).describe(handle, d);
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

void TicketService::use_retry_timers(TimerQueue* timers, const Clock* clock) {
  if (timers == nullptr || clock == nullptr) return;
  std::unique_lock lock(mutex_);
  if (retry_timers_storage_ != nullptr) return;  // the first pair serves every sequence
  retry_timers_storage_ = std::make_unique<RetryTimers>(RetryTimers{timers, clock});
  retry_timers_.store(retry_timers_storage_.get(), std::memory_order_release);
}

Error TicketService::not_a_ticket_sequence(std::string_view name) const {
  const auto kind = kind_of(name);
  if (!kind || *kind == SequenceKind::kTicket) return unknown(name);
  return Error{TicketErrc::kWrongKind, kind_module(*kind).no_blocks(name)};
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
