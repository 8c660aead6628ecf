// `ticketd plan`: capacity questions answered on paper from a target (docs/capacity.md).
#pragma once

#include <cstdio>

namespace ticketd {

/// ticketd plan --kind KIND [--ids-per-second N] [--years Y] [settings...] | --figures
/// Prints one "key: value unit" line per answer (plan::make_plan) to `out`; with a target, the
/// last line is "fits: yes" or "fits: no: why". Exit 0 when the target fits (or none was
/// given), 1 when it does not or no measured figure can tell, 2 on a usage error (the problem
/// on `err`). Reads no file, no clock, no network.
int plan_command(int argc, char** argv, std::FILE* out, std::FILE* err);

}  // namespace ticketd
