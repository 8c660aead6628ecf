#include "server/mysql/server_variables.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <vector>

namespace ticketd::mysql {
namespace {

struct Fixed {
  const char* name;
  const char* value;
  bool numeric;
};

// Settings drivers read at connect time (Connector/J, PyMySQL, mysqlclient, Go, PHP, the CLI).
// Values describe what ticketd really does: utf8mb4 everywhere, UTC, no binlog.
constexpr Fixed kFixed[] = {
    {"auto_increment_lock_mode", "2", true},
    {"character_set_client", "utf8mb4", false},
    {"character_set_connection", "utf8mb4", false},
    {"character_set_database", "utf8mb4", false},
    {"character_set_filesystem", "binary", false},
    {"character_set_results", "utf8mb4", false},
    {"character_set_server", "utf8mb4", false},
    {"character_set_system", "utf8mb3", false},
    {"collation_connection", "utf8mb4_general_ci", false},
    {"collation_database", "utf8mb4_general_ci", false},
    {"collation_server", "utf8mb4_general_ci", false},
    {"default_storage_engine", "InnoDB", false},
    {"init_connect", "", false},
    {"interactive_timeout", "28800", true},
    {"license", "GPL", false},
    {"lower_case_table_names", "0", true},
    {"net_buffer_length", "16384", true},
    {"performance_schema", "0", true},
    {"port", "3306", true},
    {"protocol_version", "10", true},
    {"query_cache_size", "0", true},
    {"query_cache_type", "OFF", false},
    {"read_only", "0", true},
    {"session_track_schema", "ON", false},
    {"sql_auto_is_null", "0", true},
    {"sql_mode", "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", false},
    {"sql_select_limit", "18446744073709551615", true},
    {"system_time_zone", "UTC", false},
    {"time_zone", "SYSTEM", false},
    {"transaction_isolation", "REPEATABLE-READ", false},
    {"transaction_read_only", "0", true},
    {"tx_isolation", "REPEATABLE-READ", false},
    {"tx_read_only", "0", true},
    {"wait_timeout", "28800", true},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

VariableValue num(std::uint64_t v) { return VariableValue{std::to_string(v), true}; }

// The server's own value of `key` (lower case): a setting, else the fixed table. No session
// overrides.
std::optional<VariableValue> server_value(const ServerSettings& s, const SessionState& session,
                                          std::string_view key, bool global) {
  if (key == "auto_increment_increment") return num(s.auto_increment_increment);
  if (key == "auto_increment_offset") return num(s.auto_increment_offset);
  if (key == "max_allowed_packet") return num(s.max_allowed_packet);
  if (key == "wait_timeout") return num(s.wait_timeout_s);
  if (key == "net_read_timeout") return num(s.net_read_timeout_s);
  if (key == "net_write_timeout") return num(s.net_write_timeout_s);
  if (key == "connect_timeout") return num(s.connect_timeout_s);
  if (key == "max_connections") return num(s.max_connections);
  if (key == "max_prepared_stmt_count") return num(s.max_prepared_stmt_count);
  if (key == "connection_memory_limit") return num(s.connection_memory_limit);
  if (key == "global_connection_memory_limit") return num(s.global_connection_memory_limit);
  if (key == "have_ssl" || key == "have_openssl") {
    return VariableValue{s.tls ? "YES" : "DISABLED", false};
  }
  if (key == "require_secure_transport") {
    return VariableValue{s.require_secure_transport ? "ON" : "OFF", false};
  }
  if (key == "default_authentication_plugin") return VariableValue{s.default_auth_plugin, false};
  if (key == "version") return VariableValue{s.version, false};
  if (key == "version_comment") return VariableValue{s.version_comment, false};
  if (key == "autocommit") return VariableValue{global || session.autocommit ? "1" : "0", true};
  const auto* f = std::find_if(std::begin(kFixed), std::end(kFixed),
                               [key](const Fixed& f) { return key == f.name; });
  if (f == std::end(kFixed)) return std::nullopt;
  return VariableValue{f->value, f->numeric};
}

// A session override reads as a number when it is one that fits BIGINT UNSIGNED (at most 20
// digits). The length bound also keeps the check cheap: `SELECT @@v, @@v, ...` asks it once per
// item, and @@v may be megabytes.
bool is_number(std::string_view v) {
  return !v.empty() && v.size() <= 20 &&
         std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

std::optional<VariableValue> lookup_variable(const ServerSettings& settings,
                                             const SessionState& session, std::string_view name,
                                             bool global) {
  // One lookup per reference, whatever the session holds: a query naming @@x thousands of
  // times must not copy every session variable each time.
  const auto key = lower(name);
  if (!global) {
    if (key == "identity" || key == "last_insert_id") {
      return VariableValue{std::to_string(session.last_insert_id), true};
    }
    if (auto it = session.variables.find(key); it != session.variables.end()) {
      return VariableValue{it->second, is_number(it->second)};
    }
  }
  return server_value(settings, session, key, global);
}

std::optional<bool> variable_is_numeric(const ServerSettings& settings, const SessionState& session,
                                        std::string_view name, bool global) {
  const auto key = lower(name);
  if (!global) {
    if (key == "identity" || key == "last_insert_id") return true;
    if (auto it = session.variables.find(key); it != session.variables.end()) {
      return is_number(it->second);
    }
  }
  // Server values are short: copying one is cheap.
  auto v = server_value(settings, session, key, global);
  if (!v) return std::nullopt;
  return v->numeric;
}

std::vector<std::pair<std::string, std::string>> all_variables(const ServerSettings& settings,
                                                               const SessionState& session,
                                                               bool global) {
  std::map<std::string, std::string> t;
  for (const auto& f : kFixed) t[f.name] = server_value(settings, session, f.name, global)->value;
  for (const char* k :
       {"auto_increment_increment", "auto_increment_offset", "max_allowed_packet",
        "net_read_timeout", "net_write_timeout", "connect_timeout", "max_connections",
        "max_prepared_stmt_count", "connection_memory_limit", "global_connection_memory_limit",
        "version", "version_comment", "autocommit", "have_ssl", "have_openssl",
        "require_secure_transport", "default_authentication_plugin"}) {
    t[k] = server_value(settings, session, k, global)->value;
  }
  if (!global) {
    for (const auto& [k, v] : session.variables) t[k] = v;
  }
  return {t.begin(), t.end()};
}

namespace {

// One element of a LIKE pattern: a character (escaped or not), '_' or a run of '%'.
struct LikeToken {
  enum Kind : std::uint8_t { kChar, kAny, kStar } kind;
  char c = 0;
};

bool same_letter(char a, char b) {
  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
}

}  // namespace

bool like_match(std::string_view text, std::string_view pattern) {
  // Every token but '%' consumes one character of the text, so a pattern with more of them than
  // the text has characters cannot match: decided in one pass, whatever the pattern's length (a
  // megabyte of '%a' costs a megabyte of reading, not a megabyte times the text).
  std::size_t needed = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%') continue;
    if (pattern[i] == '\\' && i + 1 < pattern.size()) ++i;
    if (++needed > text.size()) return false;
  }
  // What is left has at most text.size() character tokens and one '%' between each two (runs
  // of '%' are one): at most 2 × text.size() + 1 tokens.
  std::vector<LikeToken> tokens;
  tokens.reserve(2 * needed + 1);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char pc = pattern[i];
    if (pc == '%') {
      if (tokens.empty() || tokens.back().kind != LikeToken::kStar) {
        tokens.push_back({LikeToken::kStar});
      }
    } else if (pc == '\\' && i + 1 < pattern.size()) {
      tokens.push_back({LikeToken::kChar, pattern[++i]});
    } else if (pc == '_') {
      tokens.push_back({LikeToken::kAny});
    } else {
      tokens.push_back({LikeToken::kChar, pc});
    }
  }
  // Greedy with backtracking to the last '%' only: O(text × tokens), both bounded by the text,
  // which is a name (64 characters at most).
  std::size_t t = 0, p = 0, star_p = tokens.size(), star_t = 0;
  while (t < text.size()) {
    if (p < tokens.size() && tokens[p].kind == LikeToken::kStar) {
      star_p = p++;
      star_t = t;
      continue;
    }
    if (p < tokens.size() &&
        (tokens[p].kind == LikeToken::kAny || same_letter(tokens[p].c, text[t]))) {
      ++p;
      ++t;
      continue;
    }
    if (star_p == tokens.size()) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < tokens.size() && tokens[p].kind == LikeToken::kStar) ++p;
  return p == tokens.size();
}

}  // namespace ticketd::mysql
