// Reads the counters of a live MySQL/MariaDB server: the only user of MariaDB Connector/C.
#pragma once

#include <string>
#include <vector>

#include "server/base/result.h"
#include "server/migrate/mysql_import.h"

namespace ticketd::migrate {

/// Connects over TCP to `url` (its password as given; never logged), reads
/// @@GLOBAL.auto_increment_increment/offset, every base table's AUTO_INCREMENT in the database
/// (with the type of its AUTO_INCREMENT column) and every MariaDB SEQUENCE's next value,
/// increment, start and maximum from the sequence table itself; with `only` non-empty, just
/// those names (the ones not found are listed in `missing`). Reads only: nothing on the old
/// server changes. Blocking; errors carry the server's message.
[[nodiscard]] DetailedResult<SourceSnapshot> read_source(const MysqlUrl& url,
                                                         const std::vector<std::string>& only);

}  // namespace ticketd::migrate
