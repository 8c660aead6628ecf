#include "server/core/gapless_records.h"

#include <cstdio>
#include <map>

#include "server/base/parse_int.h"
#include "server/base/record_codec.h"

namespace ticketd {

std::string gapless_number_key(std::string_view prefix, std::string_view kind, std::uint64_t n) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(n));
  std::string k;
  k.reserve(prefix.size() + kind.size() + 21);
  k.append(prefix).append(kind).append("/").append(digits);
  return k;
}

std::optional<GaplessKey> parse_gapless_key(std::string_view rest) {
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  GaplessKey k;
  k.name = std::string(rest.substr(0, slash));
  rest.remove_prefix(slash + 1);
  if (rest == "f") {
    k.kind = "f";
    return k;
  }
  if (rest.size() != 22 || rest[1] != '/') return std::nullopt;
  k.kind = std::string(rest.substr(0, 1));
  if (k.kind != "c" && k.kind != "r" && k.kind != "v") return std::nullopt;
  auto n = parse_u64(rest.substr(2));
  if (!n) return std::nullopt;
  k.number = *n;
  return k;
}

std::string encode_frontier(const GaplessFrontier& f) {
  return RecordWriter()
      .add("first_open", f.first_open)
      .add("first", f.first)
      .add("step", f.step)
      .finish();
}

std::optional<GaplessFrontier> decode_frontier(std::string_view text) {
  const auto rec = RecordView::parse(text);
  if (!rec) return std::nullopt;
  const auto first_open = rec->get_u64("first_open");
  const auto first = rec->get_u64("first");
  const auto step = rec->get_u64("step");
  if (!first_open || !first || !step || *step == 0) return std::nullopt;
  return GaplessFrontier{*first_open, *first, *step};
}

std::string encode_reservation(const Reservation& r) {
  return RecordWriter()
      .add("id", r.id)
      .add("expires_at_ms", r.expires_at_unix_ms)
      .finish("holder", r.holder);
}

std::optional<Reservation> decode_reservation(std::uint64_t number, std::string_view text) {
  const auto rec = RecordView::parse(text, "holder");
  if (!rec) return std::nullopt;
  const auto id = rec->get("id");
  const auto expires_at = rec->get_i64("expires_at_ms");
  const auto holder = rec->get("holder");
  if (!id || !expires_at || !holder || !id->starts_with(std::to_string(number) + "-")) {
    return std::nullopt;
  }
  return Reservation{std::string(*id), number, std::string(*holder), *expires_at};
}

std::vector<std::string> verify_gapless_records(const KeyValues& records) {
  struct Seq {
    std::optional<GaplessFrontier> frontier;
    std::map<std::uint64_t, std::string> committed, reserved, voids;
  };
  std::map<std::string, Seq> seqs;
  std::vector<std::string> problems;
  for (const auto& [k, v] : records) {
    if (!std::string_view(k).starts_with(kGaplessPrefix)) continue;
    auto parsed = parse_gapless_key(std::string_view(k).substr(kGaplessPrefix.size()));
    if (!parsed) {
      problems.push_back("unreadable key '" + k + "'");
      continue;
    }
    auto& s = seqs[parsed->name];
    if (parsed->kind == "f") {
      s.frontier = decode_frontier(v);
      if (!s.frontier) problems.push_back(parsed->name + ": unreadable frontier '" + v + "'");
    } else if (parsed->kind == "c") {
      s.committed[parsed->number] = v;
    } else if (parsed->kind == "r") {
      s.reserved[parsed->number] = v;
    } else {
      s.voids[parsed->number] = v;
    }
  }
  for (const auto& [name, s] : seqs) {
    if (!s.frontier) {
      if (!s.committed.empty() || !s.voids.empty()) {
        // Every write carries the frontier until it has landed once.
        problems.push_back(name + ": committed numbers but no frontier record");
      }
    }
    const std::uint64_t first = s.frontier ? s.frontier->first : 0;
    const std::uint64_t step = s.frontier ? s.frontier->step : 1;
    const std::uint64_t first_open = s.frontier ? s.frontier->first_open : first;
    if (s.frontier && (first_open < first || (first_open - first) % step != 0)) {
      problems.push_back(name + ": frontier " + std::to_string(first_open) + " is off the grid");
    }
    auto on_grid = [&](std::uint64_t n) { return n >= first && (n - first) % step == 0; };
    for (const auto& [n, v] : s.committed) {
      if (!on_grid(n)) problems.push_back(name + ": committed " + std::to_string(n) + " off grid");
      if (v != "" && v != "void") {
        problems.push_back(name + ": committed " + std::to_string(n) + " has value '" + v + "'");
      }
      if (v == "void" && !s.voids.contains(n)) {
        problems.push_back(name + ": void " + std::to_string(n) + " has no reason record");
      }
    }
    for (const auto& [n, v] : s.reserved) {
      if (!on_grid(n)) problems.push_back(name + ": reserved " + std::to_string(n) + " off grid");
      if (!decode_reservation(n, v)) {
        problems.push_back(name + ": unreadable reservation of " + std::to_string(n));
      }
      if (n < first_open || s.committed.contains(n)) {
        problems.push_back(name + ": " + std::to_string(n) + " is both committed and reserved");
      }
    }
    for (const auto& [n, reason] : s.voids) {
      if (n >= first_open && !s.committed.contains(n)) {
        problems.push_back(name + ": void " + std::to_string(n) + " is not committed");
      }
    }
  }
  return problems;
}

}  // namespace ticketd
