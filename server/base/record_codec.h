// The text form of records in the store: one line of space-separated `key=value` fields.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "server/base/parse_int.h"

namespace ticketd {

/// Builds one record line, fields in the order added: "v=1 first=5 step=2 holder=a b c". A line
/// stays readable with `ldb scan`, and a later version can add fields that older readers skip.
/// `RecordWriter(1)` starts the line with "v=1"; `RecordWriter()` writes no version field, for
/// record types that predate versioning and must stay byte-identical. A value given to add()
/// must not contain a space (that is a bug and throws std::invalid_argument); the one field
/// that may hold any bytes (a holder's name) is the last, written by finish(key, rest).
/// A plain value type, not shared between threads.
class RecordWriter {
 public:
  RecordWriter() = default;
  explicit RecordWriter(std::uint64_t version);

  RecordWriter& add(std::string_view key, std::string_view value);
  template <std::integral T>
  requires(!std::same_as<std::remove_cv_t<T>, bool>) RecordWriter& add(std::string_view key,
                                                                       T value) {
    return add(key, std::string_view(std::to_string(value)));
  }

  /// The line; the writer is left empty.
  [[nodiscard]] std::string finish();
  /// The line with a last field `rest_key=rest`, where `rest` runs to the end of the line and
  /// may contain spaces and '='. Read it back with RecordView::parse(text, rest_key).
  [[nodiscard]] std::string finish(std::string_view rest_key, std::string_view rest);

 private:
  std::string text_;
};

/// One record line taken apart; it points into the text it was parsed from, which must outlive
/// it. Parsing accepts every line RecordWriter writes and, for readers of older or newer
/// lines, also: fields in any order, runs of spaces, and keys the reader does not know (a
/// newer version added them; get() simply never asks). Refused: a field without '=' or with an
/// empty key, a key given twice, and a "v" that is not a number.
class RecordView {
 public:
  /// `rest_key`, when not empty, names the field whose value is the rest of the line (see
  /// RecordWriter::finish); it must be the last field.
  [[nodiscard]] static std::optional<RecordView> parse(std::string_view text,
                                                       std::string_view rest_key = {});

  /// The "v" field; nullopt when the line has none.
  [[nodiscard]] std::optional<std::uint64_t> version() const { return version_; }
  /// True when the line says "v=<expected>", or says no version and `missing_ok`.
  [[nodiscard]] bool version_is(std::uint64_t expected, bool missing_ok = false) const {
    return version_ ? *version_ == expected : missing_ok;
  }

  [[nodiscard]] bool has(std::string_view key) const { return get(key).has_value(); }
  /// The value of `key` as written; nullopt when absent.
  [[nodiscard]] std::optional<std::string_view> get(std::string_view key) const;
  /// The value of `key` as a strict integer (see parse_int); nullopt when absent or not one.
  template <std::integral T>
  [[nodiscard]] std::optional<T> get_int(std::string_view key) const {
    const auto text = get(key);
    return text ? parse_int<T>(*text) : std::nullopt;
  }
  [[nodiscard]] std::optional<std::uint64_t> get_u64(std::string_view key) const {
    return get_int<std::uint64_t>(key);
  }
  [[nodiscard]] std::optional<std::int64_t> get_i64(std::string_view key) const {
    return get_int<std::int64_t>(key);
  }

  /// Every field in line order, the "v" field included.
  [[nodiscard]] const std::vector<std::pair<std::string_view, std::string_view>>& fields() const {
    return fields_;
  }

 private:
  RecordView() = default;
  std::vector<std::pair<std::string_view, std::string_view>> fields_;
  std::optional<std::uint64_t> version_;
};

}  // namespace ticketd
