// `ticketd restride`: moves every server of a group onto increment N and its own offset.
#pragma once

#include <cstdio>

namespace ticketd {

/// ticketd restride --sequence NAME --servers HOST:PORT,HOST:PORT,... [--margin N]
///                  [--token-file FILE] [--dry-run]
/// Talks to each server's HTTP API (token from --token-file or $TICKETD_TOKEN). Fences every
/// server that has the sequence at a floor F above all of their durable ceilings, then restrides
/// them one at a time to increment N (the number of servers) and offset 1..N (their order in
/// --servers), first value above F; a server without the sequence gets it created there.
/// Exit 0 when every server is on its grid, 1 on a failure (the step and server named), 2 on a
/// usage error. See docs/restride.md for why the fences make it safe while all keep serving.
int restride_command(int argc, char** argv, std::FILE* out, std::FILE* err);

}  // namespace ticketd
