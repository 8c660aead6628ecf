#include "server/base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace ticketd::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::mutex g_mutex;

const char* name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "?";
}

}  // namespace

void set_level(Level level) { g_level.store(static_cast<int>(level)); }

bool enabled(Level level) { return static_cast<int>(level) >= g_level.load(); }

void write(Level level, std::string_view message) {
  if (!enabled(level)) return;
  // Log lines carry wall-clock time for operators; this is not engine time (see Clock).
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::lock_guard lock(g_mutex);
  std::fprintf(stderr, "%s.%03dZ %-5s %.*s\n", stamp, static_cast<int>(ms.count()), name(level),
               static_cast<int>(message.size()), message.data());
}

}  // namespace ticketd::log
