#include "server/core/kind_module.h"

#include <array>
#include <iterator>

namespace ticketd {

const KindModule& kind_module(SequenceKind kind) {
  // One row per kind, in SequenceKind's order (checked below at first use).
  static const std::array<const KindModule*, std::size(kSequenceKindRows)> modules = {
      &ticket_kind(), &gapless_kind(), &snowflake_kind(), &uuidv7_kind()};
  static const bool in_order = in_kind_order(modules);
  if (!in_order) std::abort();  // a registration row out of place: a programming error
  return *modules[static_cast<std::size_t>(kind)];
}

}  // namespace ticketd
