#include "server/migrate/mysql_source.h"

#include <mysql.h>
#include <mysqld_error.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "server/base/parse_int.h"

namespace ticketd::migrate {
namespace {

struct CloseMysql {
  void operator()(MYSQL* m) const { mysql_close(m); }
};
struct FreeResult {
  void operator()(MYSQL_RES* r) const { mysql_free_result(r); }
};
using Connection = std::unique_ptr<MYSQL, CloseMysql>;
using ResultSet = std::unique_ptr<MYSQL_RES, FreeResult>;

/// One row of text values; nullopt for SQL NULL.
using Row = std::vector<std::optional<std::string>>;

Error query_error(MYSQL* m, std::string_view what) {
  return Error{ImportErrc::kQueryFailed, std::string(what) + ": " + mysql_error(m) + " (error " +
                                             std::to_string(mysql_errno(m)) + ")"};
}

DetailedResult<std::vector<Row>> query(MYSQL* m, const std::string& sql, std::string_view what) {
  if (mysql_real_query(m, sql.data(), sql.size()) != 0) return query_error(m, what);
  ResultSet result(mysql_store_result(m));
  if (!result) {
    if (mysql_field_count(m) == 0) return std::vector<Row>{};
    return query_error(m, what);
  }
  const unsigned fields = mysql_num_fields(result.get());
  std::vector<Row> rows;
  while (MYSQL_ROW row = mysql_fetch_row(result.get())) {
    const unsigned long* lengths = mysql_fetch_lengths(result.get());
    Row r(fields);
    for (unsigned i = 0; i < fields; ++i) {
      if (row[i] != nullptr) r[i] = std::string(row[i], lengths[i]);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string quote_string(MYSQL* m, std::string_view text) {
  std::string out(text.size() * 2 + 1, '\0');
  const auto n = mysql_real_escape_string(m, out.data(), text.data(), text.size());
  out.resize(n);
  return "'" + out + "'";
}

std::string quote_identifier(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    out += c;
    if (c == '`') out += '`';
  }
  return out + "`";
}

Error bad_answer(std::string what) { return Error{ImportErrc::kBadAnswer, std::move(what)}; }

template <class T>
DetailedResult<T> field(const Row& row, std::size_t i, std::string_view what) {
  if (i >= row.size() || !row[i]) return bad_answer(std::string(what) + " is NULL");
  auto v = parse_int<T>(*row[i]);
  if (!v) return bad_answer(std::string(what) + ": '" + *row[i] + "' is not an integer");
  return *v;
}

DetailedResult<SourceSequence> read_sequence(MYSQL* m, const std::string& database,
                                             const std::string& name) {
  auto rows = query(m,
                    "SELECT next_not_cached_value, increment, start_value, maximum_value, "
                    "cycle_option FROM " +
                        quote_identifier(database) + "." + quote_identifier(name),
                    "reading sequence '" + name + "'");
  if (!rows) return rows.error();
  if (rows->size() != 1) return bad_answer("sequence '" + name + "' has no row");
  const Row& r = rows->front();
  SourceSequence s;
  s.name = name;
  auto next = field<std::int64_t>(r, 0, "next_not_cached_value of '" + name + "'");
  auto increment = field<std::int64_t>(r, 1, "increment of '" + name + "'");
  auto start = field<std::int64_t>(r, 2, "start_value of '" + name + "'");
  auto maximum = field<std::int64_t>(r, 3, "maximum_value of '" + name + "'");
  auto cycle = field<std::int64_t>(r, 4, "cycle_option of '" + name + "'");
  for (const auto* f : {&next, &increment, &start, &maximum, &cycle}) {
    if (!*f) return f->error();
  }
  s.next_not_cached_value = *next;
  s.increment = *increment;
  s.start_value = *start;
  s.maximum_value = *maximum;
  s.cycle = *cycle != 0;
  return s;
}

// Connects over TCP to the URL's server and database, reading no option files.
DetailedResult<Connection> open_connection(const MysqlUrl& url) {
  Connection m(mysql_init(nullptr));
  if (!m) return Error{ImportErrc::kConnectFailed, "mysql_init failed (out of memory)"};
  // TCP even for "localhost" (which Connector/C would take as the Unix socket): the URL names
  // a host and a port. No option files are read (no MYSQL_READ_DEFAULT_*).
  const unsigned protocol = MYSQL_PROTOCOL_TCP;
  const unsigned connect_timeout_s = 10;
  const unsigned read_timeout_s = 60;
  mysql_optionsv(m.get(), MYSQL_OPT_PROTOCOL, &protocol);
  mysql_optionsv(m.get(), MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout_s);
  mysql_optionsv(m.get(), MYSQL_OPT_READ_TIMEOUT, &read_timeout_s);
  mysql_optionsv(m.get(), MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const std::string where = "mysql://" + url.user + "@" + url.host + ":" + std::to_string(url.port);
  if (mysql_real_connect(m.get(), url.host.c_str(), url.user.c_str(),
                         url.password ? url.password->c_str() : nullptr, url.database.c_str(),
                         url.port, nullptr, 0) == nullptr) {
    // The server's message names the user and whether a password was used, never the password.
    return Error{ImportErrc::kConnectFailed, "cannot connect to " + where + "/" + url.database +
                                                 ": " + mysql_error(m.get()) + " (error " +
                                                 std::to_string(mysql_errno(m.get())) + ")"};
  }
  return m;
}

// Reads the server's auto_increment_increment and auto_increment_offset into `out`.
DetailedResult<void> read_auto_increment_grid(MYSQL* m, SourceSnapshot& out) {
  auto rows = query(m, "SELECT @@GLOBAL.auto_increment_increment, @@GLOBAL.auto_increment_offset",
                    "reading auto_increment_increment/offset");
  if (!rows) return rows.error();
  if (rows->size() != 1) return bad_answer("no auto_increment_increment/offset");
  auto inc = field<std::uint64_t>(rows->front(), 0, "auto_increment_increment");
  auto off = field<std::uint64_t>(rows->front(), 1, "auto_increment_offset");
  if (!inc) return inc.error();
  if (!off) return off.error();
  out.auto_increment_increment = *inc;
  out.auto_increment_offset = *off;
  return {};
}

// Whether the user's grants cover the whole of `database`.
DetailedResult<bool> sees_whole_database(MYSQL* m, const std::string& database) {
  // What information_schema shows depends on the user's privileges: with none on the whole
  // database, tables it was not granted are simply not listed.
  auto grants = query(m, "SHOW GRANTS", "reading the user's grants");
  if (!grants) return grants.error();
  std::vector<std::string> lines;
  for (const auto& row : *grants) {
    if (!row.empty() && row[0]) lines.push_back(*row[0]);
  }
  return grants_cover_database(lines, database);
}

// Reads the tables and sequences of `database` (those in `only`, if any) into `out`.
DetailedResult<void> read_tables(MYSQL* m, const std::string& database,
                                 const std::vector<std::string>& only, SourceSnapshot& out) {
  const std::string db = quote_string(m, database);
  auto rows =
      query(m,
            "SELECT t.TABLE_NAME, t.TABLE_TYPE, t.AUTO_INCREMENT, "
            "(SELECT c.COLUMN_TYPE FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = "
            "t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME AND c.EXTRA LIKE '%auto_increment%' "
            "LIMIT 1) FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = " +
                db + " AND t.TABLE_TYPE IN ('BASE TABLE', 'SEQUENCE') ORDER BY t.TABLE_NAME",
            "listing the tables of '" + database + "'");
  if (!rows) return rows.error();
  const std::set<std::string> wanted(only.begin(), only.end());
  std::set<std::string> seen;
  for (const auto& r : *rows) {
    if (r.size() != 4 || !r[0] || !r[1]) return bad_answer("information_schema.TABLES row");
    const std::string& name = *r[0];
    if (!wanted.empty() && !wanted.contains(name)) continue;
    seen.insert(name);
    if (*r[1] == "SEQUENCE") {
      auto s = read_sequence(m, database, name);
      if (!s) return s.error();
      out.sequences.push_back(std::move(*s));
      continue;
    }
    SourceTable t;
    t.name = name;
    if (r[2]) {
      auto next = parse_u64(*r[2]);
      if (!next) return bad_answer("AUTO_INCREMENT of '" + name + "': '" + *r[2] + "'");
      t.auto_increment = *next;
    }
    t.column_type = r[3].value_or("");
    out.tables.push_back(std::move(t));
  }
  for (const auto& name : wanted) {
    if (!seen.contains(name)) out.missing.push_back(name);
  }
  return {};
}

}  // namespace

DetailedResult<SourceSnapshot> read_source(const MysqlUrl& url,
                                           const std::vector<std::string>& only) {
  auto connection = open_connection(url);
  if (!connection) return connection.error();
  MYSQL* m = connection->get();
  // MySQL 8 answers information_schema.TABLES.AUTO_INCREMENT from a statistics cache (up to a
  // day old by default); 0 makes it read the live counter. MariaDB has no such cache and no such
  // variable (ER_UNKNOWN_SYSTEM_VARIABLE), which is fine.
  if (auto r = query(m, "SET SESSION information_schema_stats_expiry = 0", "stats expiry");
      !r && mysql_errno(m) != ER_UNKNOWN_SYSTEM_VARIABLE) {
    return r.error();
  }
  SourceSnapshot out;
  if (auto r = read_auto_increment_grid(m, out); !r) return r.error();
  auto whole = sees_whole_database(m, url.database);
  if (!whole) return whole.error();
  out.partial_view = !*whole;
  if (auto r = read_tables(m, url.database, only, out); !r) return r.error();
  return out;
}

}  // namespace ticketd::migrate
