// ULID sequences (ulid_sequence.h): text IDs from the clock and the OS CSPRNG, monotonic within
// the process and, through a durable mark kept ahead of the newest ID, across restarts,
// failovers and restores (docs/ulid.md says what that does and does not promise).
#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "server/base/utc_time.h"
#include "server/core/kind_module.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

std::shared_ptr<UlidSequence> as_ulid(const SequenceHandle& handle) {
  return std::get<std::shared_ptr<UlidSequence>>(handle);
}

// The IDs still to take for one call, and what it has so far: the state of a call that waits
// on the retry queue (an exhausted millisecond, a short clock step back under kWait).
struct UlidCall {
  std::shared_ptr<UlidSequence> sequence;
  std::uint64_t count = 0;
  TextForm form = TextForm::kCanonical;
  std::vector<std::string> ids;
  TextIdsCallback done;
  const RetryTimers* retries = nullptr;
  int attempts = 0;
};

void take_ids(std::shared_ptr<UlidCall> call) {
  while (call->ids.size() < call->count) {
    auto r = call->sequence->try_next();
    if (r.ok()) {
      call->ids.push_back(call->form == TextForm::kHex ? ulid_to_hex(r.id) : ulid_to_string(r.id));
      continue;
    }
    // The count goes up before the retry is queued: the queue's thread may run it at once.
    if (r.retry_later() && retry_on_queue(call->retries, r.retry_at_unix_ms, call->attempts++,
                                          [call]() mutable { take_ids(std::move(call)); })) {
      return;
    }
    if (r.retry_later()) {
      return call->done(Error{
          TicketErrc::kRetryLater,
          "ULID sequence '" + call->sequence->name() + "' cannot issue yet: " + r.error.message});
    }
    return call->done(r.error);
  }
  call->done(std::move(call->ids));
}

constexpr std::array<KindMetricRow, 3> kMetricRows = {{
    {"ticketd_ulid_events_total", KindMetricRow::kCounter,
     "ULID sequence events per sequence: issued, overflow (a millisecond's random part used "
     "up), clock_backward, mark_wait, mark_write, mark_write_failure"},
    {"ticketd_ulid_ahead_seconds", KindMetricRow::kGauge,
     "How far the newest ULID's time is ahead of the clock"},
    {"ticketd_ulid_mark_ahead_seconds", KindMetricRow::kGauge,
     "How far the durable mark of a ULID sequence is ahead of the clock"},
}};

class UlidKind final : public KindModule {
 public:
  SequenceKind kind() const override { return SequenceKind::kUlid; }

  DetailedResult<SequenceHandle> open(const SequenceDefinition& definition,
                                      std::optional<std::uint64_t> /*tombstone*/,
                                      const KindEnv& env) const override {
    UlidSequenceOptions options;
    options.name = definition.spec.name;
    options.policy = env.runtime.clock_policy;
    options.max_backward_ms = env.runtime.max_backward_ms;
    auto s = UlidSequence::open(std::move(options), env.store, env.committer, *env.runtime.clock);
    if (!s) return s.error();
    return SequenceHandle{std::move(*s)};
  }

  // ULIDs are not integers: the front ends take them through next_text().
  void next(const SequenceHandle& /*handle*/, std::string_view name, std::uint64_t /*count*/,
            BlockCallback done, const KindEnv& /*env*/) const override {
    const std::string n(name);
    done(Error{TicketErrc::kWrongKind, "sequence '" + n +
                                           "' is a ulid sequence: its IDs are text, not "
                                           "integers; use SELECT NEXTVAL(" +
                                           n + ") over MySQL or POST /v1/sequences/" + n +
                                           "/next over HTTP"});
  }

  void next_text(const SequenceHandle& handle, std::string_view /*name*/, std::uint64_t count,
                 TextForm form, TextIdsCallback done, const KindEnv& env) const override {
    auto call = std::make_shared<UlidCall>();
    call->sequence = as_ulid(handle);
    call->count = count;
    call->form = form;
    call->ids.reserve(count);
    call->done = std::move(done);
    call->retries = env.retries;
    take_ids(std::move(call));
  }

  std::string no_blocks(std::string_view name) const override {
    return "sequence '" + std::string(name) +
           "' is a ulid sequence: its IDs are text, blocks are refused";
  }

  void describe(const SequenceHandle& handle, SequenceDescription& out) const override {
    const auto s = as_ulid(handle);
    const UlidGenerator& g = s->generator();
    const auto stats = g.stats();
    out.fields = {
        {"clock_policy", std::string(policy_name(g.policy()))},
        {"issued", std::to_string(stats.issued)},
        {"last_issued",
         stats.issued == 0 ? DescribedValue{} : DescribedValue{ulid_to_string(g.last_issued())}},
        {"mark", format_utc_ms(s->mark_stats().mark_unix_ms)},
    };
    out.comment_detail = " (clock policy " + std::string(policy_name(g.policy())) + ")";
  }

  std::span<const KindMetricRow> metric_rows() const override { return kMetricRows; }

  void read_metrics(const SequenceHandle& handle, std::int64_t now_unix_ms,
                    std::vector<KindReading>& out) const override {
    const auto s = as_ulid(handle);
    const auto ids = s->generator().stats();
    const auto mark = s->mark_stats();
    for (auto [event, count] : {std::pair{"issued", ids.issued},
                                {"overflow", ids.overflows},
                                {"clock_backward", ids.clock_backward_events},
                                {"mark_wait", ids.ceiling_waits},
                                {"mark_write", mark.mark_writes},
                                {"mark_write_failure", mark.mark_write_failures}}) {
      out.push_back({0, event, static_cast<double>(count)});
    }
    const std::int64_t newest =
        ids.issued == 0 ? now_unix_ms : ulid_unix_ms(s->generator().last_issued());
    out.push_back(
        {1, {}, static_cast<double>(std::max<std::int64_t>(0, newest - now_unix_ms)) / 1000.0});
    out.push_back({2, {}, static_cast<double>(mark.mark_unix_ms - now_unix_ms) / 1000.0});
  }

  // Its mark stays in the store: a new ULID sequence of the name resumes above it.
  std::optional<std::uint64_t> retire(const SequenceHandle& /*handle*/) const override {
    return std::nullopt;
  }

  void refresh(const SequenceHandle& handle) const override { (void)as_ulid(handle)->refresh(); }
  DetailedResult<void> close(const SequenceHandle& handle) const override {
    return as_ulid(handle)->close();
  }
};

}  // namespace

const KindModule& ulid_kind() {
  static const UlidKind module;
  return module;
}

}  // namespace ticketd
