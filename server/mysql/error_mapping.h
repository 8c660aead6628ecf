// Engine errors to MySQL (errno, SQLSTATE), in one table.
#pragma once

#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/mysql/connection_memory.h"
#include "server/mysql/query_result.h"

namespace ticketd::mysql {

// MySQL error numbers used by the front end (names as in mysqld_error.h).
inline constexpr std::uint16_t kErUnknownComError = 1047;
inline constexpr std::uint16_t kErAccessDenied = 1045;
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
};

[[nodiscard]] ErrResult to_err(LimitErrc code, std::string message);

/// The ERR for a charge `memory` refused (kConnectionMemory or kGlobalMemory, by `verdict`).
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

/// Maps an engine error (TicketErrc or StorageErrc) to an ERR packet. `table` is the
/// database-qualified name MySQL would print ("tickets.Tickets64") for kUnknownSequence.
[[nodiscard]] ErrResult to_err(const Error& error, std::string_view qualified_table);

}  // namespace ticketd::mysql
