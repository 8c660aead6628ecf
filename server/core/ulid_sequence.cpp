#include "server/core/ulid_sequence.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "server/base/log.h"
#include "server/base/utc_time.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

// The mark that covers IDs up to `need_ms` with a margin to spare. kLogical may run ahead of
// the clock, so its mark follows the newest ID; the others only pass the clock while waiting
// for it, so their mark follows the clock (a crash loop during a restart wait then cannot push
// the mark further and further ahead).
std::int64_t mark_target(ClockPolicy policy, std::int64_t margin_ms, std::int64_t need_ms,
                         std::int64_t now) {
  if (policy == ClockPolicy::kLogical) return std::max(now, need_ms) + margin_ms;
  return std::max(now + margin_ms, need_ms + 1);
}

UlidNext refused(ErrorCode code, std::string message) {
  return UlidNext{Ulid{}, Error{code, std::move(message)}, 0};
}

}  // namespace

std::string ulid_mark_key(std::string_view name) {
  std::string key = "ulid/";
  key += name;
  key += "/mark";
  return key;
}

Ulid ulid_floor_of_mark(std::int64_t mark_unix_ms) {
  Ulid floor{};
  floor.fill(0xFF);
  const auto ms = static_cast<std::uint64_t>(
      std::clamp<std::int64_t>(mark_unix_ms, 0, (std::int64_t{1} << 48) - 1));
  for (std::size_t i = 0; i < 6; ++i) floor[i] = static_cast<std::uint8_t>(ms >> (8 * (5 - i)));
  return floor;
}

UlidSequence::UlidSequence(Private, UlidSequenceOptions options, UlidOptions generator_options,
                           GroupCommitter& committer, const Clock& clock)
    : options_(std::move(options)),
      key_(ulid_mark_key(options_.name)),
      committer_(committer),
      clock_(clock),
      generator_(clock, std::move(generator_options)) {}

DetailedResult<std::shared_ptr<UlidSequence>> UlidSequence::open(UlidSequenceOptions options,
                                                                 CounterStore& store,
                                                                 GroupCommitter& committer,
                                                                 const Clock& clock) {
  if (options.mark_margin_ms < 2 || options.failure_backoff_ms < 0) {
    return Error{TicketErrc::kInvalidArgument,
                 "ulid '" + options.name + "': mark_margin_ms must be >= 2 and the backoff >= 0"};
  }
  auto stored = store.get(ulid_mark_key(options.name));
  if (!stored) return stored.error();
  UlidOptions g;
  g.name = options.name;
  g.policy = options.policy;
  g.max_backward_ms = options.max_backward_ms;
  g.random = options.random;
  const std::int64_t now = clock.now_unix_ms();
  std::int64_t need = now;
  if (stored->has_value()) {
    const auto previous = decode_hwm(**stored);
    if (!previous) {
      return Error{StorageErrc::kCorruption, "mark of ulid sequence '" + options.name +
                                                 "' does not decode: '" + **stored + "'"};
    }
    // The previous run may have issued IDs in every millisecond up to its mark.
    g.last_issued = ulid_floor_of_mark(previous->hwm_unix_ms);
    g.restored_reading_ms = previous->written_at_unix_ms;
    need = std::max(need, previous->hwm_unix_ms);
  }
  const std::int64_t mark = mark_target(options.policy, options.mark_margin_ms, need, now);
  g.ceiling_ms = mark;
  std::vector<Mutation> first;
  first.push_back(Mutation{ulid_mark_key(options.name), encode_hwm(SnowflakeHwmRecord{mark, now})});
  if (auto r = commit_and_wait(committer, std::move(first)); !r) return r.error();
  auto s =
      std::make_shared<UlidSequence>(Private{}, std::move(options), std::move(g), committer, clock);
  s->durable_ms_ = s->submitted_ms_ = mark;
  s->stats_.mark_unix_ms = mark;
  s->stats_.mark_writes = 1;
  return s;
}

UlidNext UlidSequence::try_next() {
  std::optional<MarkWrite> write;
  UlidNext r;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return refused(TicketErrc::kShuttingDown, "ulid '" + options_.name + "' is closed");
    }
    r = generator_.try_next();
    const std::int64_t now = clock_.now_unix_ms();
    if (r.over_ceiling_ms != 0 && in_backoff_locked(now)) {
      return refused(TicketErrc::kStorageFailed,
                     "ulid '" + options_.name + "': no IDs past " + format_utc_ms(durable_ms_) +
                         " until a mark write succeeds (" + write_failure_->message + ")");
    }
    const std::int64_t newest = r.ok() ? ulid_unix_ms(r.id) : r.over_ceiling_ms;
    write = plan_locked(std::max(newest, now), now);
  }
  if (write) submit(*write);
  return r;
}

bool UlidSequence::refresh() {
  std::optional<MarkWrite> write;
  {
    std::lock_guard lock(mutex_);
    const std::int64_t now = clock_.now_unix_ms();
    std::int64_t need = now;
    if (options_.policy == ClockPolicy::kLogical) {
      need = std::max(need, ulid_unix_ms(generator_.last_issued()));
    }
    write = plan_locked(need, now);
  }
  if (!write) return false;
  submit(*write);
  return true;
}

std::optional<UlidSequence::MarkWrite> UlidSequence::plan_locked(std::int64_t need_ms,
                                                                 std::int64_t now) {
  // Raise the mark while half the margin is still left ahead of where IDs are issued.
  if (durable_ms_ >= need_ms + options_.mark_margin_ms / 2) return std::nullopt;
  if (write_in_flight_ || closed_ || in_backoff_locked(now)) return std::nullopt;
  const std::int64_t mark = mark_target(options_.policy, options_.mark_margin_ms, need_ms, now);
  if (mark <= submitted_ms_) return std::nullopt;
  write_in_flight_ = true;
  submitted_ms_ = mark;
  return MarkWrite{mark, now};
}

bool UlidSequence::in_backoff_locked(std::int64_t now) const {
  return write_failure_.has_value() && now < write_failed_at_ms_ + options_.failure_backoff_ms;
}

void UlidSequence::submit(const MarkWrite& write) {
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{key_, encode_hwm(SnowflakeHwmRecord{write.mark_ms, write.now})});
  committer_.submit(std::move(mutations),
                    [self = shared_from_this(), mark = write.mark_ms](
                        const DetailedResult<void>& r) { self->on_written(mark, r); });
}

void UlidSequence::on_written(std::int64_t mark_ms, const DetailedResult<void>& result) {
  std::string warning;
  {
    std::lock_guard lock(mutex_);
    write_in_flight_ = false;
    if (result) {
      durable_ms_ = std::max(durable_ms_, mark_ms);
      generator_.raise_ceiling(durable_ms_);
      write_failure_.reset();
      ++stats_.mark_writes;
      stats_.mark_unix_ms = durable_ms_;
    } else {
      // Nothing past the old mark may be issued; the next write starts after the backoff.
      warning = "ulid '" + options_.name + "': mark write failed: " + result.error().message;
      write_failure_ = Error{TicketErrc::kStorageFailed, warning};
      write_failed_at_ms_ = clock_.now_unix_ms();
      submitted_ms_ = durable_ms_;
      ++stats_.mark_write_failures;
    }
  }
  if (!warning.empty()) log::warn(warning, {{"sequence", options_.name}});
}

DetailedResult<void> UlidSequence::close() {
  std::vector<Mutation> mutations;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return {};
    closed_ = true;
    // Nothing is issued from here on, so the mark may drop to the newest millisecond actually
    // used (a restored floor counts as used: the previous run may have reached it).
    const Ulid last = generator_.last_issued();
    const std::int64_t now = clock_.now_unix_ms();
    const std::int64_t mark = last == Ulid{} ? now : ulid_unix_ms(last);
    mutations.push_back(Mutation{key_, encode_hwm(SnowflakeHwmRecord{mark, now})});
  }
  // Submitted after every earlier mark write, so it lands last even if one is in flight.
  if (auto r = commit_and_wait(committer_, std::move(mutations)); !r) {
    return Error{r.error().code, "ulid '" + options_.name +
                                     "': lowering the mark failed (the next start waits up to "
                                     "the margin): " +
                                     r.error().message};
  }
  return {};
}

UlidMarkStats UlidSequence::mark_stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace ticketd
