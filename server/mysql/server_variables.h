// The variables table behind SELECT @@x, SHOW VARIABLES and SET.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/mysql/session_state.h"

namespace ticketd::mysql {

struct VariableValue {
  std::string value;
  bool numeric = false;
};

/// The value of @@name for this session: a session override, else the server's real setting.
[[nodiscard]] std::optional<VariableValue> lookup_variable(const ServerSettings& settings,
                                                           const SessionState& session,
                                                           std::string_view name, bool global);

/// Whether lookup_variable() would report @@name as numeric, without copying its value;
/// nullopt for an unknown variable.
[[nodiscard]] std::optional<bool> variable_is_numeric(const ServerSettings& settings,
                                                      const SessionState& session,
                                                      std::string_view name, bool global);

/// Every variable, sorted by name, as SHOW VARIABLES lists them.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> all_variables(
    const ServerSettings& settings, const SessionState& session, bool global);

/// SQL LIKE with % and _ (and backslash escapes), case-insensitive as MySQL's default collation.
[[nodiscard]] bool like_match(std::string_view text, std::string_view pattern);

}  // namespace ticketd::mysql
