// Per-connection state of the MySQL front end.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/base/string_hash.h"
#include "server/core/gapless_sequence.h"
#include "server/mysql/connection_memory.h"
#include "server/mysql/query_result.h"
#include "server/net/completion.h"
#include "server/sql/statement.h"

namespace ticketd::mysql {

/// Server-wide settings the front end reports and enforces.
struct ServerSettings {
  std::string database = "tickets";
  std::string version = "8.0.36-ticketd";  // parses as a modern MySQL for drivers that branch
  std::string version_comment = "ticketd durable ticket server";
  std::uint64_t auto_increment_increment = 1;
  std::uint64_t auto_increment_offset = 1;
  std::uint64_t default_cache = 1000;
  std::uint32_t max_allowed_packet = 16 * 1024 * 1024;
  std::uint32_t wait_timeout_s = 28800;
  std::uint32_t net_read_timeout_s = 30;
  std::uint32_t net_write_timeout_s = 60;
  std::uint32_t connect_timeout_s = 10;
  std::uint32_t max_connections = 10000;
  std::uint32_t max_prepared_stmt_count = 16382;
  // Largest SELECT NEXT n VALUES / multi-row insert: the one limit of IDs per call.
  std::uint64_t max_block = kMaxIdsPerCall;
  // Bytes one connection may keep between commands (long data, prepared statement texts,
  // variables), and all connections together; as MySQL 8's variables of the same names.
  std::uint64_t connection_memory_limit = 64ULL * 1024 * 1024;
  std::uint64_t global_connection_memory_limit = 1024ULL * 1024 * 1024;
  bool tls = false;                                           // have_ssl: YES or DISABLED
  bool require_secure_transport = false;                      // require_secure_transport
  std::string default_auth_plugin = "mysql_native_password";  // default_authentication_plugin
};

/// Session overrides (SET @@x) and user variables (SET @x) a session may hold, each: mysqld has
/// no such bound, but a ticket server's clients set a handful at connect time.
inline constexpr std::size_t kMaxSessionVariables = 1024;

/// A gapless number reserved inside the session's open transaction: COMMIT commits it,
/// ROLLBACK, COM_RESET_CONNECTION or the end of the connection release it.
struct GaplessHold {
  std::shared_ptr<GaplessSequence> sequence;
  std::string reservation_id;
  std::uint64_t number = 0;
};

struct Warning {
  std::string level;  // "Note", "Warning", "Error"
  std::uint16_t code = 0;
  std::string message;
};

/// A statement text recognized once per connection, with the result columns its last execution
/// described (filled by the executor when they depend on nothing but the text and the current
/// database, i.e. no @@variable column).
struct ParsedStatement {
  sql::Statement statement;
  struct Columns {
    std::string database;
    ColumnList columns;
  };
  mutable std::optional<Columns> columns;
};

/// What a connection keeps for its whole life: who it is, its TLS, where the engine's answers
/// resume, and its current database (which COM_RESET_CONNECTION keeps, as MySQL does).
struct ConnectionState {
  std::uint32_t connection_id = 0;
  std::string user;
  std::string host;
  std::string database;     // current database; empty when none selected
  std::string tls_version;  // e.g. "TLSv1.3"; empty outside TLS (Ssl_version)
  std::string tls_cipher;   // Ssl_cipher
  // Where the engine's answers to this connection's statements resume: every callback given to
  // the engine is wrapped by completion->resume(), so its work runs on the session's strand.
  std::shared_ptr<net::Completion> completion = std::make_shared<net::Completion>();
};

/// What the SQL session holds between statements, all of which COM_RESET_CONNECTION starts
/// afresh (one assignment of a new SqlSessionState, with a new memory account).
struct SqlSessionState {
  SqlSessionState() = default;
  explicit SqlSessionState(ConnectionMemory account) : memory(std::move(account)) {}

  bool autocommit = true;
  bool in_transaction = false;
  std::uint64_t last_insert_id = 0;
  std::map<std::string, std::string> variables;       // session overrides, lower-case names
  std::map<std::string, std::string> user_variables;  // @name
  std::uint64_t variable_bytes = 0;                   // names + values of both maps above
  ConnectionMemory memory;                            // this connection's budget
  std::map<std::string, std::uint64_t> last_values;   // LASTVAL(s) per sequence
  std::vector<Warning> warnings;                      // of the previous statement
  std::vector<GaplessHold> gapless_holds;             // reserved in the open transaction
  std::uint64_t queries = 0;
  // Recently recognized statement texts. Drivers send the same few texts over and over (the
  // Flickr recipe is two); recognizing them once per connection saves the lexer's work.
  StringMap<std::shared_ptr<const ParsedStatement>> parsed;
  // The running statement's completion while the executor times it (one statement at a time),
  // kept here so the timing wrapper captures two pointers and allocates nothing.
  struct TimedStatement {
    std::function<void(QueryResult&&)> done;
    std::string_view kind;
    std::chrono::steady_clock::time_point start;
  } timed;
};

/// What one connection remembers between statements. Owned by the session; not shared.
struct SessionState : ConnectionState, SqlSessionState {
  /// COM_RESET_CONNECTION: the SQL session starts afresh on `account`; the connection's own
  /// state stays.
  void reset_sql(ConnectionMemory account) {
    static_cast<SqlSessionState&>(*this) = SqlSessionState(std::move(account));
  }
};

}  // namespace ticketd::mysql
