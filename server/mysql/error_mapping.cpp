#include "server/mysql/error_mapping.h"

#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "storage/counter_store.h"

namespace ticketd::mysql {
namespace {

struct Row {
  TicketErrc code;
  std::uint16_t mysql_errno;
  const char* sql_state;
};

// One row per engine error. Unknown sequence reads as MySQL's "table doesn't exist" because
// that is what a Flickr client would get from a missing Tickets table.
constexpr Row kTicketRows[] = {
    {TicketErrc::kUnknownSequence, kErNoSuchTable, "42S02"},
    {TicketErrc::kAlreadyExists, kErTableExists, "42S01"},
    {TicketErrc::kExhausted, kErSequenceRunOut, "HY000"},
    {TicketErrc::kInvalidArgument, kErWrongArguments, "HY000"},
    {TicketErrc::kStorageFailed, kErGeneral, "HY000"},
    {TicketErrc::kRetryLater, kErLockWaitTimeout, "HY000"},
    {TicketErrc::kShuttingDown, kErServerShutdown, "08S01"},
    {TicketErrc::kWrongKind, kErNotSupportedYet, "42000"},
    {TicketErrc::kReservationNotFound, kErErrorDuringCommit, "HY000"},
    {TicketErrc::kReservationEnded, kErErrorDuringCommit, "HY000"},
    {TicketErrc::kQueueTimeout, kErLockWaitTimeout, "HY000"},
    // A standby (or a deposed leader) refuses as a --read-only server does; the message names
    // the leader's MySQL address so a client can reconnect there.
    {TicketErrc::kNotLeader, kErOptionPreventsStatement, "HY000"},
};

struct SnowflakeRow {
  SnowflakeErrc code;
  std::uint16_t mysql_errno;
  const char* sql_state;
};

// A lost worker-ID lease reads as MySQL's --read-only refusal (1290): proxies and drivers with
// fail-over logic (ProxySQL, Vitess) take it as "send writes to another server", which is what
// a client should do with a ticketd that cannot issue; the connection stays usable.
constexpr SnowflakeRow kSnowflakeRows[] = {
    {SnowflakeErrc::kClockMovedBackwards, kErGeneral, "HY000"},
    {SnowflakeErrc::kWorkerLeaseLost, kErOptionPreventsStatement, "HY000"},
};

}  // namespace

ErrResult to_err(const Error& error, std::string_view qualified_table) {
  if (error.code.category() == ticket_category()) {
    for (const auto& row : kTicketRows) {
      if (error.code == row.code) {
        if (row.code == TicketErrc::kUnknownSequence) {
          return ErrResult{row.mysql_errno, row.sql_state,
                           "Table '" + std::string(qualified_table) + "' doesn't exist"};
        }
        return ErrResult{row.mysql_errno, row.sql_state, error.message};
      }
    }
  }
  if (error.code.category() == snowflake_category()) {
    for (const auto& row : kSnowflakeRows) {
      if (error.code == row.code) return ErrResult{row.mysql_errno, row.sql_state, error.message};
    }
  }
  // Storage errors (disk full, I/O), a Snowflake clock that stepped back too far, anything
  // unexpected: a general error carrying the engine's message, and no ticket.
  return ErrResult{kErGeneral, "HY000", error.message};
}

}  // namespace ticketd::mysql
