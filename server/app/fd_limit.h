// The process's file-descriptor budget: raised at start, checked against the connection caps.
#pragma once

#include <cstdint>
#include <string>

namespace ticketd {

/// Descriptors kept back from client connections: the two listeners, RocksDB's files (a few
/// per level and the WAL), etcd client connections, the data-dir lock, stdio and logs.
inline constexpr std::uint64_t kFdReserve = 256;

struct FdLimit {
  std::uint64_t soft = 0;  // the limit in force
  std::uint64_t hard = 0;
  bool raised = false;  // the soft limit was raised at start
};

/// Raises RLIMIT_NOFILE's soft limit to its hard limit where the kernel allows it (a hard limit
/// of "unlimited" is tried as fs.nr_open's usual 1048576) and returns the limits in force.
[[nodiscard]] FdLimit raise_fd_limit();

/// Empty when mysql.max_connections + http.max_connections + kFdReserve fit under `soft`;
/// otherwise why ticketd refuses to start. Connections past the limit would fail accept()
/// with EMFILE, and then a flood on one front end locks clients out of the other.
[[nodiscard]] std::string fd_budget_problem(std::uint64_t soft, std::uint64_t mysql_max_connections,
                                            std::uint64_t http_max_connections);

}  // namespace ticketd
