#include "server/mysql/server_variables.h"

#include <algorithm>
#include <cctype>
#include <map>

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
    {"have_ssl", "DISABLED", false},
    {"init_connect", "", false},
    {"interactive_timeout", "28800", true},
    {"license", "GPL", false},
    {"lower_case_table_names", "0", true},
    {"net_buffer_length", "16384", true},
    {"net_read_timeout", "30", true},
    {"net_write_timeout", "60", true},
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

std::map<std::string, VariableValue> table(const ServerSettings& s, const SessionState& session,
                                           bool global) {
  std::map<std::string, VariableValue> t;
  for (const auto& f : kFixed) t[f.name] = VariableValue{f.value, f.numeric};
  auto num = [](auto v) { return VariableValue{std::to_string(v), true}; };
  t["auto_increment_increment"] = num(s.auto_increment_increment);
  t["auto_increment_offset"] = num(s.auto_increment_offset);
  t["max_allowed_packet"] = num(s.max_allowed_packet);
  t["wait_timeout"] = num(s.wait_timeout_s);
  t["max_connections"] = num(s.max_connections);
  t["max_prepared_stmt_count"] = num(s.max_prepared_stmt_count);
  t["version"] = VariableValue{s.version, false};
  t["version_comment"] = VariableValue{s.version_comment, false};
  t["autocommit"] = VariableValue{global || session.autocommit ? "1" : "0", true};
  if (!global) {
    for (const auto& [k, v] : session.variables) {
      const bool numeric = !v.empty() && std::all_of(v.begin(), v.end(), [](unsigned char c) {
        return std::isdigit(c) != 0;
      });
      t[k] = VariableValue{v, numeric};
    }
  }
  return t;
}

}  // namespace

std::optional<VariableValue> lookup_variable(const ServerSettings& settings,
                                             const SessionState& session, std::string_view name,
                                             bool global) {
  const auto key = lower(name);
  if (!global && (key == "identity" || key == "last_insert_id")) {
    return VariableValue{std::to_string(session.last_insert_id), true};
  }
  auto t = table(settings, session, global);
  auto it = t.find(key);
  if (it == t.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> all_variables(const ServerSettings& settings,
                                                               const SessionState& session,
                                                               bool global) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& [k, v] : table(settings, session, global)) out.emplace_back(k, v.value);
  return out;
}

bool like_match(std::string_view text, std::string_view pattern) {
  // Iterative matcher with backtracking on the last '%'.
  std::size_t t = 0, p = 0, star_p = std::string_view::npos, star_t = 0;
  auto eq = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  };
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '%') {
      star_p = p++;
      star_t = t;
      continue;
    }
    if (p < pattern.size()) {
      bool escaped = pattern[p] == '\\' && p + 1 < pattern.size();
      char pc = escaped ? pattern[p + 1] : pattern[p];
      if ((!escaped && pc == '_') || eq(pc, text[t])) {
        p += escaped ? 2 : 1;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '%') ++p;
  return p == pattern.size();
}

}  // namespace ticketd::mysql
