#include "server/core/ticket_sequence.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "server/core/ticket_errc.h"

namespace ticketd {

using u128 = unsigned __int128;

u128 align_up(u128 v, std::uint64_t increment, std::uint64_t offset) {
  const std::uint64_t residue = offset % increment;
  const auto have = static_cast<std::uint64_t>(v % increment);
  const std::uint64_t add = (residue + increment - have) % increment;
  return v + add;
}

TicketSequence::TicketSequence(SequenceRecord record, GroupCommitter& committer, const Clock& clock)
    : name_(record.spec.name), committer_(committer), clock_(clock), spec_(std::move(record.spec)) {
  durable_ceiling_ = record.ceiling;
  // The record's arrival time is wall-clock time: carry what is left of it onto the monotonic
  // clock. No legitimate arrival time lies more than one window ahead (a take never spends past
  // it), so a record from a wall clock since stepped back is held to one window: a full burst
  // spent, never a stall as long as the step.
  const std::uint64_t wall_now = wall_now_us();
  const std::uint64_t ahead =
      record.rate_tat_us > wall_now ? record.rate_tat_us - wall_now : std::uint64_t{0};
  const u128 tat = u128{now_us()} + std::min(ahead, rate_window_us(spec_));
  rate_tat_us_ = static_cast<std::uint64_t>(std::min<u128>(tat, ~std::uint64_t{0}));
  highest_target_ = record.ceiling;
  fence_ = record.fence;
  restrided_ = record.restrided;
  // Resume above everything that may have been issued, never below the configured start.
  next_ = align_up(std::max<u128>(u128{record.ceiling} + 1, spec_.start), spec_.increment,
                   spec_.offset);
}

std::uint64_t TicketSequence::limit_locked() const {
  return fence_ != 0 ? std::min(fence_, spec_.max_value) : spec_.max_value;
}

bool TicketSequence::exceeds_max_locked(std::uint64_t count) const {
  const u128 last = next_ + u128{count == 0 ? 0 : count - 1} * spec_.increment;
  return last > limit_locked();
}

bool TicketSequence::fits_locked(std::uint64_t count) const {
  // An advance needs every value below next_ covered, but never more than max_value: past it
  // the sequence is exhausted, and no ceiling above max_value is ever written.
  if (count == 0) {
    return !spec_dirty_ && u128{durable_ceiling_} >= std::min<u128>(next_ - 1, limit_locked());
  }
  return next_ + u128{count - 1} * spec_.increment <= durable_ceiling_;
}

Block TicketSequence::issue_locked(std::uint64_t count) {
  Block b{static_cast<std::uint64_t>(next_), spec_.increment, count};
  next_ += u128{count} * spec_.increment;
  handed_out_ += count;
  return b;
}

Error TicketSequence::exhausted_error() const {
  if (fence_ != 0 && fence_ < spec_.max_value) {
    return Error{TicketErrc::kExhausted,
                 "sequence '" + name_ + "' is fenced at " + std::to_string(fence_) +
                     " for a restride: it issues nothing above it until it is restrided"};
  }
  return Error{TicketErrc::kExhausted, "sequence '" + name_ + "' is exhausted: max_value " +
                                           std::to_string(spec_.max_value) + " reached"};
}

Error TicketSequence::rate_error() const {
  return Error{TicketErrc::kRetryLater,
               "sequence '" + name_ + "' is issuing faster than its max_rate of " +
                   std::to_string(spec_.max_rate) +
                   " values per second (the bound a restore from a backup relies on); retry"};
}

namespace {

std::uint64_t ms_to_us(std::int64_t ms) {
  return ms <= 0 ? 0 : static_cast<std::uint64_t>(ms) * 1000;
}

}  // namespace

std::uint64_t TicketSequence::now_us() const { return ms_to_us(clock_.monotonic_ms()); }

std::uint64_t TicketSequence::wall_now_us() const { return ms_to_us(clock_.now_unix_ms()); }

std::uint64_t TicketSequence::rate_tat_wall_us_locked() const {
  const std::uint64_t now = now_us();
  if (rate_tat_us_ <= now) return 0;  // in the past: the whole allowance is back
  return static_cast<std::uint64_t>(
      std::min<u128>(u128{wall_now_us()} + (rate_tat_us_ - now), ~std::uint64_t{0}));
}

std::uint64_t TicketSequence::rate_budget_locked(std::uint64_t now) const {
  const u128 base = std::max(rate_tat_us_, now);
  const u128 horizon = u128{now} + rate_window_us(spec_);
  if (base >= horizon) return 0;
  const u128 values = (horizon - base) * spec_.max_rate / 1000000;
  return static_cast<std::uint64_t>(std::min<u128>(values, ~std::uint64_t{0}));
}

std::optional<Block> TicketSequence::try_take(std::uint64_t count) {
  std::unique_lock lock(mutex_);
  if (count == 0 || dropped_ || !waiters_.empty() || !fits_locked(count)) return std::nullopt;
  Block b = issue_locked(count);
  maybe_prefetch_locked(lock);
  return b;
}

void TicketSequence::take(std::uint64_t count, BlockCallback done) {
  take_impl(count, {}, std::move(done));
}

void TicketSequence::take_recorded(std::uint64_t count, BlockRecorder record, BlockCallback done) {
  take_impl(count, std::move(record), std::move(done));
}

void TicketSequence::take_impl(std::uint64_t count, BlockRecorder record, BlockCallback done) {
  if (count == 0) {
    done(Error{TicketErrc::kInvalidArgument, "count must be at least 1"});
    return;
  }
  std::unique_lock lock(mutex_);
  if (dropped_) {
    lock.unlock();
    done(Error{TicketErrc::kUnknownSequence, "sequence '" + name_ + "' was dropped"});
    return;
  }
  // Fast path: nobody queued and the values are already covered by a synced ceiling.
  if (waiters_.empty() && fits_locked(count)) {
    if (!record) {
      Block b = issue_locked(count);
      maybe_prefetch_locked(lock);
      lock.unlock();
      done(b);
      return;
    }
    if (write_in_flight_) {
      // A prefetch is landing: the block is under the ceiling already, so its record is the
      // only thing to write, in a commit of its own (group commit shares the sync).
      const Block b = issue_locked(count);
      std::vector<Mutation> mutations;
      mutations.push_back(record(b));
      lock.unlock();
      committer_.submit(
          std::move(mutations),
          [self = shared_from_this(), b, done = std::move(done)](const DetailedResult<void>& r) {
            if (r.has_error()) {
              done(Error{TicketErrc::kStorageFailed, "durable write for sequence '" + self->name_ +
                                                         "' failed: " + r.error().message});
              return;
            }
            done(b);
          });
      return;
    }
    // Otherwise the record rides in a write of its own that also moves the ceiling ahead.
  }
  if (exceeds_max_locked(count)) {
    lock.unlock();
    done(exhausted_error());
    return;
  }
  // At max_rate already: refused without a write (a retrying client costs no fsync).
  if (waiters_.empty() && !write_in_flight_ && count > rate_budget_locked(now_us())) {
    lock.unlock();
    done(rate_error());
    return;
  }
  enqueue_locked(Waiter{count, std::move(done), std::move(record)}, lock);
}

void TicketSequence::advance_to(std::uint64_t value, BlockCallback done) {
  std::unique_lock lock(mutex_);
  if (value > spec_.max_value && !dropped_) {
    lock.unlock();
    done(Error{TicketErrc::kInvalidArgument,
               "value " + std::to_string(value) + " is above max_value of '" + name_ + "'"});
    return;
  }
  advance_locked(value, std::move(done), lock);
}

void TicketSequence::advance_past(std::uint64_t last_used, BlockCallback done) {
  std::unique_lock lock(mutex_);
  if (last_used > spec_.max_value && !dropped_) {
    lock.unlock();
    done(Error{TicketErrc::kInvalidArgument,
               "value " + std::to_string(last_used) + " is above max_value of '" + name_ + "'"});
    return;
  }
  // 128 bits: max_value + 1 (an exhausted sequence) may be 2^64.
  advance_locked(u128{last_used} + 1, std::move(done), lock);
}

void TicketSequence::advance_locked(u128 next, BlockCallback done,
                                    std::unique_lock<std::mutex>& lock) {
  if (dropped_) {
    lock.unlock();
    done(Error{TicketErrc::kUnknownSequence, "sequence '" + name_ + "' was dropped"});
    return;
  }
  // Moving backwards would re-issue values: a smaller target is a no-op, as in MySQL. The
  // durable ceiling this needs is next - 1, at most max_value, so an exhausted sequence stays
  // exhausted after a restart.
  next_ = std::max(next_, align_up(next, spec_.increment, spec_.offset));
  if (waiters_.empty() && fits_locked(0)) {
    Block b{static_cast<std::uint64_t>(std::min<u128>(next_, ~std::uint64_t{0})), spec_.increment,
            0};
    lock.unlock();
    done(b);
    return;
  }
  enqueue_locked(Waiter{0, std::move(done)}, lock);
}

DetailedResult<std::pair<SequenceSpec, ConfigOutcome>> TicketSequence::plan_config_locked(
    const SequenceSpec& configured, ConfigForce force) const {
  if (auto e = grid_change_refused_locked()) return std::move(*e);
  ConfigOutcome outcome{.before = spec_};
  SequenceSpec wanted = spec_;
  wanted.max_value = configured.max_value;
  wanted.cache = configured.cache;
  wanted.max_rate = configured.max_rate;
  // A start below the stored one never moves the sequence back.
  wanted.start = std::max(configured.start, spec_.start);
  const bool grid_differs =
      configured.increment != spec_.increment || configured.offset != spec_.offset;
  const auto grid = [](const SequenceSpec& s) {
    return "increment " + std::to_string(s.increment) + " offset " + std::to_string(s.offset);
  };
  if (grid_differs) {
    if (fence_ != 0) {
      return Error{TicketErrc::kInvalidArgument,
                   "sequence '" + name_ + "' is fenced at " + std::to_string(fence_) +
                       " for a restride; the config's " + grid(configured) +
                       " cannot replace its " + grid(spec_) +
                       " (finish it with `ticketd restride`: docs/restride.md)"};
    }
    if (force.grid) {
      wanted.increment = configured.increment;
      wanted.offset = configured.offset;
      outcome.grid_forced = true;
    } else if (restrided_) {
      outcome.grid_kept = true;
    } else {
      return Error{
          TicketErrc::kInvalidArgument,
          "sequence '" + name_ + "': the config says " + grid(configured) + ", the store " +
              grid(spec_) +
              "; a grid change is never a config edit (servers sharing the value space would "
              "issue the same values): use `ticketd restride` (docs/restride.md), or start "
              "with --force-grid-change " +
              name_ + " if no other server shares it"};
    }
  }
  if (configured.max_rate > spec_.max_rate) {
    if (!force.rate_raise) {
      return Error{TicketErrc::kInvalidArgument,
                   "sequence '" + name_ + "': the config raises max_rate from " +
                       std::to_string(spec_.max_rate) + " to " +
                       std::to_string(configured.max_rate) +
                       "; a restore of a backup taken before the raise bounds what was issued "
                       "since by the old rate and could resume below values issued at the new "
                       "one (docs/durability.md): start with --force-rate-raise " +
                       name_ + ", then take a new backup"};
    }
    outcome.rate_raised = true;
  }
  if (auto problem = validate(wanted); !problem.empty()) {
    return Error{TicketErrc::kInvalidArgument, "sequence '" + name_ + "': " + problem};
  }
  outcome.after = wanted;
  outcome.changed = !(wanted == spec_);
  return std::pair{wanted, outcome};
}

std::optional<Error> TicketSequence::check_config(const SequenceSpec& configured) const {
  std::lock_guard lock(mutex_);
  auto plan = plan_config_locked(configured, ConfigForce{});
  if (!plan) return plan.error();
  return std::nullopt;
}

void TicketSequence::apply_config(const SequenceSpec& configured, ConfigForce force,
                                  ConfigCallback done) {
  std::unique_lock lock(mutex_);
  auto plan = plan_config_locked(configured, force);
  if (!plan) {
    lock.unlock();
    done(plan.error());
    return;
  }
  const SequenceSpec wanted = plan->first;
  const ConfigOutcome outcome = plan->second;
  if (!outcome.changed) {
    lock.unlock();
    done(outcome);
    return;
  }
  grid_undo_ = GridUndo{spec_, next_, fence_, restrided_, spec_dirty_};
  spec_ = wanted;
  if (outcome.grid_forced) {
    // Values up to every ceiling written or in flight may be out on the old grid.
    next_ = align_up(std::max<u128>(next_, u128{std::max(durable_ceiling_, highest_target_)} + 1),
                     spec_.increment, spec_.offset);
    restrided_ = false;
  } else {
    next_ = std::max(next_, align_up(spec_.start, spec_.increment, spec_.offset));
  }
  change_grid_locked(
      [outcome, done = std::move(done)](DetailedResult<Block> b) {
        if (!b) return done(b.error());
        done(outcome);
      },
      lock);
}

std::optional<Error> TicketSequence::grid_change_refused_locked() const {
  if (dropped_) return Error{TicketErrc::kUnknownSequence, "sequence '" + name_ + "' was dropped"};
  if (grid_undo_) {
    return Error{TicketErrc::kRetryLater,
                 "a fence, restride or config change of '" + name_ + "' is in progress"};
  }
  return std::nullopt;
}

void TicketSequence::set_fence(std::uint64_t fence, BlockCallback done) {
  std::unique_lock lock(mutex_);
  const auto refuse = [&](Error e) {
    lock.unlock();
    done(std::move(e));
  };
  if (auto e = grid_change_refused_locked()) return refuse(std::move(*e));
  if (fence != 0 && fence < highest_target_) {
    return refuse(Error{TicketErrc::kInvalidArgument,
                        "fence " + std::to_string(fence) + " is below the durable ceiling " +
                            std::to_string(highest_target_) + " of '" + name_ +
                            "': values up to the ceiling may have been issued"});
  }
  grid_undo_ = GridUndo{spec_, next_, fence_, restrided_, spec_dirty_};
  fence_ = fence;
  change_grid_locked(std::move(done), lock);
}

void TicketSequence::restride(const Restride& r, BlockCallback done) {
  std::unique_lock lock(mutex_);
  const auto refuse = [&](Error e) {
    lock.unlock();
    done(std::move(e));
  };
  if (auto e = grid_change_refused_locked()) return refuse(std::move(*e));
  SequenceSpec wanted = spec_;
  wanted.increment = r.increment;
  wanted.offset = r.offset;
  if (auto problem = validate(wanted); !problem.empty()) {
    return refuse(Error{TicketErrc::kInvalidArgument, "restride of '" + name_ + "': " + problem});
  }
  // Values up to the highest ceiling written or in flight may be out on the old grid: a floor
  // below it could hand one of them out again on the new grid.
  if (r.floor < highest_target_) {
    return refuse(Error{TicketErrc::kInvalidArgument,
                        "restride floor " + std::to_string(r.floor) +
                            " is below the durable ceiling " + std::to_string(highest_target_) +
                            " of '" + name_ + "': values up to the ceiling may have been issued"});
  }
  const u128 first = align_up(u128{r.floor} + 1, r.increment, r.offset);
  if (first > spec_.max_value) {
    return refuse(Error{TicketErrc::kInvalidArgument,
                        "restride of '" + name_ + "': no value on the grid " +
                            std::to_string(r.increment) + "/" + std::to_string(r.offset) +
                            " above " + std::to_string(r.floor) + " is within max_value " +
                            std::to_string(spec_.max_value)});
  }
  grid_undo_ = GridUndo{spec_, next_, fence_, restrided_, spec_dirty_};
  spec_.increment = r.increment;
  spec_.offset = r.offset;
  spec_.start = static_cast<std::uint64_t>(first);
  next_ = first;
  fence_ = 0;
  restrided_ = true;
  const Block answer{static_cast<std::uint64_t>(first), r.increment, 0};
  change_grid_locked(
      [answer, done = std::move(done)](DetailedResult<Block> b) {
        if (!b) return done(std::move(b));
        done(answer);
      },
      lock);
}

void TicketSequence::change_grid_locked(BlockCallback done, std::unique_lock<std::mutex>& lock) {
  // The change rides in the next write of the sequence record. Its waiter keeps every take
  // behind it (the fast path needs an empty queue), so nothing is issued until it is durable.
  spec_dirty_ = true;
  enqueue_locked(Waiter{.count = 0, .done = std::move(done), .carries_change = true}, lock);
}

void TicketSequence::enqueue_locked(Waiter w, std::unique_lock<std::mutex>& lock) {
  waiters_.push_back(std::move(w));
  if (!write_in_flight_) start_write_locked(lock);
}

void TicketSequence::maybe_prefetch_locked(std::unique_lock<std::mutex>& lock) {
  // Raise the ceiling while half the cache is still left, so a steady caller never waits for a
  // sync. The write extends the ceiling by exactly `cache` values: still one durable write per
  // `cache` values issued.
  if (write_in_flight_ || spec_.cache < 2 || highest_target_ >= limit_locked()) return;
  // Less than half the cache left, i.e. 2 * (ceiling - next + step) < cache * step; written
  // with multiplications because a 128-bit division costs as much as the rest of the hot path.
  const u128 span = next_ > durable_ceiling_ ? 0 : u128{durable_ceiling_} - next_ + spec_.increment;
  if (span * 2 >= u128{spec_.cache} * spec_.increment) return;
  if (rate_budget_locked(now_us()) == 0) return;  // at max_rate: the next take waits for it
  start_write_locked(lock);
}

TicketSequence::WriteTake TicketSequence::take_for_write_locked(std::uint64_t budget,
                                                                std::vector<Mutation>& mutations) {
  WriteTake take{.needed = next_ - 1};
  // Only what a take needs above the ceiling already written (or moved by an advance) counts
  // against max_rate.
  u128 covered = highest_target_;
  for (auto& w : waiters_) {
    w.assigned = true;
    if (w.count == 0) {
      w.block = Block{static_cast<std::uint64_t>(std::min<u128>(next_, ~std::uint64_t{0})),
                      spec_.increment, 0};
      take.needed = std::max(take.needed, next_ - 1);
      covered = std::max(covered, next_ - 1);
      continue;
    }
    if (exceeds_max_locked(w.count)) {
      w.exhausted = true;
      continue;
    }
    const u128 last = next_ + u128{w.count - 1} * spec_.increment;
    const u128 grows =
        last > covered ? (last - covered + spec_.increment - 1) / spec_.increment : 0;
    if (grows > budget - take.spent) {
      w.rate_limited = true;
      continue;
    }
    take.spent += static_cast<std::uint64_t>(grows);
    covered = std::max(covered, last);
    w.block = issue_locked(w.count);
    take.took_values = true;
    take.needed = std::max<u128>(take.needed, w.block.last());
    if (w.record) mutations.push_back(w.record(w.block));
  }
  return take;
}

u128 TicketSequence::write_target_locked(WriteTake& take, std::uint64_t budget) const {
  u128 target = take.needed;
  if (take.took_values) {
    const std::uint64_t ahead = std::min<std::uint64_t>(spec_.cache - 1, budget - take.spent);
    take.spent += ahead;
    target += u128{ahead} * spec_.increment;
  }
  if (waiters_.empty()) {
    const std::uint64_t ahead = std::min<std::uint64_t>(spec_.cache, budget);
    take.spent += ahead;
    target = u128{highest_target_} + u128{ahead} * spec_.increment;
  }
  target = std::min<u128>(target, limit_locked());
  return std::max<u128>(target, highest_target_);
}

void TicketSequence::charge_rate_locked(std::uint64_t spent, u128 target, std::uint64_t now) {
  // The allowance is charged what the ceiling actually grows: a take served below a ceiling
  // already written (a block lease while the cache still holds it) costs nothing, however far
  // ahead the write would have reached (at most `spent`, which the budget bounded).
  const u128 grown = (target - highest_target_ + spec_.increment - 1) / spec_.increment;
  spent = static_cast<std::uint64_t>(std::min<u128>(spent, grown));
  rollback_tat_us_ = rate_tat_us_;
  if (spent != 0) {
    const u128 cost = (u128{spent} * 1000000 + spec_.max_rate - 1) / spec_.max_rate;
    rate_tat_us_ = static_cast<std::uint64_t>(
        std::min<u128>(u128{std::max(rate_tat_us_, now)} + cost, ~std::uint64_t{0}));
  }
}

void TicketSequence::start_write_locked(std::unique_lock<std::mutex>& lock) {
  // Every waiter queued now is answered by this write, so its values are taken now, in queue
  // order: a waiter's record (a lease) can then go into the same atomic write as the ceiling
  // that covers it. The write covers every waiter, plus `cache` values beyond the last of them
  // that takes any. With no waiter it is a prefetch: `cache` values above the current ceiling.
  std::vector<Mutation> mutations;
  mutations.emplace_back();  // the sequence record, filled in below
  const u128 before = next_;
  // max_rate: the values this write's takes and prefetch add count against the allowance.
  const std::uint64_t now = now_us();
  const std::uint64_t budget = rate_budget_locked(now);
  WriteTake take = take_for_write_locked(budget, mutations);
  const u128 target = write_target_locked(take, budget);
  charge_rate_locked(take.spent, target, now);
  const auto ceiling = static_cast<std::uint64_t>(target);
  highest_target_ = ceiling;
  write_in_flight_ = true;
  if (grid_undo_ && spec_dirty_) grid_change_in_write_ = true;
  spec_dirty_ = false;
  rollback_next_ = take.took_values ? std::optional<u128>(before) : std::nullopt;
  mutations.front() = Mutation{
      sequence_key(name_),
      encode_record(SequenceRecord{spec_, ceiling, fence_, restrided_, rate_tat_wall_us_locked()})};
  lock.unlock();
  committer_.submit(std::move(mutations),
                    [self = shared_from_this(), ceiling](const DetailedResult<void>& r) {
                      self->on_written(ceiling, r);
                    });
  lock.lock();
}

void TicketSequence::on_written(std::uint64_t target, const DetailedResult<void>& result) {
  std::vector<Completion> completions;
  {
    std::unique_lock lock(mutex_);
    write_in_flight_ = false;
    const auto rollback = rollback_next_;
    rollback_next_.reset();
    if (result.has_error()) {
      // Nothing above the old durable ceiling may leak: every waiter fails.
      Error e{TicketErrc::kStorageFailed,
              "durable write for sequence '" + name_ + "' failed: " + result.error().message};
      for (auto& w : waiters_) completions.emplace_back(std::move(w.done), e);
      waiters_.clear();
      highest_target_ = durable_ceiling_;
      rate_tat_us_ = rollback_tat_us_;  // nothing of this write was handed out
      // The values taken for this write were never handed out (nothing is while assigned
      // waiters are queued): issuance continues with them.
      if (rollback) {
        next_ = align_up(std::max<u128>(*rollback, u128{durable_ceiling_} + 1), spec_.increment,
                         spec_.offset);
      }
      // A fence or restride that is not durable never takes effect: back to the old grid and
      // its cached values (nothing was handed out since the change was asked for).
      if (grid_undo_) {
        spec_ = grid_undo_->spec;
        next_ = grid_undo_->next;
        fence_ = grid_undo_->fence;
        restrided_ = grid_undo_->restrided;
        spec_dirty_ = grid_undo_->spec_dirty;
        grid_undo_.reset();
        grid_change_in_write_ = false;
      }
    } else {
      durable_ceiling_ = std::max(durable_ceiling_, target);
      if (grid_change_in_write_) {
        grid_undo_.reset();
        grid_change_in_write_ = false;
      }
      while (!waiters_.empty()) {
        auto& w = waiters_.front();
        if (dropped_) {
          completions.emplace_back(
              std::move(w.done),
              Error{TicketErrc::kUnknownSequence, "sequence '" + name_ + "' was dropped"});
        } else if (w.assigned) {
          if (w.exhausted) {
            completions.emplace_back(std::move(w.done), exhausted_error());
          } else if (w.rate_limited) {
            completions.emplace_back(std::move(w.done), rate_error());
          } else {
            completions.emplace_back(std::move(w.done), w.block);
          }
        } else if (w.count > 0 && exceeds_max_locked(w.count)) {
          completions.emplace_back(std::move(w.done), exhausted_error());
        } else if (!w.record && !w.carries_change && fits_locked(w.count)) {
          // Queued while the write was in flight and covered by it. A waiter with a record
          // or a settings change is never answered here: they go into the next write.
          if (w.count == 0) {
            completions.emplace_back(
                std::move(w.done),
                Block{static_cast<std::uint64_t>(std::min<u128>(next_, ~std::uint64_t{0})),
                      spec_.increment, 0});
          } else {
            completions.emplace_back(std::move(w.done), issue_locked(w.count));
          }
        } else {
          break;
        }
        waiters_.pop_front();
      }
      if (!waiters_.empty()) start_write_locked(lock);
    }
  }
  for (auto& [done, r] : completions) done(std::move(r));
}

std::uint64_t TicketSequence::mark_dropped() {
  std::vector<Completion> completions;
  std::uint64_t ceiling = 0;
  {
    std::lock_guard lock(mutex_);
    dropped_ = true;
    // The tombstone must cover a ceiling that may be landing right now.
    ceiling = std::max(durable_ceiling_, highest_target_);
    if (!write_in_flight_) {
      for (auto& w : waiters_) {
        completions.emplace_back(std::move(w.done), Error{TicketErrc::kUnknownSequence,
                                                          "sequence '" + name_ + "' was dropped"});
      }
      waiters_.clear();
    }
  }
  for (auto& [done, r] : completions) done(std::move(r));
  return ceiling;
}

SequenceInfo TicketSequence::info() const {
  std::lock_guard lock(mutex_);
  SequenceInfo i;
  i.spec = spec_;
  i.durable_ceiling = durable_ceiling_;
  i.highest_ceiling = std::max(durable_ceiling_, highest_target_);
  i.fence = fence_;
  i.restrided = restrided_;
  i.rate_tat_us = rate_tat_wall_us_locked();
  const std::uint64_t limit = limit_locked();
  i.exhausted = next_ > limit;
  i.next_value = i.exhausted ? 0 : static_cast<std::uint64_t>(next_);
  const u128 first = align_up(spec_.start, spec_.increment, spec_.offset);
  i.issued = next_ > first ? static_cast<std::uint64_t>((next_ - first) / spec_.increment) : 0;
  i.handed_out = handed_out_;
  i.remaining = i.exhausted ? 0 : static_cast<std::uint64_t>((limit - next_) / spec_.increment + 1);
  return i;
}

}  // namespace ticketd
