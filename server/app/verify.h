// `ticketd verify --data-dir DIR`: checks the stored invariants offline.
#pragma once

#include <cstdio>
#include <string>

namespace ticketd {

/// Opens the data directory read-only (refusing while a ticketd holds it; nothing in it is
/// created or written), runs the checks a start runs (a store below, without, or with another
/// store's durable mark is a violation), checks every sequence record
/// and every gapless sequence's invariants, and prints one line per sequence and per violation
/// to `out`. Returns 0 when everything holds, 1 on a violation, 3 when the directory cannot be
/// opened.
[[nodiscard]] int verify_data_dir(const std::string& dir, const std::string& external_mark,
                                  std::FILE* out);

}  // namespace ticketd
