#include "server/core/worker_errc.h"

#include <string>

namespace ticketd {
namespace {

class WorkerCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "ticketd.worker"; }
  std::string message(int ev) const override {
    switch (static_cast<WorkerErrc>(ev)) {
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
    return "unknown worker error";
  }
};

}  // namespace

const boost::system::error_category& worker_category() noexcept {
  static const WorkerCategory category;
  return category;
}

}  // namespace ticketd
