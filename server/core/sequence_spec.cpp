#include "server/core/sequence_spec.h"

#include <algorithm>
#include <string>

#include "server/base/utf8.h"

namespace ticketd {

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
  // Names are echoed in JSON answers, which must be UTF-8.
  if (!is_valid_utf8(name)) return "name is not valid UTF-8";
  return {};
}

std::string validate(const SequenceSpec& spec) {
  if (auto problem = validate_name(spec.name); !problem.empty()) return "sequence " + problem;
  const auto in = [](std::uint64_t v, std::uint64_t hi) { return v >= 1 && v <= hi; };
  if (!in(spec.increment, kMaxIncrement)) {
    return "increment must be 1.." + std::to_string(kMaxIncrement);
  }
  if (!in(spec.offset, kMaxIncrement)) return "offset must be 1.." + std::to_string(kMaxIncrement);
  if (spec.offset > spec.increment) return "offset must not be greater than increment";
  if (spec.start < 1) return "start must be at least 1";
  if (spec.max_value < spec.start) return "max_value must not be less than start";
  if (!in(spec.cache, kMaxCache)) return "cache must be 1.." + std::to_string(kMaxCache);
  if (!in(spec.max_rate, kMaxMaxRate)) {
    return "max_rate must be 1.." + std::to_string(kMaxMaxRate);
  }
  return {};
}

std::uint64_t rate_window_us(const SequenceSpec& spec) {
  const std::uint64_t rate = std::max<std::uint64_t>(spec.max_rate, 1);
  const unsigned __int128 one_write = spec.cache + kMaxIdsPerCall;
  const auto for_one_write =
      static_cast<std::uint64_t>((one_write * 1000000 + rate - 1) / rate);  // rounded up
  return std::max<std::uint64_t>(1000000, for_one_write);
}

}  // namespace ticketd
