#include "storage/etcd/etcd_errc.h"

#include <string>

namespace ticketd::etcd {
namespace {

class EtcdCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "ticketd.etcd"; }
  std::string message(int ev) const override {
    switch (static_cast<EtcdErrc>(ev)) {
      case EtcdErrc::kUnavailable:
        return "etcd unavailable";
      case EtcdErrc::kTimeout:
        return "etcd call timed out";
      case EtcdErrc::kBadResponse:
        return "unexpected response from etcd";
      case EtcdErrc::kLeaseNotFound:
        return "etcd lease not found (expired or revoked)";
      case EtcdErrc::kRejected:
        return "etcd rejected the request";
      case EtcdErrc::kInvalidArgument:
        return "invalid etcd request";
      case EtcdErrc::kTls:
        return "TLS with etcd failed";
      case EtcdErrc::kAuth:
        return "etcd authentication failed";
      case EtcdErrc::kPermissionDenied:
        return "etcd permission denied";
      case EtcdErrc::kCancelled:
        return "etcd watch cancelled";
    }
    return "unknown etcd error";
  }
};

}  // namespace

const boost::system::error_category& etcd_category() noexcept {
  static const EtcdCategory category;
  return category;
}

}  // namespace ticketd::etcd
