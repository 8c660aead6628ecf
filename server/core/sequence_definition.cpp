#include "server/core/sequence_definition.h"

#include <charconv>
#include <cstdint>

namespace ticketd {
namespace {

template <class T>
bool parse_number(std::string_view s, T& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

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
  std::string out = "v=1 kind=";
  out += kind_name(d.spec.kind);
  if (d.spec.kind != SequenceKind::kGapless) return out;
  out += " start=" + std::to_string(d.spec.start);
  out += " increment=" + std::to_string(d.spec.increment);
  out += " offset=" + std::to_string(d.spec.offset);
  out += " max_value=" + std::to_string(d.spec.max_value);
  out += " order=";
  out += order_name(d.gapless.order);
  out += " reservation_ttl_ms=" + std::to_string(d.gapless.reservation_ttl_ms);
  out += " max_reservation_ttl_ms=" + std::to_string(d.gapless.max_reservation_ttl_ms);
  out += " strict_wait_ms=" + std::to_string(d.gapless.strict_wait_ms);
  return out;
}

std::optional<SequenceDefinition> decode_definition(std::string_view name, std::string_view text) {
  SequenceDefinition d;
  d.spec.name = std::string(name);
  bool version = false;
  bool kind = false;
  while (!text.empty()) {
    const auto sp = text.find(' ');
    const auto field = text.substr(0, sp);
    text = sp == std::string_view::npos ? std::string_view{} : text.substr(sp + 1);
    if (field.empty()) continue;
    const auto eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const auto k = field.substr(0, eq);
    const auto v = field.substr(eq + 1);
    bool ok = true;
    if (k == "v") {
      ok = version = v == "1";
    } else if (k == "kind") {
      const auto parsed = parse_kind(v);
      ok = kind = parsed.has_value() && *parsed != SequenceKind::kTicket;
      if (ok) d.spec.kind = *parsed;
    } else if (k == "start") {
      ok = parse_number(v, d.spec.start);
    } else if (k == "increment") {
      ok = parse_number(v, d.spec.increment);
    } else if (k == "offset") {
      ok = parse_number(v, d.spec.offset);
    } else if (k == "max_value") {
      ok = parse_number(v, d.spec.max_value);
    } else if (k == "order") {
      ok = v == "relaxed" || v == "strict";
      d.gapless.order = v == "strict" ? GaplessOrder::kStrict : GaplessOrder::kRelaxed;
    } else if (k == "reservation_ttl_ms") {
      ok = parse_number(v, d.gapless.reservation_ttl_ms);
    } else if (k == "max_reservation_ttl_ms") {
      ok = parse_number(v, d.gapless.max_reservation_ttl_ms);
    } else if (k == "strict_wait_ms") {
      ok = parse_number(v, d.gapless.strict_wait_ms);
    }  // any other field is from a newer version: kept going
    if (!ok) return std::nullopt;
  }
  if (!version || !kind) return std::nullopt;
  return d;
}

}  // namespace ticketd
