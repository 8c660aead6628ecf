// Snowflake sequences: time | worker | sequence IDs from a SnowflakeGenerator, which keeps its
// own high-water mark; configured ones are opened at start-up once the worker ID is known.
#include <algorithm>
#include <array>
#include <memory>
#include <utility>

#include "server/core/kind_module.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

std::shared_ptr<SnowflakeGenerator> as_snowflake(const SequenceHandle& handle) {
  return std::get<std::shared_ptr<SnowflakeGenerator>>(handle);
}

// One ID, retrying "retry later" answers (a full tick, a short clock step back) on the retry
// queue.
void next_id(std::shared_ptr<SnowflakeGenerator> generator, BlockCallback done,
             const RetryTimers* retries, int attempts) {
  auto r = generator->try_next();
  if (r.ok()) return done(Block{r.id, 1, 1});
  if (r.retry_later() && retry_on_queue(retries, r.retry_at_unix_ms, attempts,
                                        [generator, done, retries, attempts]() mutable {
                                          next_id(std::move(generator), std::move(done), retries,
                                                  attempts + 1);
                                        })) {
    return;
  }
  if (r.retry_later()) {
    return done(Error{TicketErrc::kRetryLater, "Snowflake sequence '" + generator->name() +
                                                   "' cannot issue yet: " + r.error.message});
  }
  done(r.error);
}

constexpr std::array<KindMetricRow, 3> kMetricRows = {{
    {"ticketd_snowflake_events_total", KindMetricRow::kCounter,
     "Snowflake generator events per sequence: issued, sequence_exhausted, clock_backward, "
     "clock_backward_wait, clock_backward_refused, logical_id, hwm_wait, hwm_write, "
     "hwm_write_failure, restart_wait, lease_refused, lease_wait, lease_rebind"},
    {"ticketd_snowflake_ahead_seconds", KindMetricRow::kGauge,
     "How far the newest Snowflake ID's time is ahead of the clock"},
    {"ticketd_snowflake_worker_lease_valid", KindMetricRow::kGauge,
     "1 while the leased worker ID of a Snowflake sequence may be used, 0 when the lease is "
     "lost or may have expired (leased worker IDs only)"},
}};

class SnowflakeKind final : public KindModule {
 public:
  SequenceKind kind() const override { return SequenceKind::kSnowflake; }
  bool opens_after_worker_id() const override { return true; }

  DetailedResult<SequenceHandle> open(const SequenceDefinition& definition,
                                      std::optional<std::uint64_t> /*tombstone*/,
                                      const KindEnv& env) const override {
    if (!env.runtime.open_snowflake) {
      return Error{TicketErrc::kInvalidArgument,
                   "Snowflake sequences cannot be created here: the storage engine or the "
                   "worker ID source does not allow it"};
    }
    auto g = env.runtime.open_snowflake(definition.spec.name);
    if (!g) return g.error();
    return SequenceHandle{std::move(*g)};
  }

  void next(const SequenceHandle& handle, std::string_view name, std::uint64_t count,
            BlockCallback done, const KindEnv& env) const override {
    if (count != 1) return done(Error{TicketErrc::kWrongKind, no_blocks(name)});
    next_id(as_snowflake(handle), std::move(done), env.retries, 0);
  }

  std::string no_blocks(std::string_view name) const override {
    return "sequence '" + std::string(name) +
           "' is a Snowflake sequence: it issues one ID per call, blocks are refused";
  }

  void describe(const SequenceHandle& handle, SequenceDescription& out) const override {
    const auto g = as_snowflake(handle);
    out.snowflake =
        SequenceDescription::Snowflake{g->layout(), g->worker_id(), g->policy(), g->stats().issued};
    const auto& l = out.snowflake->layout;
    const auto bits = [](auto v) { return DescribedValue{static_cast<std::uint64_t>(v)}; };
    out.fields = {
        {"worker_id", out.snowflake->worker_id},
        {"epoch", format_utc_ms(l.epoch_unix_ms)},
        {"time_bits", bits(l.time_bits)},
        {"worker_bits", bits(l.worker_bits)},
        {"sequence_bits", bits(l.sequence_bits)},
        {"time_unit_ms", bits(l.time_unit_ms)},
        {"field_order",
         std::string(l.order == SnowflakeFieldOrder::kTimeSequenceWorker ? "time_sequence_worker"
                                                                         : "time_worker_sequence")},
        {"clock_policy", std::string(policy_name(out.snowflake->policy))},
        {"issued", std::to_string(out.snowflake->issued)},
    };
    out.comment_detail = " (worker " + std::to_string(out.snowflake->worker_id) + ", " +
                         std::to_string(l.time_bits) + "/" + std::to_string(l.worker_bits) + "/" +
                         std::to_string(l.sequence_bits) + " bits)";
  }

  void refresh(const SequenceHandle& handle) const override {
    (void)as_snowflake(handle)->refresh();  // false: still fresh
  }
  DetailedResult<void> close(const SequenceHandle& handle) const override {
    return as_snowflake(handle)->close();
  }

  std::span<const KindMetricRow> metric_rows() const override { return kMetricRows; }

  void read_metrics(const SequenceHandle& handle, std::int64_t now_unix_ms,
                    std::vector<KindReading>& out) const override {
    const auto g = as_snowflake(handle);
    const auto st = g->stats();
    for (auto [event, count] : {std::pair{"issued", st.issued},
                                {"sequence_exhausted", st.sequence_exhausted},
                                {"clock_backward", st.clock_backward_events},
                                {"clock_backward_wait", st.clock_backward_waits},
                                {"clock_backward_refused", st.clock_backward_refusals},
                                {"logical_id", st.logical_ids},
                                {"hwm_wait", st.hwm_waits},
                                {"hwm_write", st.hwm_writes},
                                {"hwm_write_failure", st.hwm_write_failures},
                                {"restart_wait", st.restart_waits},
                                {"lease_refused", st.lease_refusals},
                                {"lease_wait", st.lease_waits},
                                {"lease_rebind", st.lease_rebinds}}) {
      out.push_back({0, event, static_cast<double>(count)});
    }
    out.push_back({1, {}, static_cast<double>(st.logical_ahead_ms) / 1000.0});
    if (const auto* lease = g->lease()) {
      // The generator's own test: held, renewed at or before now, and not past valid_until.
      const auto l = lease->state();
      const bool valid =
          l.held && now_unix_ms >= l.renewed_at_unix_ms && now_unix_ms < l.valid_until_unix_ms;
      out.push_back({2, {}, valid ? 1.0 : 0.0});
    }
  }

  // Its high-water mark stays in the store (a new Snowflake sequence of the name starts after
  // it); the tombstone keeps a counter of that name above every ID it may have used.
  std::optional<std::uint64_t> retire(const SequenceHandle& handle) const override {
    const auto g = as_snowflake(handle);
    const auto& layout = g->layout();
    const auto stats = g->stats();
    const auto tick =
        std::clamp<std::int64_t>(layout.tick_of(std::max(stats.hwm_unix_ms, stats.last_id_unix_ms)),
                                 0, static_cast<std::int64_t>(layout.max_ticks()));
    return layout.compose(static_cast<std::uint64_t>(tick), layout.max_worker(),
                          layout.max_sequence());
  }
};

}  // namespace

const KindModule& snowflake_kind() {
  static const SnowflakeKind module;
  return module;
}

}  // namespace ticketd
