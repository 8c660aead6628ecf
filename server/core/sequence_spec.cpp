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

std::string validate_name(std::string_view name) {
  constexpr std::size_t kMaxNameLength = 64;
  if (name.empty()) return "name is empty";
  if (name.size() > kMaxNameLength) return "name is longer than 64 characters";
  // "." and ".." would read as path steps wherever a name becomes part of a path or URL.
  if (name == "." || name == "..") return "name must not be '.' or '..'";
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == ' ') return "name contains a space";
    if (c < 0x20 || c == 0x7f) return "name contains a control character";
    if (c == '/') return "name contains '/'";
    if (c == '`') return "name contains a backquote";
  }
  return {};
}

std::string validate(const SequenceSpec& spec) {
  if (auto problem = validate_name(spec.name); !problem.empty()) return "sequence " + problem;
  if (spec.increment < 1 || spec.increment > 65535) return "increment must be 1..65535";
  if (spec.offset < 1 || spec.offset > 65535) return "offset must be 1..65535";
  if (spec.offset > spec.increment) return "offset must not be greater than increment";
  if (spec.start < 1) return "start must be at least 1";
  if (spec.max_value < spec.start) return "max_value must not be less than start";
  if (spec.cache < 1) return "cache must be at least 1";
  return {};
}

}  // namespace ticketd
