// In-memory CounterStore for tests.
#pragma once

#include <map>
#include <mutex>

#include "storage/counter_store.h"

namespace ticketd {

/// A CounterStore held in a std::map: what a commit wrote survives as long as the object, which
/// lets tests "restart" an engine on the same store. Thread safety: all members may be called
/// concurrently.
class MemoryCounterStore final : public CounterStore {
 public:
  [[nodiscard]] DetailedResult<std::optional<std::string>> get(std::string_view key) override;
  [[nodiscard]] DetailedResult<KeyValues> scan(std::string_view prefix) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_first(std::string_view prefix,
                                                     std::size_t limit) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_last(std::string_view prefix,
                                                    std::size_t limit) override;
  [[nodiscard]] DetailedResult<void> commit(std::span<const Mutation> mutations) override;

  /// Number of successful commits so far (each stands for one synced write).
  [[nodiscard]] std::size_t commit_count() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string, std::less<>> data_;
  std::size_t commits_ = 0;
};

}  // namespace ticketd
