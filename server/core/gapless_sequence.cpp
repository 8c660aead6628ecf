#include "server/core/gapless_sequence.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <random>
#include <utility>

#include "server/base/log.h"
#include "server/base/parse_int.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_sequence.h"

namespace ticketd {
namespace {

Error corrupt(const std::string& name, std::string_view what) {
  return Error{StorageErrc::kCorruption, "gapless sequence '" + name + "': " + std::string(what)};
}

}  // namespace

std::string_view order_name(GaplessOrder order) {
  return order == GaplessOrder::kStrict ? "strict" : "relaxed";
}

GaplessSequence::GaplessSequence(const SequenceSpec& spec, const GaplessOptions& options,
                                 GroupCommitter& committer, const Clock& clock)
    : spec_(spec),
      options_(options),
      committer_(committer),
      clock_(clock),
      prefix_(std::string(kGaplessPrefix) + spec.name + "/"),
      first_(static_cast<std::uint64_t>(align_up(spec.start, spec.increment, spec.offset))),
      first_open_(first_),
      next_new_(first_),
      disk_first_open_(first_) {
  std::random_device rd;
  id_nonce_ = (std::uint64_t{rd()} << 32) ^ rd();
}

std::optional<Mutation> GaplessSequence::unstored_frontier() const {
  std::lock_guard lock(mutex_);
  if (f_written_) return std::nullopt;
  return Mutation{prefix_ + "f",
                  encode_frontier(GaplessFrontier{first_open_, first_, spec_.increment})};
}

void GaplessSequence::frontier_stored() {
  std::lock_guard lock(mutex_);
  f_written_ = true;
}

DetailedResult<std::shared_ptr<GaplessSequence>> GaplessSequence::open(
    const SequenceSpec& spec, const GaplessOptions& options, CounterStore& store,
    GroupCommitter& committer, const Clock& clock) {
  if (spec.max_value > kDefaultMaxValue) {
    return Error{TicketErrc::kInvalidArgument,
                 "gapless sequence '" + spec.name + "': max_value above 2^63-1"};
  }
  auto seq = std::make_shared<GaplessSequence>(spec, options, committer, clock);
  if (auto r = seq->load(store); !r) return r.error();
  return seq;
}

DetailedResult<void> GaplessSequence::load(CounterStore& store) {
  auto records = store.scan(prefix_);
  if (!records) return records.error();
  const std::uint64_t step = spec_.increment;
  bool have_frontier = false;
  for (const auto& [k, v] : *records) {
    auto parsed = parse_gapless_key(std::string_view(k).substr(kGaplessPrefix.size()));
    if (!parsed || parsed->name != spec_.name) return corrupt(spec_.name, "bad key " + k);
    if (parsed->kind == "f") {
      auto f = decode_frontier(v);
      if (!f) return corrupt(spec_.name, "bad frontier record '" + v + "'");
      if (f->first != first_ || f->step != step) {
        return Error{TicketErrc::kInvalidArgument,
                     "gapless sequence '" + spec_.name + "' was stored with first value " +
                         std::to_string(f->first) + " and increment " + std::to_string(f->step) +
                         "; changing start, increment or offset would break its unbroken run"};
      }
      first_open_ = disk_first_open_ = f->first_open;
      have_frontier = true;
      continue;
    }
    const std::uint64_t n = parsed->number;
    if (n < first_ || (n - first_) % step != 0) {
      return corrupt(spec_.name, "number " + std::to_string(n) + " is off the sequence's grid");
    }
    if (parsed->kind == "c") {
      committed_above_.insert(n);
    } else if (parsed->kind == "v") {
      voids_[n] = v;
    } else {
      auto r = decode_reservation(n, v);
      if (!r) return corrupt(spec_.name, "bad reservation record for " + std::to_string(n));
      entries_[n] = Entry{std::move(*r), State::kHeld};
    }
  }
  f_written_ = have_frontier;
  // c/ keys below the frontier are redundant (a fold whose deletes did not land yet).
  while (!committed_above_.empty() && *committed_above_.begin() < first_open_) {
    fold_deletes_.push_back(key("c", *committed_above_.begin()));
    committed_above_.erase(committed_above_.begin());
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first < first_open_ || committed_above_.contains(it->first)) {
      // Committed and reserved at once cannot be written by this engine; the commit wins
      // (it was acknowledged) and the stale reservation record is dropped.
      log::warn("gapless sequence '" + spec_.name + "': dropping stale reservation of " +
                    std::to_string(it->first) + " (already committed)",
                {{"sequence", spec_.name}, {"number", it->first}});
      fold_deletes_.push_back(key("r", it->first));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  while (committed_above_.contains(first_open_)) {
    fold_deletes_.push_back(key("c", first_open_));
    committed_above_.erase(first_open_);
    first_open_ += step;
  }
  next_new_ = first_open_;
  if (!committed_above_.empty()) next_new_ = std::max(next_new_, *committed_above_.rbegin() + step);
  if (!entries_.empty()) next_new_ = std::max(next_new_, entries_.rbegin()->first + step);
  for (std::uint64_t n = first_open_; n < next_new_; n += step) {
    if (!committed_above_.contains(n) && !entries_.contains(n)) released_.insert(n);
  }
  for (const auto& [n, e] : entries_) expiry_.emplace(e.reservation.expires_at_unix_ms, n);
  return {};
}

std::string GaplessSequence::key(std::string_view kind, std::uint64_t number) const {
  return gapless_number_key(prefix_, kind, number);
}

std::string GaplessSequence::new_id(std::uint64_t number) {
  char hex[17];
  const std::uint64_t salt = id_nonce_ + 0x9e3779b97f4a7c15ULL * ++id_counter_;
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(salt));
  return std::to_string(number) + "-" + hex;
}

std::uint64_t GaplessSequence::next_value() const {
  std::lock_guard lock(mutex_);
  return released_.empty() ? next_new_ : *released_.begin();
}

void GaplessSequence::reserve(std::string holder, std::int64_t ttl_ms, ReservationCallback done,
                              ReservationScope scope) {
  if (ttl_ms == 0) ttl_ms = options_.reservation_ttl_ms;
  if (ttl_ms < 1 || ttl_ms > options_.max_reservation_ttl_ms) {
    return done(Error{TicketErrc::kInvalidArgument,
                      "ttl must be 1.." + std::to_string(options_.max_reservation_ttl_ms) + " ms"});
  }
  start(Waiter{std::move(holder), ttl_ms, 0, false, scope == ReservationScope::kDurable,
               std::move(done)});
}

void GaplessSequence::take(std::string holder, ReservationCallback done) {
  start(Waiter{std::move(holder), options_.reservation_ttl_ms, 0, true, true, std::move(done)});
}

void GaplessSequence::start(Waiter w) {
  Deferred later;
  {
    std::lock_guard lock(mutex_);
    if (options_.order == GaplessOrder::kStrict && (!entries_.empty() || !waiters_.empty())) {
      w.deadline_unix_ms = clock_.now_unix_ms() + options_.strict_wait_ms;
      waiters_.push_back(std::move(w));
    } else {
      start_locked(std::move(w), later);
    }
  }
  for (auto& f : later) f();
}

void GaplessSequence::start_locked(Waiter w, Deferred& later) {
  std::uint64_t n = 0;
  if (!released_.empty()) {
    n = *released_.begin();
    released_.erase(released_.begin());
  } else {
    if (next_new_ > spec_.max_value) {
      later.push_back([done = std::move(w.done), name = spec_.name] {
        done(Error{TicketErrc::kExhausted, "gapless sequence '" + name + "' is exhausted"});
      });
      return;
    }
    n = next_new_;
    next_new_ += spec_.increment;
  }
  Reservation res{new_id(n), n, std::move(w.holder), clock_.now_unix_ms() + w.ttl_ms};
  if (!w.durable && !w.commit_now) {
    expiry_.emplace(res.expires_at_unix_ms, n);
    later.push_back([done = std::move(w.done), res] { done(res); });
    entries_[n] = Entry{std::move(res), State::kHeld, false};
    return;
  }
  std::vector<Mutation> mutations;
  if (w.commit_now) {
    // A stale reservation record of a reused number may still be on disk: remove it too.
    mutations.push_back(Mutation{key("r", n), std::nullopt});
    mutations.push_back(Mutation{key("c", n), std::string()});
  } else {
    mutations.push_back(Mutation{key("r", n), encode_reservation(res)});
  }
  entries_[n] = Entry{std::move(res), State::kReserving};
  submit_locked(
      std::move(mutations),
      [self = shared_from_this(), n, commit_now = w.commit_now,
       done = std::move(w.done)](const DetailedResult<void>& r) mutable {
        self->on_reserved(n, commit_now, r, std::move(done));
      },
      later);
}

void GaplessSequence::submit_locked(std::vector<Mutation> mutations, GroupCommitter::Done done,
                                    Deferred& later) {
  const std::uint64_t folded = first_open_;
  std::vector<std::string> deletes;
  if (!f_written_ || folded != disk_first_open_ || !fold_deletes_.empty()) {
    // At most kMaxFoldDeletes ride along, so one write stays small (etcd bounds a
    // transaction); "c/" keys left below the frontier are redundant until a later write.
    constexpr std::size_t kMaxFoldDeletes = 32;
    const auto n = std::min(fold_deletes_.size(), kMaxFoldDeletes);
    const auto split = fold_deletes_.end() - static_cast<std::ptrdiff_t>(n);
    deletes.assign(std::make_move_iterator(split), std::make_move_iterator(fold_deletes_.end()));
    fold_deletes_.erase(split, fold_deletes_.end());
    for (const auto& k : deletes) mutations.push_back(Mutation{k, std::nullopt});
    mutations.push_back(
        Mutation{prefix_ + "f", encode_frontier(GaplessFrontier{folded, first_, spec_.increment})});
  }
  auto shared_done = std::make_shared<GroupCommitter::Done>(std::move(done));
  auto self = shared_from_this();
  auto submitted = committer_.try_submit(
      std::move(mutations), [self, folded, deletes, shared_done](const DetailedResult<void>& r) {
        {
          std::lock_guard lock(self->mutex_);
          if (r) {
            self->disk_first_open_ = std::max(self->disk_first_open_, folded);
            self->f_written_ = true;
          } else {
            // Derived from durable facts, so still true: try again with the next write.
            self->fold_deletes_.insert(self->fold_deletes_.end(), deletes.begin(), deletes.end());
          }
        }
        (*shared_done)(r);
      });
  if (!submitted) {
    fold_deletes_.insert(fold_deletes_.end(), deletes.begin(), deletes.end());
    later.push_back([shared_done, e = submitted.error()] { (*shared_done)(e); });
  }
}

void GaplessSequence::on_reserved(std::uint64_t n, bool commit_now, const DetailedResult<void>& r,
                                  ReservationCallback done) {
  Deferred later;
  DetailedResult<Reservation> out = Reservation{};
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(n);
    if (r) {
      out = it->second.reservation;
      if (commit_now) {
        entries_.erase(it);
        mark_committed_locked(n);
        ++commits_;
        admit_waiters_locked(later);
      } else {
        it->second.state = State::kHeld;
        expiry_.emplace(it->second.reservation.expires_at_unix_ms, n);
      }
    } else if (commit_now && r.error().code == StorageErrc::kOutcomeUnknown) {
      // The number may be committed on disk: it is not free again.
      mark_in_doubt_locked(n, it->second, std::nullopt);
      out = r.error();
    } else {
      entries_.erase(it);
      released_.insert(n);
      out = Error{r.error().code == TicketErrc::kShuttingDown
                      ? r.error().code
                      : make_error_code(TicketErrc::kStorageFailed),
                  r.error().message};
      admit_waiters_locked(later);
    }
  }
  for (auto& f : later) f();
  done(std::move(out));
}

void GaplessSequence::mark_committed_locked(std::uint64_t n) {
  if (n != first_open_) {
    committed_above_.insert(n);
    return;
  }
  // n's own "c/" key was just written; it and any run above it fold into the frontier.
  fold_deletes_.push_back(key("c", n));
  first_open_ += spec_.increment;
  while (committed_above_.contains(first_open_)) {
    fold_deletes_.push_back(key("c", first_open_));
    committed_above_.erase(first_open_);
    first_open_ += spec_.increment;
  }
}

GaplessSequence::Entry* GaplessSequence::find_locked(std::string_view reservation_id,
                                                     Error& error) {
  auto dash = reservation_id.find('-');
  auto n = parse_u64(reservation_id.substr(0, dash));
  auto it = n ? entries_.find(*n) : entries_.end();
  if (dash == std::string_view::npos || it == entries_.end() ||
      it->second.reservation.id != reservation_id) {
    // A well-formed id of a number that is committed, released or reissued has ended; any
    // other id was never ours.
    const auto suffix =
        dash == std::string_view::npos ? std::string_view{} : reservation_id.substr(dash + 1);
    const bool well_formed =
        suffix.size() == 16 && std::all_of(suffix.begin(), suffix.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        });
    const bool ours =
        n && well_formed && *n >= first_ && *n < next_new_ && (*n - first_) % spec_.increment == 0;
    error = ours ? Error{TicketErrc::kReservationEnded,
                         "reservation '" + std::string(reservation_id) +
                             "' is no longer held (committed, released or expired)"}
                 : Error{TicketErrc::kReservationNotFound,
                         "no reservation '" + std::string(reservation_id) + "' in sequence '" +
                             spec_.name + "'"};
    return nullptr;
  }
  if (it->second.state != State::kHeld && it->second.state != State::kInDoubt) {
    error = Error{TicketErrc::kReservationEnded, "reservation '" + std::string(reservation_id) +
                                                     "' is already being committed or released"};
    return nullptr;
  }
  return &it->second;
}

void GaplessSequence::commit(std::string_view reservation_id, GaplessDone done) {
  finish(reservation_id, std::nullopt, std::move(done));
}

void GaplessSequence::commit_void(std::string_view reservation_id, std::string reason,
                                  GaplessDone done) {
  finish(reservation_id, std::move(reason), std::move(done));
}

void GaplessSequence::finish(std::string_view reservation_id,
                             std::optional<std::string> void_reason, GaplessDone done) {
  Deferred later;
  {
    std::lock_guard lock(mutex_);
    Error error;
    Entry* e = find_locked(reservation_id, error);
    if (e == nullptr) {
      later.push_back([done, error] { done(error); });
    } else if (e->state == State::kInDoubt) {
      // The holder retries a commit whose outcome it was not told: the same commit again,
      // whatever this call asks, since the first may have landed.
      auto reason = e->void_reason;
      submit_finish_locked(e->reservation.number, std::move(reason), std::move(done), later);
    } else if (clock_.now_unix_ms() >= e->reservation.expires_at_unix_ms) {
      const auto n = e->reservation.number;
      ++expiries_;
      release_locked(n, {}, later);
      later.push_back([done, n, id = std::string(reservation_id)] {
        done(Error{TicketErrc::kReservationEnded, "reservation '" + id + "' expired; number " +
                                                      std::to_string(n) + " was released"});
      });
    } else {
      submit_finish_locked(e->reservation.number, std::move(void_reason), std::move(done), later);
    }
  }
  for (auto& f : later) f();
}

void GaplessSequence::submit_finish_locked(std::uint64_t n, std::optional<std::string> void_reason,
                                           GaplessDone done, Deferred& later) {
  auto& e = entries_.at(n);
  e.state = State::kCommitting;
  expiry_.erase({e.reservation.expires_at_unix_ms, n});
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{key("r", n), std::nullopt});
  mutations.push_back(Mutation{key("c", n), void_reason ? "void" : std::string()});
  if (void_reason) mutations.push_back(Mutation{key("v", n), *void_reason});
  submit_locked(
      std::move(mutations),
      [self = shared_from_this(), n, void_reason, done](const DetailedResult<void>& r) mutable {
        self->on_finished(n, std::move(void_reason), r, std::move(done));
      },
      later);
}

void GaplessSequence::mark_in_doubt_locked(std::uint64_t n, Entry& e,
                                           std::optional<std::string> reason) {
  constexpr std::int64_t kInDoubtRetryMs = 1000;
  if (!e.in_doubt) {
    log::warn("gapless sequence '" + spec_.name + "': the commit of " + std::to_string(n) +
                  " has an unknown outcome; it is written again until it lands",
              {{"sequence", spec_.name}, {"number", n}});
  }
  e.in_doubt = true;
  e.void_reason = std::move(reason);
  e.state = State::kInDoubt;
  e.reservation.expires_at_unix_ms = clock_.now_unix_ms() + kInDoubtRetryMs;
  expiry_.emplace(e.reservation.expires_at_unix_ms, n);
}

void GaplessSequence::on_finished(std::uint64_t n, std::optional<std::string> void_reason,
                                  const DetailedResult<void>& r, GaplessDone done) {
  Deferred later;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(n);
    if (r) {
      entries_.erase(it);
      mark_committed_locked(n);
      ++commits_;
      if (void_reason) {
        voids_[n] = *void_reason;
        ++voided_;
      }
      admit_waiters_locked(later);
    } else if (it->second.in_doubt || r.error().code == StorageErrc::kOutcomeUnknown) {
      // This write, or an earlier one of the same commit, may have applied: never free.
      mark_in_doubt_locked(n, it->second, std::move(void_reason));
      if (done) {
        later.push_back([done, m = r.error().message] {
          done(Error{StorageErrc::kOutcomeUnknown,
                     m + "; ticketd writes the commit again until it lands (a retry of the "
                         "commit answers once it has)"});
        });
      }
      done = nullptr;
    } else {
      // Nothing changed on disk: the caller still holds the number and may retry.
      it->second.state = State::kHeld;
      expiry_.emplace(it->second.reservation.expires_at_unix_ms, n);
    }
  }
  for (auto& f : later) f();
  if (!done) return;
  if (r) return done({});
  done(Error{TicketErrc::kStorageFailed, r.error().message});
}

void GaplessSequence::release(std::string_view reservation_id, GaplessDone done) {
  Deferred later;
  {
    std::lock_guard lock(mutex_);
    Error error;
    Entry* e = find_locked(reservation_id, error);
    if (e == nullptr) {
      later.push_back([done, error] { done(error); });
    } else if (e->state == State::kInDoubt) {
      later.push_back([done, id = std::string(reservation_id)] {
        done(Error{TicketErrc::kReservationEnded,
                   "reservation '" + id +
                       "' cannot be released: its commit may have landed, and ticketd "
                       "completes it (retry the commit to learn when it has)"});
      });
    } else {
      release_locked(e->reservation.number, std::move(done), later);
    }
  }
  for (auto& f : later) f();
}

void GaplessSequence::release_locked(std::uint64_t n, GaplessDone done, Deferred& later) {
  auto& e = entries_.at(n);
  if (!e.durable) {
    // Nothing on disk to remove.
    expiry_.erase({e.reservation.expires_at_unix_ms, n});
    entries_.erase(n);
    released_.insert(n);
    ++releases_;
    admit_waiters_locked(later);
    if (done) later.push_back([done = std::move(done)] { done({}); });
    return;
  }
  e.state = State::kReleasing;
  expiry_.erase({e.reservation.expires_at_unix_ms, n});
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{key("r", n), std::nullopt});
  submit_locked(
      std::move(mutations),
      [self = shared_from_this(), n, done = std::move(done)](
          const DetailedResult<void>& r) mutable { self->on_released(n, r, std::move(done)); },
      later);
}

void GaplessSequence::on_released(std::uint64_t n, const DetailedResult<void>& r,
                                  GaplessDone done) {
  Deferred later;
  {
    std::lock_guard lock(mutex_);
    // Free again even if the delete failed: a stale record on disk is overwritten when the
    // number is reserved again, or expires by its TTL after a restart.
    entries_.erase(n);
    released_.insert(n);
    ++releases_;
    admit_waiters_locked(later);
  }
  for (auto& f : later) f();
  if (!done) return;
  if (r) return done({});
  done(Error{TicketErrc::kStorageFailed, r.error().message});
}

Error GaplessSequence::queue_timeout() const {
  return Error{TicketErrc::kQueueTimeout, "gapless sequence '" + spec_.name +
                                              "' (strict order): no turn within " +
                                              std::to_string(options_.strict_wait_ms) + " ms"};
}

void GaplessSequence::admit_waiters_locked(Deferred& later) {
  const auto now = clock_.now_unix_ms();
  while (entries_.empty() && !waiters_.empty()) {
    Waiter w = std::move(waiters_.front());
    waiters_.pop_front();
    if (now >= w.deadline_unix_ms) {
      ++queue_timeouts_;
      later.push_back([done = std::move(w.done), e = queue_timeout()] { done(e); });
      continue;
    }
    start_locked(std::move(w), later);
  }
}

std::size_t GaplessSequence::expire_due() {
  Deferred later;
  std::size_t ended = 0;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_.now_unix_ms();
    while (!expiry_.empty() && expiry_.begin()->first <= now) {
      const auto n = expiry_.begin()->second;
      if (auto& e = entries_.at(n); e.state == State::kInDoubt) {
        submit_finish_locked(n, e.void_reason, {}, later);  // erases the expiry_ entry
        continue;
      }
      ++expiries_;
      ++ended;
      const std::string& holder = entries_.at(n).reservation.holder;
      log::info("gapless sequence '" + spec_.name + "': reservation of " + std::to_string(n) +
                    " by '" + holder + "' expired; number released",
                {{"sequence", spec_.name}, {"number", n}, {"holder", holder}});
      release_locked(n, {}, later);  // erases the expiry_ entry
    }
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (now < it->deadline_unix_ms) {
        ++it;
        continue;
      }
      ++queue_timeouts_;
      ++ended;
      later.push_back([done = std::move(it->done), e = queue_timeout()] { done(e); });
      it = waiters_.erase(it);
    }
  }
  for (auto& f : later) f();
  return ended;
}

void GaplessSequence::fail_waiters(const Error& error) {
  std::deque<Waiter> waiters;
  {
    std::lock_guard lock(mutex_);
    waiters.swap(waiters_);
  }
  for (auto& w : waiters) w.done(error);
}

GaplessAudit GaplessSequence::audit(std::size_t list_limit) const {
  std::lock_guard lock(mutex_);
  GaplessAudit a;
  a.spec = spec_;
  a.order = options_.order;
  const std::uint64_t step = spec_.increment;
  if (first_open_ > first_) a.committed_through = first_open_ - step;
  if (next_new_ > first_) a.high = next_new_ - step;
  a.committed = (first_open_ - first_) / step + committed_above_.size();
  for (const auto& [n, e] : entries_) {
    if (a.pending.size() >= list_limit) break;
    static constexpr std::string_view kNames[] = {"reserving", "held", "committing", "releasing",
                                                  "in_doubt"};
    a.pending.push_back({e.reservation, kNames[static_cast<int>(e.state)]});
  }
  for (auto n : released_) {
    if (a.released.size() >= list_limit) break;
    a.released.push_back(n);
  }
  for (const auto& [n, reason] : voids_) {
    if (a.voids.size() >= list_limit) break;
    a.voids.emplace(n, reason);
  }
  for (std::uint64_t n = first_open_; n < next_new_ && a.holes.size() < list_limit; n += step) {
    if (!committed_above_.contains(n) && !entries_.contains(n) && !released_.contains(n)) {
      a.holes.push_back(n);
    }
  }
  a.waiting = waiters_.size();
  a.commits = commits_;
  a.voided = voided_;
  a.releases = releases_;
  a.expiries = expiries_;
  a.queue_timeouts = queue_timeouts_;
  return a;
}

GaplessCounts GaplessSequence::counts() const {
  std::lock_guard lock(mutex_);
  return GaplessCounts{entries_.size(), waiters_.size(), commits_,       voided_,
                       releases_,       expiries_,       queue_timeouts_};
}

}  // namespace ticketd
