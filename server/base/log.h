// Minimal leveled logging to stderr. Never pass secrets.
#pragma once

#include <string_view>

namespace ticketd::log {

enum class Level { kDebug = 0, kInfo, kWarn, kError };

void set_level(Level level);
[[nodiscard]] bool enabled(Level level);
void write(Level level, std::string_view message);
/// One line of the audit trail ("... audit sequence_dropped: ..."), written whatever the level.
void audit(std::string_view event, std::string_view message);

inline void debug(std::string_view m) {
  if (enabled(Level::kDebug)) write(Level::kDebug, m);
}
inline void info(std::string_view m) { write(Level::kInfo, m); }
inline void warn(std::string_view m) { write(Level::kWarn, m); }
inline void error(std::string_view m) { write(Level::kError, m); }

}  // namespace ticketd::log
