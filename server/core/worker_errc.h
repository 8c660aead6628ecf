// Error codes of the worker-ID pools (leases of Snowflake worker IDs to other services).
#pragma once

#include <boost/system/error_code.hpp>
#include <type_traits>

namespace ticketd {

enum class WorkerErrc {
  kUnknownPool = 1,  // no pool of that name is configured
  kUnknownLease,     // no such lease in the pool (never granted, or its ID was granted again)
  kLeaseExpired,     // the lease's TTL passed before the keepalive or release arrived
  kLeaseReleased,    // the holder already released the lease
  kPoolFull,         // every worker ID of the pool is held by a live lease
};

const boost::system::error_category& worker_category() noexcept;

inline boost::system::error_code make_error_code(WorkerErrc e) noexcept {
  return {static_cast<int>(e), worker_category()};
}

}  // namespace ticketd

template <>
struct boost::system::is_error_code_enum<ticketd::WorkerErrc> : std::true_type {};
