// The engine's name → sequence map, whatever the kind, and the per-name claims that keep two
// creates or drops of one name from interleaving.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "server/base/result.h"
#include "server/base/string_hash.h"
#include "server/core/sequence_handle.h"

namespace ticketd {

/// kUnknownSequence for `name`.
[[nodiscard]] Error unknown_sequence(std::string_view name);

/// Which sequences are served, by name. Lookups take a shared lock and copy the handle out (a
/// shared_ptr), so a caller never holds the lock while it talks to a sequence. The DDL
/// (SequenceDdl) changes the map only under a claim of the name, so everything it keeps per
/// name (a tombstone, a stored definition) changes under that claim too. Thread safety: every
/// member may be called concurrently.
class SequenceRegistry {
 public:
  [[nodiscard]] std::optional<SequenceHandle> find(std::string_view name) const;
  [[nodiscard]] std::optional<SequenceKind> kind_of(std::string_view name) const;
  /// The sequence named `name` when it is of kind T, else null.
  template <class T>
  [[nodiscard]] std::shared_ptr<T> find_as(std::string_view name) const {
    std::shared_lock lock(mutex_);
    auto it = sequences_.find(name);
    if (it == sequences_.end()) return nullptr;
    auto* p = std::get_if<std::shared_ptr<T>>(&it->second);
    return p == nullptr ? nullptr : *p;
  }

  /// Every sequence, by name.
  [[nodiscard]] std::vector<std::pair<std::string, SequenceHandle>> handles() const;
  /// The sequences of kind T, by name.
  template <class T>
  [[nodiscard]] std::vector<std::pair<std::string, std::shared_ptr<T>>> all_of() const {
    std::vector<std::pair<std::string, std::shared_ptr<T>>> out;
    {
      std::shared_lock lock(mutex_);
      for (const auto& [name, h] : sequences_) {
        if (auto* p = std::get_if<std::shared_ptr<T>>(&h)) out.emplace_back(name, *p);
      }
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
  }
  /// The sequences whose kind keeps deadlines for its callers (KindModule::keeps_deadlines).
  [[nodiscard]] std::vector<SequenceHandle> with_deadlines() const;

  /// Serves `handle` under `name`, replacing what was served (start-up: load, configure).
  void put(const std::string& name, SequenceHandle handle);

  /// What claim_new() found.
  enum class Claim {
    kClaimed,  // the name is free and now claimed: end the claim with release()
    kServed,   // a sequence of that name is served; nothing claimed
    kBusy,     // another create or drop of the name runs; nothing claimed
  };
  /// Claims a name that is not served, for a create.
  [[nodiscard]] Claim claim_new(const std::string& name);
  /// Claims a served name for a drop and stops serving it: its handle, or kUnknownSequence,
  /// or busy(name).
  [[nodiscard]] DetailedResult<SequenceHandle> claim_for_drop(const std::string& name);
  /// Ends a claim; serves `handle` under the name when given (a create that landed, a drop
  /// that did not), in the same step, so that no one sees the name neither served nor claimed.
  void release(const std::string& name, std::optional<SequenceHandle> handle = std::nullopt);
  /// kRetryLater: another create or drop of `name` runs.
  [[nodiscard]] static Error busy(const std::string& name);

 private:
  mutable std::shared_mutex mutex_;
  // Looked up by string_view, without building a std::string per request.
  StringMap<SequenceHandle> sequences_;
  std::unordered_set<std::string> claimed_;
};

}  // namespace ticketd
