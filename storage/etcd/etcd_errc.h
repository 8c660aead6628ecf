// Error codes of the etcd v3 client.
#pragma once

#include <boost/system/error_code.hpp>
#include <type_traits>

namespace ticketd::etcd {

enum class EtcdErrc {
  kUnavailable = 1,   // no endpoint accepted a connection (nothing was sent), or a watch ended
  kTimeout,           // the deadline passed before any endpoint took the call (nothing was sent)
  kBadResponse,       // the reply was not HTTP 200 with the JSON the call expects
  kLeaseNotFound,     // the lease expired or was revoked (gRPC NOT_FOUND on a lease call)
  kRejected,          // etcd answered with an error (invalid argument, too many ops, auth, ...)
  kInvalidArgument,   // the request cannot be sent (bad endpoint, empty key, TTL out of range)
  kTls,               // TLS failed: etcd's certificate not trusted, or ours refused or missing
  kAuth,              // etcd refused our credentials (wrong user or password, auth needed)
  kPermissionDenied,  // the user has no permission on the key
  kCancelled,         // the watch was cancelled (EtcdWatch::cancel)
  // The request went out and no definite answer came back: the connection broke, the deadline
  // passed, or etcd answered UNAVAILABLE / DEADLINE_EXCEEDED ("request timed out", "leader
  // changed"). A write may have applied, or may still apply.
  kOutcomeUnknown,
};

const boost::system::error_category& etcd_category() noexcept;

inline boost::system::error_code make_error_code(EtcdErrc e) noexcept {
  return {static_cast<int>(e), etcd_category()};
}

}  // namespace ticketd::etcd

template <>
struct boost::system::is_error_code_enum<ticketd::etcd::EtcdErrc> : std::true_type {};
