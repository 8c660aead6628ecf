// Engine errors to MySQL (errno, SQLSTATE), in one table.
#pragma once

#include <string>
#include <string_view>

#include "server/base/result.h"
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

/// Maps an engine error (TicketErrc or StorageErrc) to an ERR packet. `table` is the
/// database-qualified name MySQL would print ("tickets.Tickets64") for kUnknownSequence.
[[nodiscard]] ErrResult to_err(const Error& error, std::string_view qualified_table);

}  // namespace ticketd::mysql
