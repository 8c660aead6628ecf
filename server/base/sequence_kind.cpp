#include "server/base/sequence_kind.h"

#include <algorithm>

namespace ticketd {

// A row's index is its enumerator: kind_row() relies on it.
static_assert([] {
  for (std::size_t i = 0; i < std::size(kSequenceKindRows); ++i) {
    if (static_cast<std::size_t>(kSequenceKindRows[i].kind) != i) return false;
  }
  return true;
}());

const SequenceKindRow& kind_row(SequenceKind kind) {
  return kSequenceKindRows[static_cast<std::size_t>(kind)];
}

std::string_view kind_name(SequenceKind kind) { return kind_row(kind).name; }

std::optional<SequenceKind> parse_kind(std::string_view name) {
  for (const auto& row : kSequenceKindRows) {
    if (row.name == name) return row.kind;
  }
  return std::nullopt;
}

bool kind_takes(SequenceKind kind, std::string_view key) {
  const auto keys = kind_row(kind).keys;
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string kind_names_text() {
  std::string out;
  const std::size_t n = std::size(kSequenceKindRows);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    out += kSequenceKindRows[i].name;
  }
  return out;
}

}  // namespace ticketd
