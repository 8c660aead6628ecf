// The statements ticketd understands, as plain structs in one std::variant.
//
// A Statement is what recognize() (server/sql/recognizer.h) makes of one SQL statement. It owns
// all its strings, so it outlives the query text. Names keep the case they were written in;
// variable names are lower-cased because MySQL treats them case-insensitively.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ticketd::sql {

/// A possibly schema-qualified name: `db`.`Tickets64`, Tickets64. `schema` is empty when the
/// statement did not give one.
struct TableName {
  std::string schema;
  std::string name;

  bool operator==(const TableName&) const = default;
};

enum class LiteralKind {
  kNull,
  kInteger,  // fits std::int64_t; TRUE and FALSE become 1 and 0
  kDecimal,  // any other number (1.5, 1e3, 0x1F, integers outside int64)
  kString,
  kWord,     // a bare word where MySQL accepts one as a value: ON, OFF, utf8mb4, InnoDB
  kDefault,  // the DEFAULT keyword (SET sql_select_limit = DEFAULT)
};

/// A constant value. `text` holds the decoded string for kString, the word as written for kWord,
/// and the number as written (with a leading '-' when negated) for numbers.
struct Literal {
  LiteralKind kind = LiteralKind::kNull;
  std::string text;
  std::int64_t integer = 0;  // kInteger only

  bool operator==(const Literal&) const = default;
};

/// Scope of a system variable. kDefault means no scope was written: session for SET, "session if
/// it exists, else global" for SELECT @@var. LOCAL is reported as kSession.
enum class VariableScope { kDefault, kSession, kGlobal, kPersist, kPersistOnly };

// ---- Tickets -------------------------------------------------------------------------------

/// INSERT/REPLACE [IGNORE] INTO t [(cols)] VALUES (...)[, (...)] or ... SET col = expr, ...
/// Values are kept as raw SQL text ('a', ?, DEFAULT, NULL); `rows` == values.size().
struct InsertTicket {
  static constexpr std::string_view kName = "insert_ticket";
  TableName table;
  std::vector<std::string> columns;              // empty when no column list was given
  std::vector<std::vector<std::string>> values;  // one entry per row
  std::size_t rows = 0;
  bool is_replace = false;
  bool is_ignore = false;
  std::optional<std::string> on_duplicate_key_update;  // raw text after ON DUPLICATE KEY UPDATE
};

/// `col = literal` in a WHERE clause.
struct ColumnEquals {
  std::string column;
  Literal value;
};

/// UPDATE t SET col = LAST_INSERT_ID(col + delta) [WHERE c = v] [LIMIT n]: the counter idiom from
/// the MySQL manual's LAST_INSERT_ID() documentation.
struct UpdateCounter {
  static constexpr std::string_view kName = "update_counter";
  TableName table;
  std::string column;
  std::int64_t delta = 0;
  std::optional<ColumnEquals> where;
};

enum class SelectItemKind {
  kLiteral,         // 1, 'x', NULL
  kSystemVariable,  // @@[scope.]name (except @@identity / @@last_insert_id)
  kUserVariable,    // @name
  kLastInsertId,    // LAST_INSERT_ID(), @@identity, @@last_insert_id
  kDatabase,        // DATABASE(), SCHEMA()
  kVersion,         // VERSION()
  kUser,            // USER(), SESSION_USER(), SYSTEM_USER()
  kCurrentUser,     // CURRENT_USER(), CURRENT_USER
  kConnectionId,    // CONNECTION_ID()
  kNow,             // NOW(), CURRENT_TIMESTAMP[()], LOCALTIME[()], LOCALTIMESTAMP[()], SYSDATE()
  kUtcTimestamp,    // UTC_TIMESTAMP[()]
  kUuidV7,          // UUID_V7() (MariaDB 11.7)
  kUlid,            // ULID(): a ULID as 26 characters of Crockford base32
  kNextValue,       // NEXTVAL(s), NEXT VALUE FOR s
  kLastValue,       // LASTVAL(s), PREVIOUS VALUE FOR s
  kSetValue,        // SETVAL(s, n [, is_used [, round]])
};

/// One item of a SELECT list. `text` is the item exactly as written (without the alias); MySQL
/// names the result column after it when there is no alias, see column_name().
struct SelectItem {
  SelectItemKind kind = SelectItemKind::kLiteral;
  std::string text;
  std::optional<std::string> alias;
  Literal literal;                                // kLiteral
  VariableScope scope = VariableScope::kDefault;  // kSystemVariable
  std::string variable;                           // kSystemVariable, kUserVariable (lower case)
  TableName sequence;                             // kNextValue, kLastValue, kSetValue
  std::int64_t setval_value = 0;                  // kSetValue
  bool setval_is_used = true;                     // kSetValue
  std::uint64_t setval_round = 0;                 // kSetValue
  unsigned fractional_seconds = 0;                // kNow, kUtcTimestamp: NOW(3)

  [[nodiscard]] const std::string& column_name() const { return alias ? *alias : text; }
};

/// SELECT item, ... [FROM DUAL] [LIMIT [offset,] n]. The connect-time chatter of every driver
/// (`select @@version_comment limit 1`, Connector/J's variable list) and sequence functions.
struct Select {
  static constexpr std::string_view kName = "select";
  std::vector<SelectItem> items;
  std::optional<std::uint64_t> limit;
  std::optional<std::uint64_t> offset;
};

/// Vitess: SELECT NEXT n VALUES FROM s (and SELECT NEXT VALUE FROM s, count 1).
struct SelectNextBlock {
  static constexpr std::string_view kName = "select_next_block";
  TableName sequence;
  std::int64_t count = 1;
};

// ---- Sequences (MariaDB syntax) --------------------------------------------------------------

/// The options of CREATE/ALTER SEQUENCE; an empty optional means the option was not given.
struct SequenceOptions {
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> increment;
  std::optional<std::int64_t> min_value;
  bool no_min_value = false;  // NO MINVALUE / NOMINVALUE
  std::optional<std::int64_t> max_value;
  bool no_max_value = false;          // NO MAXVALUE / NOMAXVALUE
  std::optional<std::int64_t> cache;  // NOCACHE is CACHE 0
  bool no_cycle = false;              // NOCYCLE given (CYCLE itself is unsupported)
  std::optional<std::string> engine;
  // ALTER SEQUENCE only: RESTART alone restarts at START; RESTART [WITH|=] n at n.
  bool restart = false;
  std::optional<std::int64_t> restart_with;
};

struct CreateSequence {
  static constexpr std::string_view kName = "create_sequence";
  TableName name;
  bool if_not_exists = false;
  bool or_replace = false;
  SequenceOptions options;
};

struct AlterSequence {
  static constexpr std::string_view kName = "alter_sequence";
  TableName name;
  bool if_exists = false;
  SequenceOptions options;
};

struct DropSequence {
  static constexpr std::string_view kName = "drop_sequence";
  std::vector<TableName> names;
  bool if_exists = false;
};

struct ShowCreateSequence {
  static constexpr std::string_view kName = "show_create_sequence";
  TableName name;
};

// ---- Tables --------------------------------------------------------------------------------

/// One column of CREATE TABLE. `type` is the type as written with its arguments ("bigint(20)",
/// "enum('a','b')"); `type_name` is its first word in lower case ("bigint").
struct ColumnDefinition {
  std::string name;
  std::string type;
  std::string type_name;
  bool is_unsigned = false;
  bool is_nullable = true;
  bool is_auto_increment = false;
  bool is_primary_key = false;               // PRIMARY KEY written on the column
  bool is_unique = false;                    // UNIQUE [KEY] written on the column
  std::optional<std::string> default_value;  // raw SQL text: '', 0, CURRENT_TIMESTAMP, (expr)
  std::string comment;
};

enum class IndexKind { kPrimary, kUnique, kIndex, kFulltext, kSpatial, kForeign, kCheck };

/// A table-level key/constraint line. `columns` holds column names (or raw text of functional
/// key parts); it is empty for CHECK.
struct IndexDefinition {
  IndexKind kind = IndexKind::kIndex;
  std::string name;  // index name or CONSTRAINT symbol; empty when not given
  std::vector<std::string> columns;
};

/// Table options other than AUTO_INCREMENT, which the statements report on their own.
struct TableOptions {
  std::string engine;
  std::string charset;
  std::string collation;
  std::string comment;
  std::vector<std::pair<std::string, std::string>> other;  // ROW_FORMAT=DYNAMIC etc., name upper
};

struct CreateTable {
  static constexpr std::string_view kName = "create_table";
  TableName name;
  bool if_not_exists = false;
  std::vector<ColumnDefinition> columns;
  std::vector<IndexDefinition> indexes;
  std::optional<std::uint64_t> auto_increment_start;
  TableOptions options;
};

/// ALTER TABLE t AUTO_INCREMENT [=] n (and other table options); anything else is unsupported.
struct AlterTable {
  static constexpr std::string_view kName = "alter_table";
  TableName table;
  std::optional<std::uint64_t> auto_increment;
  TableOptions options;
};

struct DropTable {
  static constexpr std::string_view kName = "drop_table";
  std::vector<TableName> names;
  bool if_exists = false;
};

struct TruncateTable {
  static constexpr std::string_view kName = "truncate_table";
  TableName table;
};

/// [LIKE 'pattern' | WHERE col = 'x' [OR col = 'y' | OR col IN ('a', ...)]...] of SHOW statements.
/// A row matches when its first column matches `like` (if set) and, if `has_where`, its column
/// named `where_column` (compared case-insensitively; usually the first, e.g. Variable_name) is
/// one of `where_values` (kept lowercased, sorted and unique). Any other WHERE clause is reported
/// as unsupported.
struct ShowFilter {
  std::optional<std::string> like;
  bool has_where = false;
  std::string where_column;  // as written, e.g. Variable_name
  std::vector<std::string> where_values;
};

struct ShowTables {
  static constexpr std::string_view kName = "show_tables";
  bool full = false;
  std::string schema;  // FROM/IN db; empty for the current database
  ShowFilter filter;
};

struct ShowCreateTable {
  static constexpr std::string_view kName = "show_create_table";
  TableName table;
};

/// SHOW [FULL] COLUMNS|FIELDS FROM t [FROM db], DESCRIBE t [col], DESC t, EXPLAIN t.
struct ShowColumns {
  static constexpr std::string_view kName = "show_columns";
  TableName table;
  bool full = false;
  ShowFilter filter;
};

struct ShowTableStatus {
  static constexpr std::string_view kName = "show_table_status";
  std::string schema;
  ShowFilter filter;
};

// ---- Session -------------------------------------------------------------------------------

enum class AssignmentTarget {
  kSystemVariable,  // [GLOBAL|SESSION|...] var = expr, @@[scope.]var = expr
  kUserVariable,    // @var = expr
  kNames,           // SET NAMES charset [COLLATE collation]: expr is the charset
  kCharacterSet,    // SET CHARACTER SET charset / SET CHARSET charset
};

/// One assignment of a SET statement. `expr` is the right-hand side as written (trimmed);
/// `value` is set when that is a plain literal, for everything else see evaluate_simple().
struct Assignment {
  AssignmentTarget target = AssignmentTarget::kSystemVariable;
  VariableScope scope = VariableScope::kDefault;
  std::string name;  // lower case; empty for kNames and kCharacterSet
  std::string expr;
  std::optional<Literal> value;
  std::string collation;  // kNames with COLLATE
};

struct SetStatement {
  static constexpr std::string_view kName = "set";
  std::vector<Assignment> assignments;
};

/// SET [GLOBAL|SESSION] TRANSACTION ISOLATION LEVEL ... | READ ONLY | READ WRITE.
struct SetTransaction {
  static constexpr std::string_view kName = "set_transaction";
  VariableScope scope = VariableScope::kDefault;
  std::optional<std::string> isolation_level;  // "READ COMMITTED", "SERIALIZABLE", ...
  std::optional<bool> read_only;
};

struct ShowVariables {
  static constexpr std::string_view kName = "show_variables";
  VariableScope scope = VariableScope::kDefault;
  ShowFilter filter;
};

struct ShowStatus {
  static constexpr std::string_view kName = "show_status";
  VariableScope scope = VariableScope::kDefault;
  ShowFilter filter;
};

struct ShowWarnings {
  static constexpr std::string_view kName = "show_warnings";
  std::optional<std::uint64_t> limit;
  std::optional<std::uint64_t> offset;
};

struct ShowErrors {
  static constexpr std::string_view kName = "show_errors";
  std::optional<std::uint64_t> limit;
  std::optional<std::uint64_t> offset;
};

/// SHOW DATABASES / SHOW SCHEMAS.
struct ShowDatabases {
  static constexpr std::string_view kName = "show_databases";
  ShowFilter filter;
};

struct ShowEngines {
  static constexpr std::string_view kName = "show_engines";
};

struct ShowCollation {
  static constexpr std::string_view kName = "show_collation";
  ShowFilter filter;
};

/// SHOW CHARACTER SET / SHOW CHARSET.
struct ShowCharacterSet {
  static constexpr std::string_view kName = "show_character_set";
  ShowFilter filter;
};

struct ShowProcesslist {
  static constexpr std::string_view kName = "show_processlist";
  bool full = false;
};

struct Use {
  static constexpr std::string_view kName = "use";
  std::string schema;
};

/// BEGIN [WORK] / START TRANSACTION [READ ONLY | READ WRITE | WITH CONSISTENT SNAPSHOT, ...].
struct Begin {
  static constexpr std::string_view kName = "begin";
  bool read_only = false;
  bool with_consistent_snapshot = false;
};

struct Commit {
  static constexpr std::string_view kName = "commit";
};

struct Rollback {
  static constexpr std::string_view kName = "rollback";
};

/// DO expr [, expr]: evaluate and discard. `expr` is the raw text of the list.
struct Do {
  static constexpr std::string_view kName = "do";
  std::string expr;
};

/// KILL [CONNECTION | QUERY] id.
struct Kill {
  static constexpr std::string_view kName = "kill";
  bool query_only = false;
  std::uint64_t connection_id = 0;
};

// ---- Not understood ------------------------------------------------------------------------

enum class UnrecognizedKind {
  kSyntaxError,     // ER_PARSE_ERROR 1064: "... near '<near>' at line <line>"
  kUnsupported,     // ER_NOT_SUPPORTED_YET 1235: "This version of ticketd doesn't yet support
                    // '<near>'"
  kEmptyQuery,      // ER_EMPTY_QUERY 1065: only whitespace and comments
  kTooManyTokens,   // more than kMaxStatementTokens tokens (token_cursor.h): not lexed further
  kTooManyColumns,  // a select list longer than kMaxSelectItems: not parsed further
};

/// The longest select list, mysqld's MAX_FIELDS (ER_TOO_MANY_FIELDS beyond it).
inline constexpr std::size_t kMaxSelectItems = 4096;

/// What recognize() could not make sense of. For kSyntaxError `near` is the rest of the query
/// from the offending token (MySQL prints at most 80 characters of it, the caller truncates) and
/// `line` is that token's 1-based line. For kUnsupported `near` names the feature.
struct Unrecognized {
  static constexpr std::string_view kName = "unrecognized";
  UnrecognizedKind kind = UnrecognizedKind::kSyntaxError;
  std::string near;
  std::size_t line = 1;
};

using Statement = std::variant<
    InsertTicket, UpdateCounter, Select, SelectNextBlock, CreateSequence, AlterSequence,
    DropSequence, ShowCreateSequence, CreateTable, AlterTable, DropTable, TruncateTable, ShowTables,
    ShowCreateTable, ShowColumns, ShowTableStatus, SetStatement, SetTransaction, ShowVariables,
    ShowStatus, ShowWarnings, ShowErrors, ShowDatabases, ShowEngines, ShowCollation,
    ShowCharacterSet, ShowProcesslist, Use, Begin, Commit, Rollback, Do, Kill, Unrecognized>;

/// A stable snake_case name for logs and metrics labels: "insert_ticket", "show_variables", ...
/// Unrecognized statements report "syntax_error", "unsupported", "empty_query",
/// "too_many_tokens" or "too_many_columns".
[[nodiscard]] std::string_view statement_kind_name(const Statement& statement);

/// A compact one-line rendering of the statement's fields, for debug logs and tests, e.g.
/// `insert_ticket table=Tickets64 columns=stub rows=1 values=('a') replace`.
[[nodiscard]] std::string describe(const Statement& statement);

}  // namespace ticketd::sql
