#include "server/core/sequence_record.h"

#include <string>
#include <utility>

#include "server/base/record_codec.h"

namespace ticketd {

std::string sequence_key(std::string_view name) {
  return std::string(kSequencePrefix) + std::string(name);
}

std::string tombstone_key(std::string_view name) {
  return std::string(kTombstonePrefix) + std::string(name);
}

std::string encode_record(const SequenceRecord& r) {
  RecordWriter w(1);
  w.add("kind", kind_name(r.spec.kind))
      .add("start", r.spec.start)
      .add("increment", r.spec.increment)
      .add("offset", r.spec.offset)
      .add("max_value", r.spec.max_value)
      .add("cache", r.spec.cache)
      .add("ceiling", r.ceiling);
  // Written only when not the default / when set: a record from before max_rate existed is
  // written byte for byte as it was.
  if (r.spec.max_rate != kDefaultMaxRate) w.add("max_rate", r.spec.max_rate);
  if (r.rate_tat_us != 0) w.add("rate_tat_us", r.rate_tat_us);
  // Written only when set, so a record that never took part in a restride reads as before (and
  // an older ticketd reading a restrided one ignores the keys it does not know).
  if (r.fence != 0) w.add("fence", r.fence);
  if (r.restrided) w.add("restrided", std::uint64_t{1});
  return w.finish();
}

std::optional<SequenceRecord> decode_record(std::string_view name, std::string_view text) {
  // Every version-1 record was written with "v=1"; a line without a version is read as one.
  const auto rec = RecordView::parse(text);
  if (!rec || !rec->version_is(1, /*missing_ok=*/true)) return std::nullopt;
  const auto kind = rec->get("kind");
  const auto parsed_kind = kind ? parse_kind(*kind) : std::nullopt;
  if (!parsed_kind) return std::nullopt;
  SequenceRecord r;
  r.spec.name = std::string(name);
  r.spec.kind = *parsed_kind;
  for (auto [key, target] :
       {std::pair{"start", &r.spec.start}, std::pair{"increment", &r.spec.increment},
        std::pair{"offset", &r.spec.offset}, std::pair{"max_value", &r.spec.max_value},
        std::pair{"cache", &r.spec.cache}, std::pair{"ceiling", &r.ceiling}}) {
    const auto value = rec->get_u64(key);
    if (!value) return std::nullopt;
    *target = *value;
  }
  // Records written before max_rate existed: the default bound, and a full allowance.
  for (auto [key, target] :
       {std::pair{"max_rate", &r.spec.max_rate}, std::pair{"rate_tat_us", &r.rate_tat_us}}) {
    if (!rec->get(key)) continue;
    const auto value = rec->get_u64(key);
    if (!value) return std::nullopt;
    *target = *value;
  }
  if (rec->get("fence")) {
    const auto fence = rec->get_u64("fence");
    if (!fence) return std::nullopt;
    r.fence = *fence;
  }
  if (rec->get("restrided")) {
    const auto restrided = rec->get_u64("restrided");
    if (!restrided || *restrided > 1) return std::nullopt;
    r.restrided = *restrided == 1;
  }
  return r;
}

std::string encode_tombstone(std::uint64_t ceiling) {
  return RecordWriter(1).add("ceiling", ceiling).finish();
}

std::optional<std::uint64_t> decode_tombstone(std::string_view text) {
  const auto rec = RecordView::parse(text);
  if (!rec || !rec->version_is(1, /*missing_ok=*/true)) return std::nullopt;
  return rec->get_u64("ceiling");
}

std::string encode_restore_floor(const RestoreFloor& floor) {
  return RecordWriter(1).add("span_ms", floor.span_ms).add("values", floor.values).finish();
}

std::optional<RestoreFloor> decode_restore_floor(std::string_view text) {
  const auto rec = RecordView::parse(text);
  if (!rec || !rec->version_is(1, /*missing_ok=*/false)) return std::nullopt;
  const auto span = rec->get_u64("span_ms");
  const auto values = rec->get_u64("values");
  if (!span || !values) return std::nullopt;
  return RestoreFloor{*span, *values};
}

std::uint64_t restore_floor_skip(const RestoreFloor& floor, const SequenceSpec& spec) {
  using u128 = unsigned __int128;
  const u128 span_us = u128{floor.span_ms} * 1000 + rate_window_us(spec);
  const u128 skip = (span_us * spec.max_rate + 999999) / 1000000 + floor.values;
  return skip > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(skip);
}

}  // namespace ticketd
