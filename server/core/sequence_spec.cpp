#include "server/core/sequence_spec.h"

namespace ticketd {

std::string_view kind_name(SequenceKind kind) {
  switch (kind) {
    case SequenceKind::kTicket:
      return "ticket";
    case SequenceKind::kGapless:
      return "gapless";
    case SequenceKind::kSnowflake:
      return "snowflake";
  }
  return "?";
}

std::optional<SequenceKind> parse_kind(std::string_view name) {
  if (name == "ticket") return SequenceKind::kTicket;
  if (name == "gapless") return SequenceKind::kGapless;
  if (name == "snowflake") return SequenceKind::kSnowflake;
  return std::nullopt;
}

std::string validate(const SequenceSpec& spec) {
  if (spec.name.empty()) return "sequence name is empty";
  if (spec.name.size() > 64) return "sequence name is longer than 64 characters";
  for (char c : spec.name) {
    if (c == '/' || c == '`' || static_cast<unsigned char>(c) < 0x20) {
      return "sequence name contains a forbidden character";
    }
  }
  if (spec.increment < 1 || spec.increment > 65535) return "increment must be 1..65535";
  if (spec.offset < 1 || spec.offset > 65535) return "offset must be 1..65535";
  if (spec.offset > spec.increment) return "offset must not be greater than increment";
  if (spec.start < 1) return "start must be at least 1";
  if (spec.max_value < spec.start) return "max_value must not be less than start";
  if (spec.cache < 1) return "cache must be at least 1";
  return {};
}

}  // namespace ticketd
