#include "server/http/error_mapping.h"

#include <gtest/gtest.h>

#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "server/http/http_errc.h"
#include "storage/counter_store.h"

namespace ticketd::http {
namespace {

using boost::beast::http::status;

struct Case {
  ErrorCode error;
  status expected_status;
  std::string_view expected_code;
};

// One row per row of the table in error_mapping.cpp.
const Case kCases[] = {
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
    {WorkerErrc::kUnknownPool, status::not_found, "not_found"},
    {WorkerErrc::kUnknownLease, status::not_found, "not_found"},
    {WorkerErrc::kLeaseExpired, status::conflict, "lease_expired"},
    {WorkerErrc::kLeaseReleased, status::conflict, "lease_released"},
    {WorkerErrc::kPoolFull, status::service_unavailable, "pool_full"},
    {TicketErrc::kNotLeader, status::service_unavailable, "not_leader"},
    {SnowflakeErrc::kClockMovedBackwards, status::service_unavailable, "clock_moved_backwards"},
    {SnowflakeErrc::kWorkerLeaseLost, status::service_unavailable, "worker_lease_lost"},
    {StorageErrc::kIo, status::service_unavailable, "storage_failed"},
    {StorageErrc::kNoSpace, status::service_unavailable, "storage_failed"},
    {StorageErrc::kCorruption, status::internal_server_error, "storage_corrupt"},
    {StorageErrc::kLocked, status::service_unavailable, "storage_failed"},
    {StorageErrc::kFenced, status::service_unavailable, "not_leader"},
    {StorageErrc::kClosed, status::service_unavailable, "shutting_down"},
    {StorageErrc::kOutcomeUnknown, status::service_unavailable, "outcome_unknown"},
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
};

TEST(HttpErrorMapping, EachErrorMapsToItsStatusAndCode) {
  for (const auto& c : kCases) {
    const auto m = map_error(c.error);
    EXPECT_EQ(m.status, c.expected_status) << c.error.message();
    EXPECT_EQ(m.code, c.expected_code) << c.error.message();
  }
}

TEST(HttpErrorMapping, EveryTableRowHasATestRow) {
  EXPECT_EQ(error_mappings().size(), std::size(kCases));
  for (const auto& row : error_mappings()) {
    bool found = false;
    for (const auto& c : kCases) found = found || c.error == row.error;
    EXPECT_TRUE(found) << row.error.message();
  }
}

TEST(HttpErrorMapping, UnmappedCodesAre500Internal) {
  const auto m = map_error(make_error_code(boost::system::errc::io_error));
  EXPECT_EQ(m.status, status::internal_server_error);
  EXPECT_EQ(m.code, "internal");
}

TEST(HttpErrorMapping, HttpErrcHasMessages) {
  EXPECT_EQ(ErrorCode(HttpErrc::kNoRoute).message(), "no such route");
  EXPECT_STREQ(ErrorCode(HttpErrc::kNoRoute).category().name(), "ticketd.http");
}

}  // namespace
}  // namespace ticketd::http
