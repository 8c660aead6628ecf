#include "server/core/worker_errc.h"

#include <string>

#include "server/base/error_category.h"

namespace ticketd {
namespace {

const char* describe_worker(WorkerErrc e) noexcept {
  switch (e) {
    case WorkerErrc::kUnknownPool:
      return "unknown worker pool";
    case WorkerErrc::kUnknownLease:
      return "unknown worker lease";
    case WorkerErrc::kLeaseExpired:
      return "worker lease expired";
    case WorkerErrc::kLeaseReleased:
      return "worker lease released";
    case WorkerErrc::kPoolFull:
      return "every worker ID of the pool is leased";
  }
  return nullptr;
}

}  // namespace

const boost::system::error_category& worker_category() noexcept {
  static const EnumCategory<WorkerErrc> category("ticketd.worker", describe_worker,
                                                 "unknown worker error");
  return category;
}

}  // namespace ticketd
