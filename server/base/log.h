// Leveled logging to stderr, as text or as JSON lines, each line with optional fields. Never
// pass secrets (passwords, tokens, scrambles), neither in a message nor in a field.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace ticketd::log {

enum class Level { kDebug = 0, kInfo, kWarn, kError };

/// How lines are written. kText: "2026-12-02T20:59:28.528Z info  message key=value", for people.
/// kJson: one object per line, {"time":"...","level":"info","message":"...",<fields>}, for log
/// shippers. Audit lines have the level "audit" and an "event" member (kText: "audit event: ...").
enum class Format { kText, kJson };

/// The integers a field may hold: not bool or char, which would more likely be a mistake.
template <class T>
concept FieldInteger = std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, char>;

/// One key and value a line carries besides its message, what a log shipper indexes: the
/// sequence, client, user or lease the line is about. Keys are fixed words of the code (never
/// "time", "level", "message" or "event"); values are any bytes, escaped by the writer.
/// Integers are numbers in JSON. A view, like std::string_view: it refers to the caller's
/// strings and is only valid for the call it is passed to.
class Field {
 public:
  enum class Kind { kText, kSigned, kUnsigned };

  constexpr Field(std::string_view key, std::string_view value) noexcept
      : key_(key), text_(value) {}
  template <FieldInteger T>
  constexpr Field(std::string_view key, T value) noexcept : key_(key) {
    if constexpr (std::is_signed_v<T>) {
      kind_ = Kind::kSigned;
      signed_ = value;
    } else {
      kind_ = Kind::kUnsigned;
      unsigned_ = value;
    }
  }

  [[nodiscard]] constexpr std::string_view key() const noexcept { return key_; }
  [[nodiscard]] constexpr Kind kind() const noexcept { return kind_; }
  [[nodiscard]] constexpr std::string_view text() const noexcept { return text_; }
  [[nodiscard]] constexpr std::int64_t signed_value() const noexcept { return signed_; }
  [[nodiscard]] constexpr std::uint64_t unsigned_value() const noexcept { return unsigned_; }

 private:
  std::string_view key_;
  Kind kind_ = Kind::kText;
  std::string_view text_;
  std::int64_t signed_ = 0;
  std::uint64_t unsigned_ = 0;
};

/// The fields of one line, written in braces at the call:
/// `log::info("sequence 'Orders' created", {{"sequence", name}, {"client", peer}})`, or an
/// array or span of Field the caller keeps. A view of the caller's fields, like std::span: pass
/// it on, never keep it in a variable (`log::Fields f = {{...}};` dangles at the semicolon).
class Fields {
 public:
  constexpr Fields() noexcept = default;
  // A view of the braces' array, which lives to the end of the call's full expression (as
  // C++26's std::span(std::initializer_list)); GCC warns about keeping it, which is the point.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr Fields(std::initializer_list<Field> fields) noexcept
      : data_(fields.begin()), size_(fields.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  constexpr explicit Fields(std::span<const Field> fields) noexcept
      : data_(fields.data()), size_(fields.size()) {}
  /// A local array: `const log::Field fields[] = {...}; log::info(m, fields);`.
  template <std::size_t N>
  constexpr Fields(const Field (&fields)[N]) noexcept : data_(fields), size_(N) {}

  [[nodiscard]] constexpr const Field* begin() const noexcept { return data_; }
  [[nodiscard]] constexpr const Field* end() const noexcept { return data_ + size_; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  [[nodiscard]] constexpr bool empty() const noexcept { return size_ == 0; }

 private:
  const Field* data_ = nullptr;
  std::size_t size_ = 0;
};

void set_level(Level level);
[[nodiscard]] bool enabled(Level level);
/// Takes effect from the next line; lines are atomic either way. Thread safety: any thread.
void set_format(Format format);
[[nodiscard]] Format format();

/// One line at `level` when it is enabled: formatted, then written to stderr in one write
/// under a lock, so lines of concurrent threads never interleave.
void write(Level level, std::string_view message, Fields fields = {});
/// One line of the audit trail ("... audit sequence_dropped: ..."), written whatever the level.
void audit(std::string_view event, std::string_view message, Fields fields = {});

/// The line `format` writes, newline included: `level` is a level's name or "audit" (padded to
/// 5 columns in text), `event` is empty but for audit lines. Text: control characters in the
/// message are escaped (\n, \t, \r, \xNN), so a line stays one line; a field is ` key=value`,
/// the value in double quotes (with \" \\ \n \t \r \xNN inside) when it is empty or holds a
/// space, '"', '=', '\' or a control character. JSON: every string is valid JSON whatever its
/// bytes: quotes, backslashes and control characters escaped, each byte that is not part of
/// well-formed UTF-8 replaced by \ufffd. Pure: what the tests compare byte for byte.
[[nodiscard]] std::string format_line(Format format, std::int64_t unix_ms, std::string_view level,
                                      std::string_view event, std::string_view message,
                                      Fields fields);

inline void debug(std::string_view m, Fields fields = {}) {
  if (enabled(Level::kDebug)) write(Level::kDebug, m, fields);
}
inline void info(std::string_view m, Fields fields = {}) {
  if (enabled(Level::kInfo)) write(Level::kInfo, m, fields);
}
inline void warn(std::string_view m, Fields fields = {}) {
  if (enabled(Level::kWarn)) write(Level::kWarn, m, fields);
}
inline void error(std::string_view m, Fields fields = {}) {
  if (enabled(Level::kError)) write(Level::kError, m, fields);
}

}  // namespace ticketd::log
