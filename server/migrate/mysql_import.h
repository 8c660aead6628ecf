// `ticketd import`: moving the counters of a live MySQL/MariaDB ticket server into ticketd.
// This header holds the pure parts (the URL, what was read from the old server, the plan and the
// decision per sequence); mysql_source.h reads the server, import_command.h wires both to the
// store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/result.h"
#include "server/core/sequence_spec.h"

namespace ticketd::migrate {

/// Error codes of an import: the command line, the old server, what it answered.
enum class ImportErrc {
  kBadUrl = 1,     // --from is not mysql://USER[:PASS]@HOST[:PORT]/DB
  kConnectFailed,  // the old server refused or could not be reached
  kQueryFailed,    // a query on the old server failed
  kBadAnswer,      // the old server answered something this code cannot read
};
const boost::system::error_category& import_category() noexcept;
inline boost::system::error_code make_error_code(ImportErrc e) noexcept {
  return {static_cast<int>(e), import_category()};
}

/// Where the old server is: `mysql://USER[:PASS]@HOST[:PORT]/DB`. USER and PASS may be
/// percent-encoded (a '@' or ':' in a password is %40 or %3A); HOST may be an IPv6 address in
/// brackets; PORT defaults to 3306.
struct MysqlUrl {
  std::string user;
  std::optional<std::string> password;  // none in the URL: MYSQL_PWD, else no password
  std::string host;
  std::uint16_t port = 3306;
  std::string database;
};

/// Parses `--from`. An error message never repeats the text, which may hold a password.
[[nodiscard]] DetailedResult<MysqlUrl> parse_mysql_url(std::string_view text);

/// Where the password of a `mysql://` URL is in `text` (offset, length; length may be 0), so the
/// command can blank it in its argv, as the mysql client does, before the process list shows
/// it for long; none when the text has no password.
struct TextSpan {
  std::size_t offset = 0;
  std::size_t length = 0;
  friend bool operator==(const TextSpan&, const TextSpan&) = default;
};
[[nodiscard]] std::optional<TextSpan> password_span(std::string_view text);

/// The URL with the password replaced by "***" (or without one), fit for output and logs.
[[nodiscard]] std::string masked(const MysqlUrl& url);

/// One base table of the old database, as information_schema.TABLES shows it.
struct SourceTable {
  std::string name;
  std::optional<std::uint64_t> auto_increment;  // the next value; none: no AUTO_INCREMENT column
  std::string column_type;  // of the AUTO_INCREMENT column, e.g. "int(10) unsigned"
};

/// One MariaDB SEQUENCE object, read from the sequence table itself.
struct SourceSequence {
  std::string name;
  std::int64_t next_not_cached_value = 1;  // above every value the server may have handed out
  std::int64_t increment = 1;              // 0: the server's auto_increment_increment/offset
  std::int64_t start_value = 1;
  std::int64_t maximum_value = 0;
  bool cycle = false;
};

/// Everything an import reads from the old server, in one struct.
struct SourceSnapshot {
  std::uint64_t auto_increment_increment = 1;  // @@GLOBAL values
  std::uint64_t auto_increment_offset = 1;
  std::vector<SourceTable> tables;
  std::vector<SourceSequence> sequences;
  std::vector<std::string> missing;  // names given to --tables that the database does not hold
  /// The user's grants do not cover the whole database (grants_cover_database): the listing
  /// holds only the tables it was granted, and others may exist that it cannot see.
  bool partial_view = false;
};

/// Whether grants (SHOW GRANTS lines of the importing user) let it see every table of `db`
/// in information_schema: a privilege other than USAGE on *.* or on `db`.* (any quoting). Role
/// grants and wildcard database names are not followed: the answer is then false, and the
/// import asks to be told that the visible tables are all it should take.
[[nodiscard]] bool grants_cover_database(const std::vector<std::string>& grants,
                                         std::string_view db);

/// An increment/offset pair in ticketd's form: 1 <= offset <= increment.
struct Grid {
  std::uint64_t increment = 1;
  std::uint64_t offset = 1;
  friend bool operator==(const Grid&, const Grid&) = default;
};

/// The grid of a server's AUTO_INCREMENT values. MySQL documents an offset above the increment
/// as "ignored", yet the server's next-value formula then issues values ≡ offset (mod
/// increment): MariaDB 10.11 (InnoDB) at 3/5 issues 101, 104, 107. The grid returned is the one
/// the server really issues on, offset reduced into 1..increment; an increment of 0 counts as 1,
/// as the server treats it.
[[nodiscard]] Grid server_grid(std::uint64_t increment, std::uint64_t offset);

/// The first value v on `grid` with v >= next + margin; none when it would pass `max_value`.
[[nodiscard]] std::optional<std::uint64_t> first_value(std::uint64_t next, std::uint64_t margin,
                                                       Grid grid, std::uint64_t max_value);

/// The largest value a MySQL integer column type holds ("bigint(20) unsigned",
/// "int(11)"); none for a type this code does not know (DOUBLE, say).
[[nodiscard]] std::optional<std::uint64_t> column_type_max(std::string_view column_type);

enum class SourceKind { kAutoIncrement, kSequence };

/// One ticketd ticket sequence the import makes exist: `spec.start` is its first value.
struct PlannedSequence {
  SourceKind source = SourceKind::kAutoIncrement;
  std::uint64_t old_next =
      0;  // the old server's next value (AUTO_INCREMENT, next_not_cached_value)
  SequenceSpec spec;
  std::string note;  // something the operator should know, or empty
};

/// A table or sequence of the old server that gets no ticketd sequence, and why.
struct SkippedSource {
  std::string name;
  std::string reason;
};

struct ImportPlan {
  std::vector<PlannedSequence> sequences;
  std::vector<SkippedSource> skipped;
};

/// The default --margin: values left unused above the old server's next value, so that tickets
/// it hands out between the read and the switch-over (up to that many) cannot collide.
inline constexpr std::uint64_t kDefaultMargin = 1000;
/// Largest --margin (so next + margin never overflows 128-bit arithmetic on the grid).
inline constexpr std::uint64_t kMaxMargin = std::uint64_t{1} << 62;

/// From what was read to the list of sequences to create or advance. AUTO_INCREMENT tables are
/// on the server's grid; a SEQUENCE on its own increment, offset ≡ start_value (the progression
/// it was declared with: START WITH 100 INCREMENT BY 5 gives 5/5, the multiples of 5), or on the
/// server's grid for INCREMENT BY 0 (as MariaDB does). Names ticketd cannot take, descending
/// sequences, tables without AUTO_INCREMENT and counters with no value left are skipped.
[[nodiscard]] ImportPlan plan_import(const SourceSnapshot& source, std::uint64_t margin);

/// What ticketd already holds under a planned name.
struct ExistingSequence {
  SequenceKind kind = SequenceKind::kTicket;
  Grid grid;
  std::uint64_t next_value = 0;  // the value the next call would get
  bool exhausted = false;
};

enum class ImportAction { kCreate, kAdvance, kUnchanged, kRefuse };
[[nodiscard]] std::string_view action_name(ImportAction action);

struct ImportDecision {
  ImportAction action = ImportAction::kCreate;
  std::string reason;  // for kRefuse
};

/// Never lowers: an existing ticket sequence on the same grid moves forward only when its next
/// value is below the planned first value; another grid or another kind is refused, never
/// re-gridded.
[[nodiscard]] ImportDecision decide(const PlannedSequence& planned,
                                    const std::optional<ExistingSequence>& existing);

}  // namespace ticketd::migrate

template <>
struct boost::system::is_error_code_enum<ticketd::migrate::ImportErrc> : std::true_type {};
