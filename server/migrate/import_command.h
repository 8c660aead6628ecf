// `ticketd import`: the command line, and the offline write into a stopped server's data dir.
#pragma once

#include <cstdio>

namespace ticketd {

/// `ticketd import --from mysql://USER[:PASS]@HOST[:PORT]/DB [--tables T1,T2] [--margin N]
/// [--dry-run] --data-dir DIR` (argv[1] is "import"). Reads the old server's counters, plans one
/// ticket sequence per counter (server/migrate/mysql_import.h) and, unless --dry-run, creates or
/// advances them in DIR under the data-dir lock, each durable before its line is printed.
/// Exit 0 on success, 1 on a runtime failure (connection, query, store, a refused sequence, a
/// --tables name not found), 2 on a usage error. The plan goes to `out`, errors to `err`; the
/// password (from the URL or MYSQL_PWD) is never printed.
int import_command(int argc, char** argv, std::FILE* out, std::FILE* err);

}  // namespace ticketd
