// The storage interface every engine writes through.
#pragma once

#include <boost/system/error_code.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "server/base/result.h"

namespace ticketd {

enum class StorageErrc {
  kIo = 1,      // the device or file system failed the operation
  kNoSpace,     // disk full
  kCorruption,  // data on disk does not decode
  kLocked,      // another process holds the data directory
  kFenced,      // a conditional write lost its precondition (a newer owner exists)
  kClosed,      // the store was closed
  // A commit was sent and no definite answer came back (a remote store: the connection broke
  // or the deadline passed): it may have applied, or may still apply. Never "nothing happened".
  kOutcomeUnknown,
};

const boost::system::error_category& storage_category() noexcept;

inline boost::system::error_code make_error_code(StorageErrc e) noexcept {
  return {static_cast<int>(e), storage_category()};
}

/// One key change in an atomic commit: a put when `value` is set, a delete otherwise.
struct Mutation {
  std::string key;
  std::optional<std::string> value;
};

using KeyValues = std::vector<std::pair<std::string, std::string>>;

/// An ordered key-value store with atomic, durable multi-key commits. This is the whole contract
/// the engine relies on, kept small so that RocksDB (embedded), memory (tests) and, later, a
/// fenced etcd store (every commit a transaction conditional on leadership) can implement it.
///
/// `commit` returns only after the mutations are durable (fsync'd, or acknowledged by a quorum):
/// the engine hands out values only below ceilings a successful commit wrote.
/// Thread safety: all members may be called concurrently.
class CounterStore {
 public:
  virtual ~CounterStore() = default;

  [[nodiscard]] virtual DetailedResult<std::optional<std::string>> get(std::string_view key) = 0;
  /// Every key starting with `prefix`, in key order.
  [[nodiscard]] virtual DetailedResult<KeyValues> scan(std::string_view prefix) = 0;
  /// The last `limit` keys starting with `prefix`, in reverse key order (newest first for
  /// keys that sort by time or value). Reads only what it returns.
  [[nodiscard]] virtual DetailedResult<KeyValues> scan_last(std::string_view prefix,
                                                            std::size_t limit) = 0;
  /// The first `limit` keys starting with `prefix`, in key order (oldest first for keys that
  /// sort by time). Reads only what it returns.
  [[nodiscard]] virtual DetailedResult<KeyValues> scan_first(std::string_view prefix,
                                                             std::size_t limit) = 0;
  /// Applies all mutations atomically and durably.
  [[nodiscard]] virtual DetailedResult<void> commit(std::span<const Mutation> mutations) = 0;
};

}  // namespace ticketd

template <>
struct boost::system::is_error_code_enum<ticketd::StorageErrc> : std::true_type {};
