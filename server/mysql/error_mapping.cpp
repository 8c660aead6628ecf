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

struct LimitRow {
  LimitErrc code;
  std::uint16_t mysql_errno;
  const char* sql_state;
};

// Hostile-input limits. A too-deep expression reads as mysqld's parser running out of stack (a
// syntax error, 1064); oversized values as mysqld's max_allowed_packet overflow (1301, an error
// here rather than a warning and NULL); the memory budgets as MySQL 8's connection_memory_limit
// and global_connection_memory_limit (4082, 4081). The rest have no mysqld counterpart: 1105.
constexpr LimitRow kLimitRows[] = {
    {LimitErrc::kTooManyStatements, kErGeneral, "HY000"},
    {LimitErrc::kNestedTooDeep, kErParse, "42000"},
    {LimitErrc::kValueTooLarge, kErWarnAllowedPacketOverflowed, "HY000"},
    {LimitErrc::kTooManyVariables, kErGeneral, "HY000"},
    {LimitErrc::kLongDataTooLarge, kErGeneral, "HY000"},
    {LimitErrc::kConnectionMemory, kErDaConnLimit, "HY000"},
    {LimitErrc::kGlobalMemory, kErDaGlobalConnLimit, "HY000"},
};

}  // namespace

ErrResult to_err(LimitErrc code, std::string message) {
  for (const auto& row : kLimitRows) {
    if (row.code == code) return ErrResult{row.mysql_errno, row.sql_state, std::move(message)};
  }
  return ErrResult{kErGeneral, "HY000", std::move(message)};
}

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

ErrResult to_err(ConnectionMemory::Verdict verdict, const ConnectionMemory& memory) {
  // MySQL's texts, less "Connection closed.": the statement fails, the connection stays.
  if (verdict == ConnectionMemory::Verdict::kGlobalLimit && memory.global() != nullptr) {
    return to_err(LimitErrc::kGlobalMemory,
                  "Global connection memory limit " + std::to_string(memory.global()->limit()) +
                      " bytes exceeded. Consumed " + std::to_string(memory.global()->used()) +
                      " bytes.");
  }
  return to_err(LimitErrc::kConnectionMemory,
                "Connection memory limit " + std::to_string(memory.limit()) +
                    " bytes exceeded. Consumed " + std::to_string(memory.used()) + " bytes.");
}

std::string_view clip_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t n = max_bytes;
  // Back off continuation bytes (10xxxxxx) so the cut falls before a character's first byte.
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

std::string clip_for_message(std::string_view name) {
  return std::string(clip_utf8(name, kMaxEchoedNameBytes));
}

}  // namespace ticketd::mysql
