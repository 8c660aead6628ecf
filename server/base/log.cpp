#include "server/base/log.h"

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "server/base/utc_time.h"
#include "server/base/utf8.h"

namespace ticketd::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kText)};
std::mutex g_mutex;

std::string_view name(Level level) {
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

constexpr std::string_view kHexDigits = "0123456789abcdef";

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

// Text: \n, \r and \t by name, other control characters as \xNN.
void append_text_escape(std::string& out, unsigned char c) {
  switch (c) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      out += "\\x";
      out += kHexDigits[c >> 4];
      out += kHexDigits[c & 0xf];
  }
}

// A message keeps its backslashes and quotes as they are (messages already show client text
// through printable()); only what would end or garble the line is escaped.
void append_text_message(std::string& out, std::string_view message) {
  for (const char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_control(c)) {
      append_text_escape(out, c);
    } else {
      out += ch;
    }
  }
}

bool needs_quotes(std::string_view value) {
  if (value.empty()) return true;
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || is_control(c)) return true;
  }
  return false;
}

void append_text_value(std::string& out, std::string_view value) {
  if (!needs_quotes(value)) {
    out += value;
    return;
  }
  out += '"';
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (is_control(c)) {
      append_text_escape(out, c);
    } else {
      out += ch;
    }
  }
  out += '"';
}

// A JSON string of any bytes: well-formed UTF-8 is copied, every other byte becomes U+FFFD (as
// to_valid_utf8 repairs text), so the line is valid JSON whatever a client sent.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text.front());
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(text);
      if (n == 0) {
        out += "\\ufffd";
        text.remove_prefix(1);
      } else {
        out.append(text.substr(0, n));
        text.remove_prefix(n);
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (is_control(c)) {
          out += "\\u00";
          out += kHexDigits[c >> 4];
          out += kHexDigits[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
    text.remove_prefix(1);
  }
  out += '"';
}

template <class T>
void append_number(std::string& out, T value) {
  std::array<char, 24> digits{};  // the longest is "-9223372036854775808"
  const auto r = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), r.ptr);
}

void append_value(std::string& out, const Field& f, Format format) {
  switch (f.kind()) {
    case Field::Kind::kSigned:
      return append_number(out, f.signed_value());
    case Field::Kind::kUnsigned:
      return append_number(out, f.unsigned_value());
    case Field::Kind::kText:
      if (format == Format::kJson) return append_json_string(out, f.text());
      return append_text_value(out, f.text());
  }
}

void emit(std::string_view level, std::string_view event, std::string_view message, Fields fields) {
  // Log lines carry wall-clock time for operators; this is not engine time (see Clock).
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string text = format_line(format(), now_ms, level, event, message, fields);
  std::lock_guard lock(g_mutex);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace

void set_level(Level level) { g_level.store(static_cast<int>(level)); }

bool enabled(Level level) { return static_cast<int>(level) >= g_level.load(); }

void set_format(Format format) { g_format.store(static_cast<int>(format)); }

Format format() { return static_cast<Format>(g_format.load()); }

std::string format_line(Format format, std::int64_t unix_ms, std::string_view level,
                        std::string_view event, std::string_view message, Fields fields) {
  std::string out;
  out.reserve(48 + event.size() + message.size() + fields.size() * 24);
  const std::string stamp = format_utc_ms(unix_ms);
  if (format == Format::kJson) {
    out += R"({"time":")";
    out += stamp;
    out += R"(","level":)";
    append_json_string(out, level);
    out += R"(,"message":)";
    append_json_string(out, message);
    if (!event.empty()) {
      out += R"(,"event":)";
      append_json_string(out, event);
    }
    for (const Field& f : fields) {
      out += ',';
      append_json_string(out, f.key());
      out += ':';
      append_value(out, f, format);
    }
    out += "}\n";
    return out;
  }
  out += stamp;
  out += ' ';
  out += level;
  // The message starts in the same column whatever the level ("info  ", "debug ").
  for (std::size_t n = level.size(); n < 5; ++n) out += ' ';
  out += ' ';
  if (!event.empty()) {
    append_text_message(out, event);
    out += ": ";
  }
  append_text_message(out, message);
  for (const Field& f : fields) {
    out += ' ';
    append_text_message(out, f.key());
    out += '=';
    append_value(out, f, format);
  }
  out += '\n';
  return out;
}

void write(Level level, std::string_view message, Fields fields) {
  if (!enabled(level)) return;
  emit(name(level), {}, message, fields);
}

void audit(std::string_view event, std::string_view message, Fields fields) {
  emit("audit", event, message, fields);
}

}  // namespace ticketd::log
