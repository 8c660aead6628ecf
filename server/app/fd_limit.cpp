#include "server/app/fd_limit.h"

#include <sys/resource.h>

namespace ticketd {

FdLimit raise_fd_limit() {
  FdLimit out;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return out;
  if (r.rlim_cur < r.rlim_max) {
    rlimit wanted = r;
    wanted.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &wanted) != 0 && r.rlim_max == RLIM_INFINITY) {
      // Linux refuses a soft limit above fs.nr_open; 1048576 is its default.
      constexpr rlim_t kNrOpenDefault = 1048576;
      wanted.rlim_cur = kNrOpenDefault;
      static_cast<void>(setrlimit(RLIMIT_NOFILE, &wanted));  // checked below by re-reading
    }
    const rlim_t before = r.rlim_cur;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0) return out;
    out.raised = r.rlim_cur > before;
  }
  out.soft = r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<std::uint64_t>(r.rlim_cur);
  out.hard = r.rlim_max == RLIM_INFINITY ? UINT64_MAX : static_cast<std::uint64_t>(r.rlim_max);
  return out;
}

std::string fd_budget_problem(std::uint64_t soft, std::uint64_t mysql_max_connections,
                              std::uint64_t http_max_connections) {
  const std::uint64_t needed = mysql_max_connections + http_max_connections + kFdReserve;
  if (needed <= soft) return {};
  return "mysql.max_connections (" + std::to_string(mysql_max_connections) +
         ") + http.max_connections (" + std::to_string(http_max_connections) + ") + " +
         std::to_string(kFdReserve) +
         " descriptors kept for storage and listeners = " + std::to_string(needed) +
         " exceeds the open-file limit of " + std::to_string(soft) +
         " (RLIMIT_NOFILE, already raised to the hard limit); lower the max_connections " +
         "settings or raise the limit (ulimit -n, systemd LimitNOFILE=)";
}

}  // namespace ticketd
