// Gapless sequences: counters whose numbers are each used exactly once (gapless_sequence.h);
// a definition ("def/") plus the sequence's own state.
#include <array>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "server/base/gapless_bounds.h"
#include "server/base/log.h"
#include "server/core/kind_module.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

using u128 = unsigned __int128;

std::shared_ptr<GaplessSequence> as_gapless(const SequenceHandle& handle) {
  return std::get<std::shared_ptr<GaplessSequence>>(handle);
}

constexpr std::array<KindMetricRow, 3> kMetricRows = {{
    {"ticketd_gapless_pending_reservations", KindMetricRow::kGauge,
     "Gapless reservations in flight (reserved, committing or releasing), per sequence"},
    {"ticketd_gapless_waiting_callers", KindMetricRow::kGauge,
     "Strict-order gapless callers queued for their turn, per sequence"},
    {"ticketd_gapless_events_total", KindMetricRow::kCounter,
     "Gapless reservation outcomes per sequence: commit, void, release, expiry, queue_timeout"},
}};

class GaplessKind final : public KindModule {
 public:
  SequenceKind kind() const override { return SequenceKind::kGapless; }

  // A gapless sequence is a counter: it starts above anything its name issued before. With
  // stored state of its own (dropped and created again) it continues that run; otherwise (the
  // tombstone of a ticket sequence, say) it starts above the tombstone.
  DetailedResult<SequenceHandle> open(const SequenceDefinition& definition,
                                      std::optional<std::uint64_t> tombstone,
                                      const KindEnv& env) const override {
    auto g = open_as_defined(definition, env);
    if (!g || !tombstone) return g;
    const auto tomb = *tombstone;
    const auto& spec = definition.spec;
    const auto high = as_gapless(*g)->audit(0).high;
    if (high && *high < tomb) {
      // The name issued values above this run after it was dropped (as another kind).
      return Error{TicketErrc::kInvalidArgument,
                   "its stored gapless run ends at " + std::to_string(*high) +
                       ", below its tombstone " + std::to_string(tomb) +
                       ": continuing it could issue a value twice"};
    }
    if (high || spec.start > tomb) return g;
    const auto above = align_up(u128{tomb} + 1, spec.increment, spec.offset);
    if (above > spec.max_value) {
      return Error{TicketErrc::kInvalidArgument,
                   "its tombstone " + std::to_string(tomb) + " leaves no value to issue"};
    }
    log::info(
        "sequence '" + spec.name + "': created above its tombstone ceiling " + std::to_string(tomb),
        {{"sequence", spec.name}});
    auto moved = definition;
    moved.spec.start = static_cast<std::uint64_t>(above);
    return open_as_defined(moved, env);
  }

  void next(const SequenceHandle& handle, std::string_view name, std::uint64_t count,
            BlockCallback done, const KindEnv& /*env*/) const override {
    if (count != 1) return done(Error{TicketErrc::kWrongKind, no_blocks(name)});
    auto g = as_gapless(handle);
    const auto step = g->spec().increment;
    g->take("autocommit", [done = std::move(done), step](DetailedResult<Reservation> r) {
      if (!r) return done(r.error());
      done(Block{r->number, step, 1});
    });
  }

  std::string no_blocks(std::string_view name) const override {
    return "sequence '" + std::string(name) +
           "' is a gapless sequence: it issues one number per call, blocks are refused";
  }

  void describe(const SequenceHandle& handle, SequenceDescription& out) const override {
    const auto g = as_gapless(handle);
    const auto audit = g->audit(0);  // lists nothing; the count comes from counts()
    out.spec = g->spec();
    out.spec.kind = SequenceKind::kGapless;
    out.gapless = SequenceDescription::Gapless{g->options(), g->next_value(),
                                               audit.committed_through, g->counts().pending};
    const auto& o = out.gapless->options;
    const auto& spec = out.spec;
    const auto text = [](std::uint64_t v) { return DescribedValue{std::to_string(v)}; };
    const auto ms = [](std::int64_t v) { return DescribedValue{static_cast<std::uint64_t>(v)}; };
    out.fields = {
        {"order", std::string(order_name(o.order))},
        {"next_value", text(out.gapless->next_value)},
        {"committed_through",
         audit.committed_through ? text(*audit.committed_through) : DescribedValue{}},
        {"start", text(spec.start)},
        {"increment", spec.increment},
        {"offset", spec.offset},
        {"max_value", text(spec.max_value)},
        {"reservation_ttl_ms", ms(o.reservation_ttl_ms)},
        {"max_reservation_ttl_ms", ms(o.max_reservation_ttl_ms)},
        {"strict_wait_ms", ms(o.strict_wait_ms)},
        {"pending", std::uint64_t{out.gapless->pending}},
    };
    out.comment_detail = " (order " + std::string(order_name(o.order)) + ")";
    out.next_value = out.gapless->next_value;
  }

  bool without_stored_state(const SequenceHandle& handle) const override {
    return as_gapless(handle)->unstored_frontier().has_value();
  }
  std::vector<Mutation> first_writes(const SequenceHandle& handle) const override {
    std::vector<Mutation> out;
    if (auto frontier = as_gapless(handle)->unstored_frontier()) out.push_back(*frontier);
    return out;
  }
  void first_writes_durable(const SequenceHandle& handle) const override {
    as_gapless(handle)->frontier_stored();
  }
  bool supersedes_tombstone() const override { return true; }

  void encode_definition(const SequenceDefinition& d, RecordWriter& w) const override {
    const auto o = d.options_of<GaplessOptions>();
    w.add("start", d.spec.start)
        .add("increment", d.spec.increment)
        .add("offset", d.spec.offset)
        .add("max_value", d.spec.max_value)
        .add("order", order_name(o.order))
        .add("reservation_ttl_ms", o.reservation_ttl_ms)
        .add("max_reservation_ttl_ms", o.max_reservation_ttl_ms)
        .add("strict_wait_ms", o.strict_wait_ms);
  }

  bool decode_definition(const RecordView& r, SequenceDefinition& d) const override {
    bool ok = true;
    const auto read = [&](std::string_view key, auto& target) {
      if (!r.has(key)) return;
      auto v = r.get_int<std::remove_reference_t<decltype(target)>>(key);
      if (v) target = *v;
      ok = ok && v.has_value();
    };
    read("start", d.spec.start);
    read("increment", d.spec.increment);
    read("offset", d.spec.offset);
    read("max_value", d.spec.max_value);
    auto& o = d.set_options<GaplessOptions>();
    read("reservation_ttl_ms", o.reservation_ttl_ms);
    read("max_reservation_ttl_ms", o.max_reservation_ttl_ms);
    read("strict_wait_ms", o.strict_wait_ms);
    if (auto order = r.get("order")) {
      ok = ok && (*order == "relaxed" || *order == "strict");
      o.order = *order == "strict" ? GaplessOrder::kStrict : GaplessOrder::kRelaxed;
    }
    return ok;
  }

  std::string validate_definition(const SequenceDefinition& d) const override {
    const auto o = d.options_of<GaplessOptions>();
    const auto in = [](std::int64_t v, std::int64_t hi) { return v >= 1 && v <= hi; };
    if (!in(o.reservation_ttl_ms, kMaxReservationTtlMs)) {
      return "reservation_ttl_ms must be 1.." + std::to_string(kMaxReservationTtlMs);
    }
    if (!in(o.max_reservation_ttl_ms, kMaxReservationTtlMs)) {
      return "max_reservation_ttl_ms must be 1.." + std::to_string(kMaxReservationTtlMs);
    }
    if (o.reservation_ttl_ms > o.max_reservation_ttl_ms) {
      return "reservation_ttl_ms is greater than max_reservation_ttl_ms";
    }
    if (!in(o.strict_wait_ms, kMaxStrictWaitMs)) {
      return "strict_wait_ms must be 1.." + std::to_string(kMaxStrictWaitMs);
    }
    return {};
  }

  std::span<const KindMetricRow> metric_rows() const override { return kMetricRows; }

  void read_metrics(const SequenceHandle& handle, std::int64_t /*now_unix_ms*/,
                    std::vector<KindReading>& out) const override {
    const auto c = as_gapless(handle)->counts();
    out.push_back({0, {}, static_cast<double>(c.pending)});
    out.push_back({1, {}, static_cast<double>(c.waiting)});
    for (auto [event, count] : {std::pair{"commit", c.commits},
                                {"void", c.voided},
                                {"release", c.releases},
                                {"expiry", c.expiries},
                                {"queue_timeout", c.queue_timeouts}}) {
      out.push_back({2, event, static_cast<double>(count)});
    }
  }

  bool keeps_deadlines() const override { return true; }
  void expire_due(const SequenceHandle& handle) const override { as_gapless(handle)->expire_due(); }
  void fail_waiters(const SequenceHandle& handle, const Error& why) const override {
    as_gapless(handle)->fail_waiters(why);
  }

  std::optional<std::uint64_t> retire(const SequenceHandle& handle) const override {
    const auto g = as_gapless(handle);
    return g->audit(0).high.value_or(g->spec().start - 1);
  }

 private:
  static DetailedResult<SequenceHandle> open_as_defined(const SequenceDefinition& d,
                                                        const KindEnv& env) {
    auto g = GaplessSequence::open(d.spec, d.options_of<GaplessOptions>(), env.store, env.committer,
                                   *env.runtime.clock);
    if (!g) return g.error();
    return SequenceHandle{std::move(*g)};
  }
};

}  // namespace

const KindModule& gapless_kind() {
  static const GaplessKind module;
  return module;
}

}  // namespace ticketd
