#include "server/base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "server/base/utc_time.h"

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

namespace {

void line(const char* category, std::string_view event, std::string_view message) {
  // Log lines carry wall-clock time for operators; this is not engine time (see Clock).
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string stamp = format_utc_ms(now_ms);
  std::lock_guard lock(g_mutex);
  if (event.empty()) {
    std::fprintf(stderr, "%s %-5s %.*s\n", stamp.c_str(), category,
                 static_cast<int>(message.size()), message.data());
  } else {
    std::fprintf(stderr, "%s %-5s %.*s: %.*s\n", stamp.c_str(), category,
                 static_cast<int>(event.size()), event.data(), static_cast<int>(message.size()),
                 message.data());
  }
}

}  // namespace

void write(Level level, std::string_view message) {
  if (!enabled(level)) return;
  line(name(level), {}, message);
}

void audit(std::string_view event, std::string_view message) { line("audit", event, message); }

}  // namespace ticketd::log
