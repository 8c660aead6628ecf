#include "server/core/sequence_record.h"

#include <charconv>
#include <string>

namespace ticketd {
namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Calls f(key, value) for each space-separated `key=value`; false on a malformed field.
template <class F>
bool for_each_field(std::string_view text, F&& f) {
  while (!text.empty()) {
    auto sp = text.find(' ');
    auto field = text.substr(0, sp);
    text = sp == std::string_view::npos ? std::string_view{} : text.substr(sp + 1);
    if (field.empty()) continue;
    auto eq = field.find('=');
    if (eq == std::string_view::npos) return false;
    if (!f(field.substr(0, eq), field.substr(eq + 1))) return false;
  }
  return true;
}

}  // namespace

std::string sequence_key(std::string_view name) {
  return std::string(kSequencePrefix) + std::string(name);
}

std::string tombstone_key(std::string_view name) {
  return std::string(kTombstonePrefix) + std::string(name);
}

std::string encode_record(const SequenceRecord& r) {
  std::string out = "v=1 kind=";
  out += kind_name(r.spec.kind);
  out += " start=" + std::to_string(r.spec.start);
  out += " increment=" + std::to_string(r.spec.increment);
  out += " offset=" + std::to_string(r.spec.offset);
  out += " max_value=" + std::to_string(r.spec.max_value);
  out += " cache=" + std::to_string(r.spec.cache);
  out += " ceiling=" + std::to_string(r.ceiling);
  return out;
}

std::optional<SequenceRecord> decode_record(std::string_view name, std::string_view text) {
  SequenceRecord r;
  r.spec.name = std::string(name);
  int seen = 0;
  bool ok = for_each_field(text, [&](std::string_view k, std::string_view v) {
    if (k == "v") return v == "1";
    if (k == "kind") {
      auto kind = parse_kind(v);
      if (!kind) return false;
      r.spec.kind = *kind;
      ++seen;
      return true;
    }
    std::uint64_t* target = nullptr;
    if (k == "start") target = &r.spec.start;
    if (k == "increment") target = &r.spec.increment;
    if (k == "offset") target = &r.spec.offset;
    if (k == "max_value") target = &r.spec.max_value;
    if (k == "cache") target = &r.spec.cache;
    if (k == "ceiling") target = &r.ceiling;
    if (target == nullptr) return true;  // a field from a newer version: keep going
    ++seen;
    return parse_u64(v, *target);
  });
  if (!ok || seen != 7) return std::nullopt;
  return r;
}

std::string encode_tombstone(std::uint64_t ceiling) {
  return "v=1 ceiling=" + std::to_string(ceiling);
}

std::optional<std::uint64_t> decode_tombstone(std::string_view text) {
  std::optional<std::uint64_t> ceiling;
  bool ok = for_each_field(text, [&](std::string_view k, std::string_view v) {
    if (k == "ceiling") {
      std::uint64_t c = 0;
      if (!parse_u64(v, c)) return false;
      ceiling = c;
    }
    return true;
  });
  if (!ok) return std::nullopt;
  return ceiling;
}

}  // namespace ticketd
