// Engine errors to MySQL (errno, SQLSTATE), in one table.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/mysql/connection_memory.h"
#include "server/mysql/query_result.h"

namespace ticketd::mysql {

// MySQL error numbers used by the front end (names as in mysqld_error.h).
inline constexpr std::uint16_t kErUnknownComError = 1047;
inline constexpr std::uint16_t kErAccessDenied = 1045;
/// ER_USER_ACCESS_DENIED_FOR_USER_ACCOUNT_BLOCKED_BY_PASSWORD_LOCK: mysqld's answer for an
/// account locked after failed logins; ticketd's while a guessed account is throttled.
inline constexpr std::uint16_t kErAccountBlockedByFailedLogins = 3955;
inline constexpr std::uint16_t kErConCount = 1040;
inline constexpr std::uint16_t kErBadDb = 1049;
inline constexpr std::uint16_t kErTableExists = 1050;
inline constexpr std::uint16_t kErBadTable = 1051;
inline constexpr std::uint16_t kErParse = 1064;
inline constexpr std::uint16_t kErEmptyQuery = 1065;
inline constexpr std::uint16_t kErNoSuchTable = 1146;
inline constexpr std::uint16_t kErNetPacketTooLarge = 1153;
inline constexpr std::uint16_t kErUnknownStmtHandler = 1243;
inline constexpr std::uint16_t kErNotSupportedYet = 1235;
inline constexpr std::uint16_t kErSpecificAccessDenied = 1227;
inline constexpr std::uint16_t kErWrongArguments = 1210;
inline constexpr std::uint16_t kErMaxPreparedStmtCount = 1461;
inline constexpr std::uint16_t kErSecureTransportRequired = 3159;
inline constexpr std::uint16_t kErUnknownSequence = 4091;
inline constexpr std::uint16_t kErSequenceRunOut = 4084;
inline constexpr std::uint16_t kErWrongAutoKey = 1075;
inline constexpr std::uint16_t kErUnknownThreadId = 1094;
inline constexpr std::uint16_t kErLockWaitTimeout = 1205;
inline constexpr std::uint16_t kErErrorDuringCommit = 1180;
inline constexpr std::uint16_t kErGeneral = 1105;  // ER_UNKNOWN_ERROR
inline constexpr std::uint16_t kErOptionPreventsStatement = 1290;
inline constexpr std::uint16_t kErServerShutdown = 1053;
inline constexpr std::uint16_t kErWrongValueCount = 1136;
inline constexpr std::uint16_t kErWarnAllowedPacketOverflowed = 1301;
inline constexpr std::uint16_t kErDaGlobalConnLimit = 4081;
inline constexpr std::uint16_t kErDaConnLimit = 4082;
inline constexpr std::uint16_t kErNoDbError = 1046;
inline constexpr std::uint16_t kErUnknownSystemVariable = 1193;
inline constexpr std::uint16_t kErWrongValueForVar = 1231;
inline constexpr std::uint16_t kErTooLongIdent = 1059;
inline constexpr std::uint16_t kErTooManyFields = 1117;
inline constexpr std::uint16_t kErHandshake = 1043;
inline constexpr std::uint16_t kErNetPacketsOutOfOrder = 1156;
inline constexpr std::uint16_t kErPsManyParam = 1390;

/// mysqld's NAME_CHAR_LEN: the longest identifier, and the longest variable name a SET accepts.
inline constexpr std::size_t kMaxIdentifierLength = 64;

/// The front end's own limits on hostile input. Each is refused with one (errno, SQLSTATE) row in
/// error_mapping.cpp; the caller writes the message, naming the limit and its value.
enum class LimitErrc {
  kTooManyStatements,  // more statements in one COM_QUERY than ServerConnection allows
  kNestedTooDeep,      // an expression nested deeper than the evaluator allows
  kValueTooLarge,      // a value (SET, SELECT row) larger than max_allowed_packet
  kTooManyVariables,   // more session / user variables than a session may hold
  kLongDataTooLarge,   // COM_STMT_SEND_LONG_DATA beyond max_allowed_packet for one parameter
  kConnectionMemory,   // the connection's memory budget (connection_memory_limit)
  kGlobalMemory,       // the budget of all connections together (global_connection_memory_limit)
  kTooManyTokens,      // a statement of more tokens than sql::kMaxStatementTokens
  kTooManyColumns,     // a select list longer than sql::kMaxSelectItems (mysqld's MAX_FIELDS)
};

[[nodiscard]] ErrResult to_err(LimitErrc code, std::string message);

/// What a statement can be refused for by the executor itself (not the engine). Each is one row
/// in error_mapping.cpp: (errno, SQLSTATE, message shape), the shape's `{}` filled in order by
/// the arguments of to_err(). Names echoed in a message are clipped by the caller.
enum class StatementErrc {
  kNoDatabaseSelected,      // no current database and an unqualified name
  kNoSuchTable,             // {table}: a name outside the served database, or not a sequence
  kBadDb,                   // {database}: USE / FROM of another database
  kTableExists,             // {table}: CREATE of a live name
  kBadTable,                // {table}: DROP TABLE of a missing name
  kUnknownSequence,         // {table}: DROP SEQUENCE of a missing name
  kNotSupported,            // {what}: valid MySQL that ticketd does not do
  kWrongValueCount,         // {row}: INSERT row with another number of values than columns
  kWrongArguments,          // {message}: a value out of range (block size, INCREMENT, ...)
  kUnknownSystemVariable,   // {name}: SELECT @@name of an unknown variable
  kWrongAutoKey,            // CREATE TABLE with several AUTO_INCREMENT columns
  kGlobalVariableDenied,    // SET GLOBAL / PERSIST: no client has that privilege here
  kSessionOverrideRefused,  // {name} {server value}: auto_increment_* per session
  kWrongValueForVariable,   // {name} {value}: SET autocommit = 'x'
  kTooLongIdent,            // {name}: a variable name longer than kMaxIdentifierLength
  kUnknownThreadId,         // {id}: KILL
  kEmptyQuery,              // only whitespace and comments
  kParseError,              // {near} {line}: a syntax error
};

[[nodiscard]] ErrResult to_err(StatementErrc code,
                               std::initializer_list<std::string_view> args = {});

/// What the connection layer refuses (ServerConnection: framing, login, commands, prepared
/// statements). Each is one row in error_mapping.cpp: (errno, SQLSTATE, message shape, whether
/// the connection closes after it), worded as mysqld words it; the shape's `{}` are filled in
/// order by the arguments of to_err().
enum class ConnectionErrc {
  kPacketTooLarge,             // a frame larger than max_allowed_packet
  kPacketsOutOfOrder,          // a frame with another sequence id than the next one
  kBadHandshake,               // {detail}: "" or ": why", a handshake that cannot go on
  kTlsNotConfigured,           // an SSL request to a server without mysql.tls
  kSecureTransportRequired,    // a login in clear with require_secure_transport
  kAccessDenied,               // {user} {host} {why}: why is " (using password: YES)" or ": ..."
  kLoginsThrottled,            // {user} {host}: too many failed logins being answered
  kUnknownCommand,             // a command byte the server does not serve
  kMalformedCommand,           // {command}: a command whose payload does not parse
  kTooManyPreparedStatements,  // {max_prepared_stmt_count}
  kTooManyPlaceholders,        // more than 65,535 parameters
  kUnknownStatementHandler,    // {detail}: " (id) given to mysqld_stmt_execute", ...
  kWrongExecuteArguments,      // parameters that do not decode
};

/// An ERR of the connection layer, and whether the connection closes after it.
struct ConnectionError {
  ErrResult err;
  bool close = false;
};
[[nodiscard]] ConnectionError to_err(ConnectionErrc code,
                                     std::initializer_list<std::string_view> args = {});

/// The ERR for a charge `memory` refused (kConnectionMemory or kGlobalMemory, by `verdict`);
/// ServerConnection closes the connection after sending it, as mysqld does.
[[nodiscard]] ErrResult to_err(ConnectionMemory::Verdict verdict, const ConnectionMemory& memory);

/// mysqld's MYSQL_ERRMSG_SIZE: an ERR message is cut to this many bytes less one.
inline constexpr std::size_t kMysqlErrmsgSize = 512;
/// A client-supplied name (user, database, table, variable) echoed in an ERR message is cut to
/// this many bytes, as mysqld prints names from buffers of NAME_LEN (64) characters.
inline constexpr std::size_t kMaxEchoedNameBytes = 64;

/// `text` cut to at most `max_bytes` bytes without splitting a UTF-8 character.
[[nodiscard]] std::string_view clip_utf8(std::string_view text, std::size_t max_bytes);
/// A client-supplied name as echoed in an ERR message: at most kMaxEchoedNameBytes.
[[nodiscard]] std::string clip_for_message(std::string_view name);

/// Maps an engine error (TicketErrc, StorageErrc, SnowflakeErrc, WorkerErrc) to an ERR packet.
/// `table` is the database-qualified name MySQL would print ("tickets.Tickets64") for
/// kUnknownSequence. An error with no row reads as ER_UNKNOWN_ERROR (1105) with its message.
[[nodiscard]] ErrResult to_err(const Error& error, std::string_view qualified_table);

/// The ERR for a COMMIT whose held gapless numbers could not be committed: the engine error's
/// row, its message prefixed as mysqld prefixes a failed commit.
[[nodiscard]] ErrResult to_commit_err(const Error& error);

/// The (errno, SQLSTATE) row of an engine error code, or nullopt when it has none (tests check
/// that every code has one).
struct MySqlErrorRow {
  std::uint16_t mysql_errno = 0;
  std::string_view sql_state;
};
[[nodiscard]] std::optional<MySqlErrorRow> engine_error_row(const ErrorCode& code);

}  // namespace ticketd::mysql
