#include "server/core/sequence_definition.h"

#include <cstdint>
#include <type_traits>

#include "server/base/record_codec.h"

namespace ticketd {

std::string validate(const SequenceDefinition& d) {
  if (auto problem = validate(d.spec); !problem.empty()) return problem;
  if (d.spec.kind != SequenceKind::kGapless) return {};
  const auto& o = d.gapless;
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

std::string definition_key(std::string_view name) {
  return std::string(kDefinitionPrefix) + std::string(name);
}

std::string encode_definition(const SequenceDefinition& d) {
  RecordWriter w(1);
  w.add("kind", kind_name(d.spec.kind));
  if (d.spec.kind != SequenceKind::kGapless) return w.finish();
  w.add("start", d.spec.start)
      .add("increment", d.spec.increment)
      .add("offset", d.spec.offset)
      .add("max_value", d.spec.max_value)
      .add("order", order_name(d.gapless.order))
      .add("reservation_ttl_ms", d.gapless.reservation_ttl_ms)
      .add("max_reservation_ttl_ms", d.gapless.max_reservation_ttl_ms)
      .add("strict_wait_ms", d.gapless.strict_wait_ms);
  return w.finish();
}

std::optional<SequenceDefinition> decode_definition(std::string_view name, std::string_view text) {
  auto r = RecordView::parse(text);
  if (!r || !r->version_is(1)) return std::nullopt;
  const auto kind = parse_kind(r->get("kind").value_or(""));
  if (!kind || *kind == SequenceKind::kTicket) return std::nullopt;
  SequenceDefinition d;
  d.spec.name = std::string(name);
  d.spec.kind = *kind;
  // A field that is absent keeps its default; one that is present must be a number.
  bool ok = true;
  const auto read = [&](std::string_view key, auto& target) {
    if (!r->has(key)) return;
    auto v = r->get_int<std::remove_reference_t<decltype(target)>>(key);
    if (v) target = *v;
    ok = ok && v.has_value();
  };
  read("start", d.spec.start);
  read("increment", d.spec.increment);
  read("offset", d.spec.offset);
  read("max_value", d.spec.max_value);
  read("reservation_ttl_ms", d.gapless.reservation_ttl_ms);
  read("max_reservation_ttl_ms", d.gapless.max_reservation_ttl_ms);
  read("strict_wait_ms", d.gapless.strict_wait_ms);
  if (auto order = r->get("order")) {
    ok = ok && (*order == "relaxed" || *order == "strict");
    d.gapless.order = *order == "strict" ? GaplessOrder::kStrict : GaplessOrder::kRelaxed;
  }
  if (!ok) return std::nullopt;
  return d;
}

}  // namespace ticketd
