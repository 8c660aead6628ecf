#include "server/http/error_mapping.h"

#include <array>

#include "server/base/error_category.h"
#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "server/http/http_errc.h"
#include "storage/counter_store.h"

namespace ticketd::http {
namespace {

using boost::beast::http::status;

// Choices worth a word:
// - kExhausted is 409: the request is well-formed and would succeed on a sequence with room
//   left; it conflicts with the sequence's current state (as kAlreadyExists does), and no retry
//   will fix it, which 503 would suggest.
// - Unknown JSON fields and wrong types are 422 (the JSON parsed; its meaning is wrong);
//   only text that is not JSON at all is 400.
// - Storage errors are 503 (the request may succeed once the disk is fixed) except corruption,
//   which no retry fixes.
// - Worker leases: an ended lease (expired or released) is 409, distinct from an unknown one
//   (404), so a holder knows it must acquire again; a full pool is 503 with Retry-After, since
//   it frees itself as leases expire.
// Sized by its rows.
const auto kTable = std::to_array<ErrorMapping>({
    {TicketErrc::kUnknownSequence, status::not_found, "not_found"},
    {TicketErrc::kAlreadyExists, status::conflict, "already_exists"},
    {TicketErrc::kExhausted, status::conflict, "exhausted"},
    {TicketErrc::kInvalidArgument, status::unprocessable_entity, "invalid_argument"},
    {TicketErrc::kStorageFailed, status::service_unavailable, "storage_failed"},
    {TicketErrc::kRetryLater, status::service_unavailable, "retry_later"},
    {TicketErrc::kShuttingDown, status::service_unavailable, "shutting_down"},
    {TicketErrc::kWrongKind, status::conflict, "wrong_kind"},
    {TicketErrc::kReservationNotFound, status::not_found, "reservation_not_found"},
    {TicketErrc::kReservationEnded, status::conflict, "reservation_ended"},
    {TicketErrc::kQueueTimeout, status::service_unavailable, "queue_timeout"},
    // A standby or deposed leader: the body names the leader, a retry there succeeds.
    {TicketErrc::kNotLeader, status::service_unavailable, "not_leader"},
    {WorkerErrc::kUnknownPool, status::not_found, "not_found"},
    {WorkerErrc::kUnknownLease, status::not_found, "not_found"},
    {WorkerErrc::kLeaseExpired, status::conflict, "lease_expired"},
    {WorkerErrc::kLeaseReleased, status::conflict, "lease_released"},
    {WorkerErrc::kPoolFull, status::service_unavailable, "pool_full"},
    // The clock stepped back further than the Snowflake policy tolerates: retry once it has
    // caught up (or fail over to another worker).
    {SnowflakeErrc::kClockMovedBackwards, status::service_unavailable, "clock_moved_backwards"},
    // The worker ID's lease is not held (etcd unreachable, lease expired): this instance
    // cannot issue until it re-claims one; another instance can.
    {SnowflakeErrc::kWorkerLeaseLost, status::service_unavailable, "worker_lease_lost"},
    {StorageErrc::kIo, status::service_unavailable, "storage_failed"},
    {StorageErrc::kNoSpace, status::service_unavailable, "storage_failed"},
    {StorageErrc::kCorruption, status::internal_server_error, "storage_corrupt"},
    {StorageErrc::kLocked, status::service_unavailable, "storage_failed"},
    // A fenced write: another instance holds the leadership this one wrote under. Retrying
    // here cannot succeed; the leader can, so the answer is the gate's (and names it).
    {StorageErrc::kFenced, status::service_unavailable, "not_leader"},
    // A write that may have applied: not "storage_failed", which says nothing happened. A
    // gapless commit retried answers once ticketd has completed it.
    {StorageErrc::kOutcomeUnknown, status::service_unavailable, "outcome_unknown"},
    {StorageErrc::kClosed, status::service_unavailable, "shutting_down"},
    {HttpErrc::kMalformed, status::bad_request, "bad_request"},
    {HttpErrc::kUnauthorized, status::unauthorized, "unauthorized"},
    {HttpErrc::kNoRoute, status::not_found, "not_found"},
    {HttpErrc::kMethodNotAllowed, status::method_not_allowed, "method_not_allowed"},
    {HttpErrc::kBodyTooLarge, status::payload_too_large, "payload_too_large"},
    {HttpErrc::kUnsupportedMediaType, status::unsupported_media_type, "unsupported_media_type"},
    {HttpErrc::kInvalidField, status::unprocessable_entity, "invalid_argument"},
    {HttpErrc::kNotBuiltYet, status::unprocessable_entity, "not_built_yet"},
    {HttpErrc::kHeaderTooLarge, status::request_header_fields_too_large, "header_too_large"},
    {HttpErrc::kNotReady, status::service_unavailable, "not_ready"},
    {HttpErrc::kNotConfigured, status::not_implemented, "not_configured"},
    {HttpErrc::kTooManyAuthFailures, status::too_many_requests, "too_many_auth_failures"},
});

const char* describe_http(HttpErrc e) noexcept {
  switch (e) {
    case HttpErrc::kMalformed:
      return "malformed request";
    case HttpErrc::kUnauthorized:
      return "unauthorized";
    case HttpErrc::kNoRoute:
      return "no such route";
    case HttpErrc::kMethodNotAllowed:
      return "method not allowed";
    case HttpErrc::kBodyTooLarge:
      return "body too large";
    case HttpErrc::kUnsupportedMediaType:
      return "unsupported media type";
    case HttpErrc::kInvalidField:
      return "invalid field";
    case HttpErrc::kNotBuiltYet:
      return "not built yet";
    case HttpErrc::kHeaderTooLarge:
      return "request header too large";
    case HttpErrc::kNotReady:
      return "not ready";
    case HttpErrc::kNotConfigured:
      return "not configured";
    case HttpErrc::kTooManyAuthFailures:
      return "too many authentication failures";
  }
  return nullptr;
}

}  // namespace

const boost::system::error_category& http_category() noexcept {
  static const EnumCategory<HttpErrc> category("ticketd.http", describe_http, "unknown http error");
  return category;
}

std::span<const ErrorMapping> error_mappings() { return kTable; }

ErrorMapping map_error(const ErrorCode& ec) {
  for (const auto& row : kTable) {
    if (row.error == ec) return row;
  }
  return ErrorMapping{ec, status::internal_server_error, "internal"};
}

}  // namespace ticketd::http
