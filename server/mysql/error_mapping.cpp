#include "server/mysql/error_mapping.h"

#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "storage/counter_store.h"

namespace ticketd::mysql {
namespace {

// How an engine error's message reaches the client.
enum class Shape {
  kEngineMessage,  // as the engine wrote it
  kNoSuchTable,    // MySQL's "Table 'db.t' doesn't exist", naming the qualified table
  kReadOnly,       // mysqld's --read-only refusal wrapped around the engine's message
};

struct EngineRow {
  ErrorCode code;
  std::uint16_t mysql_errno;
  const char* sql_state;
  Shape shape = Shape::kEngineMessage;
};

// One row per engine error. Choices worth a word:
// - An unknown sequence reads as MySQL's "table doesn't exist", which is what a Flickr client
//   would get from a missing Tickets table.
// - A standby (or a deposed leader) refuses as a --read-only server does, and so does a fenced
//   write (a newer leader owns the store; as on the HTTP edge, "not the leader") and a lost
//   worker-ID lease: proxies and drivers with fail-over logic (ProxySQL, Vitess) take 1290 as
//   "send writes to another server"; the connection stays usable.
// - Other storage failures (disk full, I/O, corruption) are a general error carrying the
//   engine's message, and no ticket; a closed store reads as the server shutting down.
// - Worker-ID pools are served over HTTP only; their rows say what a MySQL client would see.
const EngineRow kEngineRows[] = {
    {TicketErrc::kUnknownSequence, kErNoSuchTable, "42S02", Shape::kNoSuchTable},
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
    // The gate's message already is mysqld's --read-only wording, naming the leader.
    {TicketErrc::kNotLeader, kErOptionPreventsStatement, "HY000"},
    {StorageErrc::kIo, kErGeneral, "HY000"},
    {StorageErrc::kNoSpace, kErGeneral, "HY000"},
    {StorageErrc::kCorruption, kErGeneral, "HY000"},
    {StorageErrc::kLocked, kErGeneral, "HY000"},
    {StorageErrc::kFenced, kErOptionPreventsStatement, "HY000", Shape::kReadOnly},
    {StorageErrc::kClosed, kErServerShutdown, "08S01"},
    // A write that may have applied: mysqld's "error during COMMIT", with the engine's message.
    {StorageErrc::kOutcomeUnknown, kErErrorDuringCommit, "HY000"},
    {SnowflakeErrc::kClockMovedBackwards, kErGeneral, "HY000"},
    {SnowflakeErrc::kWorkerLeaseLost, kErOptionPreventsStatement, "HY000"},
    {WorkerErrc::kUnknownPool, kErGeneral, "HY000"},
    {WorkerErrc::kUnknownLease, kErGeneral, "HY000"},
    {WorkerErrc::kLeaseExpired, kErGeneral, "HY000"},
    {WorkerErrc::kLeaseReleased, kErGeneral, "HY000"},
    {WorkerErrc::kPoolFull, kErGeneral, "HY000"},
};

const EngineRow* find_engine_row(const ErrorCode& code) {
  for (const auto& row : kEngineRows) {
    if (row.code == code) return &row;
  }
  return nullptr;
}

struct StatementRow {
  StatementErrc code;
  std::uint16_t mysql_errno;
  const char* sql_state;
  std::string_view shape;  // `{}` is replaced by the next argument
};

// The executor's own refusals, worded as mysqld words them where mysqld has the error.
constexpr StatementRow kStatementRows[] = {
    {StatementErrc::kNoDatabaseSelected, kErNoDbError, "3D000", "No database selected"},
    {StatementErrc::kNoSuchTable, kErNoSuchTable, "42S02", "Table '{}' doesn't exist"},
    {StatementErrc::kBadDb, kErBadDb, "42000", "Unknown database '{}'"},
    {StatementErrc::kTableExists, kErTableExists, "42S01", "Table '{}' already exists"},
    {StatementErrc::kBadTable, kErBadTable, "42S02", "Unknown table '{}'"},
    {StatementErrc::kUnknownSequence, kErUnknownSequence, "42S02", "Unknown SEQUENCE: '{}'"},
    {StatementErrc::kNotSupported, kErNotSupportedYet, "42000",
     "This version of ticketd doesn't yet support '{}'"},
    {StatementErrc::kWrongValueCount, kErWrongValueCount, "21S01",
     "Column count doesn't match value count at row {}"},
    {StatementErrc::kWrongArguments, kErWrongArguments, "HY000", "{}"},
    {StatementErrc::kUnknownSystemVariable, kErUnknownSystemVariable, "HY000",
     "Unknown system variable '{}'"},
    {StatementErrc::kWrongAutoKey, kErWrongAutoKey, "42000",
     "Incorrect table definition; there can be only one auto column and it must be defined as "
     "a key"},
    {StatementErrc::kGlobalVariableDenied, kErSpecificAccessDenied, "42000",
     "Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN "
     "privilege(s) for this operation"},
    // Not mysqld's: a session override would break the guarantee that servers with different
    // offsets never issue the same value.
    {StatementErrc::kSessionOverrideRefused, kErNotSupportedYet, "42000",
     "ticketd does not allow changing {} per session (the server's value is {}): a session "
     "override would break the guarantee that servers with different offsets never issue the "
     "same value"},
    {StatementErrc::kWrongValueForVariable, kErWrongValueForVar, "42000",
     "Variable '{}' can't be set to the value of '{}'"},
    {StatementErrc::kTooLongIdent, kErTooLongIdent, "42000", "Identifier name '{}' is too long"},
    {StatementErrc::kUnknownThreadId, kErUnknownThreadId, "HY000", "Unknown thread id: {}"},
    {StatementErrc::kEmptyQuery, kErEmptyQuery, "42000", "Query was empty"},
    {StatementErrc::kParseError, kErParse, "42000",
     "You have an error in your SQL syntax; check the manual that corresponds to your ticketd "
     "server version for the right syntax to use near '{}' at line {}"},
};

std::string fill(std::string_view shape, std::initializer_list<std::string_view> args) {
  std::string out;
  const auto* arg = args.begin();
  for (std::size_t at = 0;;) {
    const std::size_t hole = shape.find("{}", at);
    if (hole == std::string_view::npos) {
      out.append(shape.substr(at));
      return out;
    }
    out.append(shape.substr(at, hole - at));
    if (arg != args.end()) out.append(*arg++);
    at = hole + 2;
  }
}

struct LimitRow {
  LimitErrc code;
  std::uint16_t mysql_errno;
  const char* sql_state;
};

// Hostile-input limits. A too-deep expression reads as mysqld's parser running out of stack (a
// syntax error, 1064); oversized values as mysqld's max_allowed_packet overflow (1301, an error
// here rather than a warning and NULL); the memory budgets as MySQL 8's connection_memory_limit
// and global_connection_memory_limit (4082, 4081); a select list over mysqld's MAX_FIELDS as its
// "Too many columns" (1117). The rest have no mysqld counterpart: 1105.
constexpr LimitRow kLimitRows[] = {
    {LimitErrc::kTooManyStatements, kErGeneral, "HY000"},
    {LimitErrc::kNestedTooDeep, kErParse, "42000"},
    {LimitErrc::kValueTooLarge, kErWarnAllowedPacketOverflowed, "HY000"},
    {LimitErrc::kTooManyVariables, kErGeneral, "HY000"},
    {LimitErrc::kLongDataTooLarge, kErGeneral, "HY000"},
    {LimitErrc::kConnectionMemory, kErDaConnLimit, "HY000"},
    {LimitErrc::kGlobalMemory, kErDaGlobalConnLimit, "HY000"},
    {LimitErrc::kTooManyTokens, kErGeneral, "HY000"},
    {LimitErrc::kTooManyColumns, kErTooManyFields, "42000"},
};

struct ConnectionRow {
  ConnectionErrc code;
  std::uint16_t mysql_errno;
  const char* sql_state;
  std::string_view shape;  // `{}` is replaced by the next argument
  bool close;              // the connection ends after it, as mysqld ends it
};

constexpr ConnectionRow kConnectionRows[] = {
    {ConnectionErrc::kPacketTooLarge, kErNetPacketTooLarge, "08S01",
     "Got a packet bigger than 'max_allowed_packet' bytes", true},
    {ConnectionErrc::kPacketsOutOfOrder, kErNetPacketsOutOfOrder, "08S01",
     "Got packets out of order", true},
    {ConnectionErrc::kBadHandshake, kErHandshake, "08S01", "Bad handshake{}", true},
    {ConnectionErrc::kTlsNotConfigured, kErHandshake, "08S01",
     "SSL connection error: TLS is not configured (mysql.tls)", true},
    {ConnectionErrc::kSecureTransportRequired, kErSecureTransportRequired, "HY000",
     "Connections using insecure transport are prohibited while --require_secure_transport=ON.",
     true},
    {ConnectionErrc::kAccessDenied, kErAccessDenied, "28000", "Access denied for user '{}'@'{}'{}",
     true},
    {ConnectionErrc::kLoginsThrottled, kErAccountBlockedByFailedLogins, "HY000",
     "Access denied for user '{}'@'{}': too many failed logins of this user from this address "
     "are being answered; try again later",
     true},
    {ConnectionErrc::kUnknownCommand, kErUnknownComError, "08S01", "Unknown command", false},
    {ConnectionErrc::kMalformedCommand, kErParse, "42000", "malformed {}", false},
    {ConnectionErrc::kTooManyPreparedStatements, kErMaxPreparedStmtCount, "42000",
     "Can't create more than max_prepared_stmt_count statements (current value: {})", false},
    {ConnectionErrc::kTooManyPlaceholders, kErPsManyParam, "HY000",
     "Prepared statement contains too many placeholders", false},
    {ConnectionErrc::kUnknownStatementHandler, kErUnknownStmtHandler, "HY000",
     "Unknown prepared statement handler{}", false},
    {ConnectionErrc::kWrongExecuteArguments, kErWrongArguments, "HY000",
     "Incorrect arguments to mysqld_stmt_execute", false},
};

}  // namespace

ErrResult to_err(LimitErrc code, std::string message) {
  for (const auto& row : kLimitRows) {
    if (row.code == code) return ErrResult{row.mysql_errno, row.sql_state, std::move(message)};
  }
  return ErrResult{kErGeneral, "HY000", std::move(message)};
}

ConnectionError to_err(ConnectionErrc code, std::initializer_list<std::string_view> args) {
  for (const auto& row : kConnectionRows) {
    if (row.code == code) {
      return ConnectionError{ErrResult{row.mysql_errno, row.sql_state, fill(row.shape, args)},
                             row.close};
    }
  }
  return ConnectionError{ErrResult{kErGeneral, "HY000", fill("{}", args)}, true};
}

ErrResult to_err(StatementErrc code, std::initializer_list<std::string_view> args) {
  for (const auto& row : kStatementRows) {
    if (row.code == code) return ErrResult{row.mysql_errno, row.sql_state, fill(row.shape, args)};
  }
  return ErrResult{kErGeneral, "HY000", fill("{}", args)};
}

std::optional<MySqlErrorRow> engine_error_row(const ErrorCode& code) {
  const EngineRow* row = find_engine_row(code);
  if (row == nullptr) return std::nullopt;
  return MySqlErrorRow{row->mysql_errno, row->sql_state};
}

ErrResult to_err(const Error& error, std::string_view qualified_table) {
  const EngineRow* row = find_engine_row(error.code);
  if (row == nullptr) return ErrResult{kErGeneral, "HY000", error.message};
  switch (row->shape) {
    case Shape::kEngineMessage:
      break;
    case Shape::kNoSuchTable:
      return ErrResult{row->mysql_errno, row->sql_state,
                       "Table '" + std::string(qualified_table) + "' doesn't exist"};
    case Shape::kReadOnly:
      return ErrResult{row->mysql_errno, row->sql_state,
                       "The ticketd server is running with the --read-only option (not the "
                       "leader: " +
                           error.message + ") so it cannot execute this statement"};
  }
  return ErrResult{row->mysql_errno, row->sql_state, error.message};
}

ErrResult to_commit_err(const Error& error) {
  ErrResult r = to_err(error, "");
  r.message = "Error during COMMIT: " + r.message;
  return r;
}

ErrResult to_err(ConnectionMemory::Verdict verdict, const ConnectionMemory& memory) {
  // MySQL's texts: the connection that gets one is closed after it, as by mysqld.
  if (verdict == ConnectionMemory::Verdict::kGlobalLimit && memory.global() != nullptr) {
    return to_err(LimitErrc::kGlobalMemory,
                  "Connection closed. Global connection memory limit " +
                      std::to_string(memory.global()->limit()) + " bytes exceeded. Consumed " +
                      std::to_string(memory.global()->used()) + " bytes.");
  }
  return to_err(LimitErrc::kConnectionMemory,
                "Connection closed. Connection memory limit " + std::to_string(memory.limit()) +
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
