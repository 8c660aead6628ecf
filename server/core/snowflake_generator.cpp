#include "server/core/snowflake_generator.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "server/base/error_category.h"
#include "server/base/log.h"
#include "server/base/record_codec.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

const char* describe_snowflake(SnowflakeErrc e) noexcept {
  switch (e) {
    case SnowflakeErrc::kClockMovedBackwards:
      return "the clock moved backwards further than the clock policy allows";
    case SnowflakeErrc::kWorkerLeaseLost:
      return "the worker ID lease is not held";
  }
  return nullptr;
}

// Reasons for kRetryLater: short enough for the small-string buffer, so a caller polling a full
// tick does not allocate.
constexpr const char* kSequenceFull = "sequence full";
constexpr const char* kClockBehind = "clock behind";
constexpr const char* kHwmPending = "hwm pending";
constexpr const char* kRestarting = "restarting";
constexpr const char* kLeaseMark = "lease mark";

SnowflakeNext retry(std::int64_t at_unix_ms, const char* reason) {
  return SnowflakeNext{0, Error{TicketErrc::kRetryLater, reason}, at_unix_ms};
}

SnowflakeNext fail(ErrorCode code, std::string message) {
  return SnowflakeNext{0, Error{code, std::move(message)}, 0};
}

}  // namespace

const boost::system::error_category& snowflake_category() noexcept {
  static const EnumCategory<SnowflakeErrc> category("ticketd.snowflake", describe_snowflake,
                                                    "unknown snowflake error");
  return category;
}

std::string_view policy_name(ClockPolicy policy) {
  switch (policy) {
    case ClockPolicy::kFail:
      return "fail";
    case ClockPolicy::kWait:
      return "wait";
    case ClockPolicy::kLogical:
      return "logical";
  }
  return "unknown";
}

bool SnowflakeNext::retry_later() const { return error.code == TicketErrc::kRetryLater; }

std::string snowflake_hwm_key(std::string_view name) {
  std::string key = "snowflake/";
  key += name;
  key += "/hwm";
  return key;
}

std::string encode_hwm(const SnowflakeHwmRecord& r) {
  return RecordWriter(1)
      .add("hwm_unix_ms", r.hwm_unix_ms)
      .add("written_at_unix_ms", r.written_at_unix_ms)
      .finish();
}

std::optional<SnowflakeHwmRecord> decode_hwm(std::string_view text) {
  const auto rec = RecordView::parse(text);
  if (!rec || !rec->version_is(1)) return std::nullopt;
  const auto hwm = rec->get_i64("hwm_unix_ms");
  const auto written_at = rec->get_i64("written_at_unix_ms");
  if (!hwm || !written_at) return std::nullopt;
  return SnowflakeHwmRecord{*hwm, *written_at};
}

SnowflakeGenerator::SnowflakeGenerator(Private, SnowflakeOptions options, GroupCommitter& committer,
                                       const Clock& clock)
    : options_(std::move(options)),
      hwm_key_(snowflake_hwm_key(options_.name)),
      committer_(committer),
      clock_(clock),
      margin_ticks_((options_.hwm_margin_ms + options_.layout.time_unit_ms - 1) /
                    options_.layout.time_unit_ms),
      max_sequence_(options_.layout.max_sequence()),
      max_tick_(static_cast<std::int64_t>(options_.layout.max_ticks())) {}

namespace {

// Every problem of `options` (leased worker ID applied) as one kInvalidArgument, or nullopt.
std::optional<Error> invalid_options(const SnowflakeOptions& options, std::int64_t now) {
  std::vector<LayoutProblem> problems = options.layout.validate(now, options.worker_id);
  if (options.name.empty() || options.name.find('/') != std::string::npos) {
    problems.push_back({"name", "the name must be non-empty and contain no '/'"});
  }
  if (options.max_backward_ms < 0) {
    problems.push_back({"max_backward_ms", "max_backward_ms must not be negative"});
  }
  if (options.layout.time_unit_ms >= 1 && options.hwm_margin_ms < 2 * options.layout.time_unit_ms) {
    problems.push_back({"hwm_margin_ms", "hwm_margin_ms must cover at least two ticks (" +
                                             std::to_string(2 * options.layout.time_unit_ms) +
                                             " ms)"});
  }
  if (options.hwm_retry_ms < 1 || options.hwm_failure_backoff_ms < 0) {
    problems.push_back({"hwm_retry_ms", "hwm_retry_ms must be >= 1 and the backoff >= 0"});
  }
  if (problems.empty()) return std::nullopt;
  std::string message = "snowflake '" + options.name + "':";
  for (const auto& p : problems) {
    message += p.field.empty() ? " " : " " + p.field + ": ";
    message += p.message + ";";
  }
  message.pop_back();
  return Error{TicketErrc::kInvalidArgument, std::move(message)};
}

// The high-water mark a new generator resumes above (stored, or the worker ID's not-before).
DetailedResult<std::optional<SnowflakeHwmRecord>> resume_mark(CounterStore& store,
                                                              const SnowflakeOptions& options) {
  auto stored = store.get(snowflake_hwm_key(options.name));
  if (!stored) return stored.error();
  std::optional<SnowflakeHwmRecord> previous;
  if (stored->has_value()) {
    previous = decode_hwm(**stored);
    if (!previous) {
      return Error{StorageErrc::kCorruption, "high-water mark of snowflake '" + options.name +
                                                 "' does not decode: '" + **stored + "'"};
    }
  }
  if (options.not_before_unix_ms > 0 &&
      (!previous || options.not_before_unix_ms > previous->hwm_unix_ms)) {
    // A mark from another holder of this worker ID: its clock readings are unknown, so assume
    // the holder wrote it a margin ahead, as this generator would.
    previous = SnowflakeHwmRecord{options.not_before_unix_ms,
                                  options.not_before_unix_ms - options.hwm_margin_ms};
  }
  return previous;
}

}  // namespace

DetailedResult<std::shared_ptr<SnowflakeGenerator>> SnowflakeGenerator::open(
    SnowflakeOptions options, CounterStore& store, GroupCommitter& committer, const Clock& clock) {
  const std::int64_t now = clock.now_unix_ms();
  WorkerLeaseState lease;
  if (options.lease) {
    lease = options.lease->state();
    if (!lease.held) {
      return Error{SnowflakeErrc::kWorkerLeaseLost,
                   "snowflake '" + options.name + "': no worker ID lease is held"};
    }
    options.worker_id = lease.worker_id;
    options.not_before_unix_ms = std::max(options.not_before_unix_ms, lease.not_before_unix_ms);
  }
  if (auto invalid = invalid_options(options, now)) return std::move(*invalid);
  auto mark = resume_mark(store, options);
  if (!mark) return mark.error();
  const std::optional<SnowflakeHwmRecord> previous = *mark;

  auto g = std::make_shared<SnowflakeGenerator>(Private{}, std::move(options), committer, clock);
  const SnowflakeLayout& layout = g->options_.layout;
  const std::int64_t now_tick = layout.tick_of(now);
  std::optional<ClockEvent> event;
  g->worker_id_ = g->options_.worker_id;
  g->lease_generation_ = lease.generation;
  g->lease_issue_until_ms_ = lease.issue_until_unix_ms;
  g->last_reading_ms_ = now;
  if (previous) {
    // The previous run may have used every tick up to its mark: resume strictly above it.
    g->last_tick_ = layout.tick_of(previous->hwm_unix_ms);
    g->last_sequence_ = g->max_sequence_;
    g->restored_ = true;
    g->restored_reading_ms_ = previous->written_at_unix_ms;
    if (now < previous->written_at_unix_ms && now_tick <= g->last_tick_) {
      const std::int64_t behind = previous->written_at_unix_ms - now;
      const bool refused =
          g->options_.policy == ClockPolicy::kFail ||
          (g->options_.policy == ClockPolicy::kWait && behind > g->options_.max_backward_ms);
      event = g->event_locked(now, previous->written_at_unix_ms,
                              layout.unix_ms_of(g->last_tick_ + 1), refused);
      ++g->stats_.clock_backward_events;
    }
  }
  const std::int64_t hwm_tick = g->hwm_target_locked(now_tick);
  std::vector<Mutation> mutations;
  mutations.push_back(
      Mutation{g->hwm_key_, encode_hwm(SnowflakeHwmRecord{layout.unix_ms_of(hwm_tick), now})});
  if (auto r = commit_and_wait(committer, std::move(mutations)); !r) return r.error();
  g->durable_hwm_tick_ = hwm_tick;
  g->submitted_hwm_tick_ = hwm_tick;
  g->stats_.hwm_writes = 1;
  g->stats_.hwm_unix_ms = layout.unix_ms_of(hwm_tick);
  if (event) g->report(*event);
  return g;
}

SnowflakeNext SnowflakeGenerator::try_next() {
  Effects effects;
  SnowflakeNext result;
  {
    std::lock_guard lock(mutex_);
    // Read under the lock: readings are then ordered, so a lower one is a real regression.
    result = next_locked(clock_.now_unix_ms(), effects);
  }
  if (effects.write) submit(std::move(*effects.write));
  if (effects.event) report(*effects.event);
  if (!effects.rebind_note.empty()) {
    log::info(effects.rebind_note,
              {{"sequence", options_.name}, {"worker_id", effects.rebind_worker_id}});
  }
  return result;
}

SnowflakeNext SnowflakeGenerator::next_locked(std::int64_t now, Effects& effects) {
  if (closed_) {
    return fail(TicketErrc::kShuttingDown, "snowflake '" + options_.name + "' is closed");
  }
  if (auto refused = check_lease_locked(now, effects)) return std::move(*refused);
  const std::int64_t previous_reading = last_reading_ms_;
  last_reading_ms_ = now;
  const std::int64_t now_tick = options_.layout.tick_of(now);
  if (now_tick < 0) {
    return fail(SnowflakeErrc::kClockMovedBackwards,
                "snowflake '" + options_.name + "': the clock reads " + format_utc_ms(now) +
                    ", before the layout's epoch");
  }
  if (now_tick > last_tick_) return issue_locked(now_tick, 0, now, effects);
  if (restored_ || now_tick < last_tick_) return behind_locked(now, previous_reading, effects);
  // Same tick as the newest ID.
  if (last_sequence_ < max_sequence_)
    return issue_locked(last_tick_, last_sequence_ + 1, now, effects);
  ++stats_.sequence_exhausted;
  return retry(options_.layout.unix_ms_of(last_tick_ + 1), kSequenceFull);
}

std::optional<SnowflakeNext> SnowflakeGenerator::check_lease_locked(std::int64_t now,
                                                                    Effects& effects) {
  if (!options_.lease) return std::nullopt;
  const WorkerLeaseState st = options_.lease->state();
  if (!st.held || now >= st.valid_until_unix_ms || now < st.renewed_at_unix_ms) {
    ++stats_.lease_refusals;
    std::string why = !st.held ? "no worker ID lease is held"
                      : now < st.renewed_at_unix_ms
                          ? "the clock reads before the lease's last renewal (" +
                                format_utc_ms(st.renewed_at_unix_ms) + ")"
                          : "the lease of worker ID " + std::to_string(st.worker_id) +
                                " was last renewed at " + format_utc_ms(st.renewed_at_unix_ms) +
                                " and may expire";
    return fail(SnowflakeErrc::kWorkerLeaseLost,
                "snowflake '" + options_.name + "': " + why + "; no IDs until it is held again");
  }
  if (st.worker_id > options_.layout.max_worker()) {
    ++stats_.lease_refusals;
    return fail(SnowflakeErrc::kWorkerLeaseLost,
                "snowflake '" + options_.name + "': leased worker ID " +
                    std::to_string(st.worker_id) + " does not fit the layout");
  }
  if (st.generation != lease_generation_) {
    // A re-claim: the previous holder of this worker ID may have used every tick up to its
    // mark, so resume strictly after it (and after this generator's own newest ID), exactly as
    // after a restart.
    ++stats_.lease_rebinds;
    worker_id_ = st.worker_id;
    lease_generation_ = st.generation;
    const std::int64_t mark_tick = options_.layout.tick_of(st.not_before_unix_ms);
    if (st.not_before_unix_ms > 0 && mark_tick >= last_tick_) {
      last_tick_ = mark_tick;
      last_sequence_ = max_sequence_;
      restored_ = true;
      restored_reading_ms_ = now;
    } else {
      // This generator's newest tick is already past the previous holder's mark, so the
      // worker ID's space there is unused; still start on a fresh tick, so that no tick ever
      // mixes two generations.
      last_sequence_ = max_sequence_;
    }
    effects.rebind_note =
        "snowflake '" + options_.name + "': worker ID " + std::to_string(worker_id_) +
        " (generation " + std::to_string(st.generation) + "), IDs resume after " +
        format_utc_ms(options_.layout.unix_ms_of(std::max<std::int64_t>(last_tick_, 0)));
    effects.rebind_worker_id = worker_id_;
  }
  lease_issue_until_ms_ = st.issue_until_unix_ms;
  return std::nullopt;
}

SnowflakeNext SnowflakeGenerator::behind_locked(std::int64_t now, std::int64_t previous_reading,
                                                Effects& effects) {
  const SnowflakeLayout& layout = options_.layout;
  const bool full = last_sequence_ >= max_sequence_;
  // The clock is behind the newest tick (or not yet past the restored mark).
  if (options_.policy == ClockPolicy::kLogical) {
    if (now < previous_reading) {
      ++stats_.clock_backward_events;
      effects.event = event_locked(now, previous_reading, layout.unix_ms_of(last_tick_), false);
    }
    if (!full) return issue_locked(last_tick_, last_sequence_ + 1, now, effects);
    ++stats_.logical_borrows;
    return issue_locked(last_tick_ + 1, 0, now, effects);
  }
  const std::int64_t resume_at = layout.unix_ms_of(full ? last_tick_ + 1 : last_tick_);
  bool refused = false;
  if (restored_) {
    // Waiting up to the margin is the normal cost of a restart; only a clock behind the
    // previous run's own readings is a regression for the policy to judge.
    const std::int64_t behind = restored_reading_ms_ - now;
    refused =
        behind > 0 && (options_.policy == ClockPolicy::kFail || behind > options_.max_backward_ms);
  } else {
    refused = options_.policy == ClockPolicy::kFail || resume_at - now > options_.max_backward_ms;
  }
  if (now < previous_reading) {
    ++stats_.clock_backward_events;
    effects.event = event_locked(now, previous_reading, resume_at, refused);
  }
  if (refused) {
    ++stats_.clock_backward_refusals;
    const std::int64_t reference = restored_ ? restored_reading_ms_ : layout.unix_ms_of(last_tick_);
    return fail(SnowflakeErrc::kClockMovedBackwards,
                "snowflake '" + options_.name + "': the clock (" + format_utc_ms(now) + ") is " +
                    std::to_string(reference - now) + " ms behind " +
                    (restored_ ? "the previous run" : "the last ID") + "; policy " +
                    std::string(policy_name(options_.policy)) +
                    (options_.policy == ClockPolicy::kWait
                         ? " (max_backward_ms " + std::to_string(options_.max_backward_ms) + ")"
                         : std::string()) +
                    " refuses until " + format_utc_ms(resume_at));
  }
  // Have the mark ready by the time the clock gets there.
  maybe_plan_hwm_locked(now, effects);
  if (restored_) {
    ++stats_.restart_waits;
    return retry(resume_at, kRestarting);
  }
  ++stats_.clock_backward_waits;
  return retry(resume_at, kClockBehind);
}

SnowflakeNext SnowflakeGenerator::issue_locked(std::int64_t tick, std::uint64_t sequence,
                                               std::int64_t now, Effects& effects) {
  const SnowflakeLayout& layout = options_.layout;
  if (tick > max_tick_) {
    return fail(TicketErrc::kExhausted, "snowflake '" + options_.name +
                                            "': the layout's time range ended at " +
                                            format_utc_ms(layout.end_unix_ms()));
  }
  if (options_.lease && tick > layout.tick_of(lease_issue_until_ms_)) {
    // Past the mark the next holder of this worker ID would wait for: only kLogical, running
    // ahead of the clock, gets here; the lease keeper raises the mark on its next renewal.
    ++stats_.lease_waits;
    return retry(now + options_.hwm_retry_ms, kLeaseMark);
  }
  if (tick > durable_hwm_tick_) {
    if (in_backoff_locked(now)) {
      ++stats_.hwm_refusals;
      return fail(TicketErrc::kStorageFailed,
                  write_failure_->message + "; no ID past " +
                      format_utc_ms(layout.unix_ms_of(durable_hwm_tick_)) + " until it succeeds");
    }
    plan_hwm_locked(now, effects);
    ++stats_.hwm_waits;
    return retry(now + options_.hwm_retry_ms, kHwmPending);
  }
  last_tick_ = tick;
  last_sequence_ = sequence;
  restored_ = false;
  ++stats_.issued;
  if (tick > layout.tick_of(now)) ++stats_.logical_ids;
  maybe_plan_hwm_locked(now, effects);
  return SnowflakeNext{layout.compose(static_cast<std::uint64_t>(tick), worker_id_, sequence),
                       Error{}, 0};
}

ClockEvent SnowflakeGenerator::event_locked(std::int64_t now, std::int64_t previous_reading,
                                            std::int64_t resume_at, bool refused) const {
  return ClockEvent{.sequence = options_.name,
                    .policy = options_.policy,
                    .now_unix_ms = now,
                    .previous_unix_ms = previous_reading,
                    .backward_ms = previous_reading - now,
                    .resume_at_unix_ms = resume_at,
                    .refused = refused};
}

bool SnowflakeGenerator::in_backoff_locked(std::int64_t now) const {
  return write_failure_.has_value() && now < write_failed_at_ms_ + options_.hwm_failure_backoff_ms;
}

std::int64_t SnowflakeGenerator::hwm_target_locked(std::int64_t now_tick) const {
  // kLogical may run ahead of the clock, so its mark follows the newest tick; the others only
  // pass the clock while waiting for it, so their mark follows the clock (a crash loop during a
  // restart wait then cannot push the mark further and further ahead).
  if (options_.policy == ClockPolicy::kLogical) {
    return std::max(now_tick, last_tick_) + margin_ticks_;
  }
  return std::max(now_tick + margin_ticks_, last_tick_ + 1);
}

void SnowflakeGenerator::maybe_plan_hwm_locked(std::int64_t now, Effects& effects) {
  // Raise the mark while half the margin is still left ahead of where IDs are being issued.
  const std::int64_t now_tick = options_.layout.tick_of(now);
  const std::int64_t newest =
      options_.policy == ClockPolicy::kLogical ? std::max(now_tick, last_tick_) : now_tick;
  const std::int64_t need = std::max(newest + margin_ticks_ / 2, last_tick_ + 1);
  if (durable_hwm_tick_ < need) plan_hwm_locked(now, effects);
}

void SnowflakeGenerator::plan_hwm_locked(std::int64_t now, Effects& effects) {
  if (write_in_flight_ || closed_ || in_backoff_locked(now)) return;
  const std::int64_t tick = hwm_target_locked(options_.layout.tick_of(now));
  if (tick <= submitted_hwm_tick_) return;
  write_in_flight_ = true;
  submitted_hwm_tick_ = tick;
  effects.write = HwmWrite{tick, SnowflakeHwmRecord{options_.layout.unix_ms_of(tick), now}};
}

void SnowflakeGenerator::submit(HwmWrite write) {
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{hwm_key_, encode_hwm(write.record)});
  committer_.submit(std::move(mutations),
                    [self = shared_from_this(), tick = write.hwm_tick](
                        const DetailedResult<void>& r) { self->on_hwm_written(tick, r); });
}

void SnowflakeGenerator::on_hwm_written(std::int64_t hwm_tick, const DetailedResult<void>& result) {
  std::string warning;
  {
    std::lock_guard lock(mutex_);
    write_in_flight_ = false;
    if (result) {
      durable_hwm_tick_ = std::max(durable_hwm_tick_, hwm_tick);
      write_failure_.reset();
      ++stats_.hwm_writes;
      stats_.hwm_unix_ms = options_.layout.unix_ms_of(durable_hwm_tick_);
    } else {
      // Nothing past the old mark may be issued; the next write starts after the backoff.
      warning = "snowflake '" + options_.name +
                "': high-water mark write failed: " + result.error().message;
      write_failure_ = Error{TicketErrc::kStorageFailed, warning};
      write_failed_at_ms_ = clock_.now_unix_ms();
      submitted_hwm_tick_ = durable_hwm_tick_;
      ++stats_.hwm_write_failures;
    }
  }
  if (!warning.empty()) log::warn(warning, {{"sequence", options_.name}});
}

bool SnowflakeGenerator::refresh() {
  Effects effects;
  {
    std::lock_guard lock(mutex_);
    maybe_plan_hwm_locked(clock_.now_unix_ms(), effects);
  }
  if (!effects.write) return false;
  submit(std::move(*effects.write));
  return true;
}

DetailedResult<void> SnowflakeGenerator::close() {
  std::vector<Mutation> mutations;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return {};
    closed_ = true;
    const std::int64_t now = clock_.now_unix_ms();
    // Nothing is issued from here on, so the mark may drop to the newest tick actually used
    // (a restored mark counts as used: the previous run may have reached it).
    const std::int64_t tick = last_tick_ >= 0 ? last_tick_ : options_.layout.tick_of(now);
    mutations.push_back(
        Mutation{hwm_key_, encode_hwm(SnowflakeHwmRecord{options_.layout.unix_ms_of(tick), now})});
  }
  // Submitted after every earlier HWM write, so it lands last even if one is in flight.
  auto r = commit_and_wait(committer_, std::move(mutations));
  if (!r) {
    return Error{r.error().code, "snowflake '" + options_.name +
                                     "': lowering the high-water mark failed (the next start "
                                     "waits up to the margin): " +
                                     r.error().message};
  }
  return {};
}

std::uint64_t SnowflakeGenerator::worker_id() const {
  std::lock_guard lock(mutex_);
  return worker_id_;
}

SnowflakeStats SnowflakeGenerator::stats() const {
  std::lock_guard lock(mutex_);
  SnowflakeStats s = stats_;
  if (last_tick_ >= 0 && !restored_) {
    s.last_id_unix_ms = options_.layout.unix_ms_of(last_tick_);
    s.logical_ahead_ms = std::max<std::int64_t>(0, s.last_id_unix_ms - clock_.now_unix_ms());
  }
  return s;
}

void SnowflakeGenerator::report(const ClockEvent& e) const {
  std::string line = "snowflake '" + e.sequence + "': clock moved back " +
                     std::to_string(e.backward_ms) + " ms (from " +
                     format_utc_ms(e.previous_unix_ms) + " to " + format_utc_ms(e.now_unix_ms) +
                     "); policy " + std::string(policy_name(e.policy)) + ": ";
  if (e.policy == ClockPolicy::kLogical) {
    line += "continuing logically ahead of the clock";
  } else if (e.refused) {
    line += "refusing IDs until " + format_utc_ms(e.resume_at_unix_ms);
  } else {
    line += "callers wait until " + format_utc_ms(e.resume_at_unix_ms);
  }
  log::warn(line, {{"sequence", e.sequence}});
  if (options_.on_clock_event) options_.on_clock_event(e);
}

}  // namespace ticketd
