#include "storage/etcd/etcd_errc.h"

#include <string>

#include "server/base/error_category.h"

namespace ticketd::etcd {
namespace {

const char* describe_etcd(EtcdErrc e) noexcept {
  switch (e) {
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
    case EtcdErrc::kOutcomeUnknown:
      return "no definite answer from etcd (a write may have applied)";
  }
  return nullptr;
}

}  // namespace

const boost::system::error_category& etcd_category() noexcept {
  static const EnumCategory<EtcdErrc> category("ticketd.etcd", describe_etcd, "unknown etcd error");
  return category;
}

}  // namespace ticketd::etcd
