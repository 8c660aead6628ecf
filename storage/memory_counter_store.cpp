#include "storage/memory_counter_store.h"

namespace ticketd {

DetailedResult<std::optional<std::string>> MemoryCounterStore::get(std::string_view key) {
  std::lock_guard lock(mutex_);
  auto it = data_.find(key);
  if (it == data_.end()) return std::optional<std::string>{};
  return std::optional<std::string>{it->second};
}

DetailedResult<KeyValues> MemoryCounterStore::scan(std::string_view prefix) {
  std::lock_guard lock(mutex_);
  KeyValues out;
  for (auto it = data_.lower_bound(prefix); it != data_.end(); ++it) {
    if (!std::string_view(it->first).starts_with(prefix)) break;
    out.emplace_back(it->first, it->second);
  }
  return out;
}

DetailedResult<KeyValues> MemoryCounterStore::scan_first(std::string_view prefix,
                                                         std::size_t limit) {
  std::lock_guard lock(mutex_);
  KeyValues out;
  for (auto it = data_.lower_bound(prefix);
       it != data_.end() && out.size() < limit && std::string_view(it->first).starts_with(prefix);
       ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

DetailedResult<KeyValues> MemoryCounterStore::scan_last(std::string_view prefix,
                                                        std::size_t limit) {
  std::lock_guard lock(mutex_);
  KeyValues out;
  auto it = data_.lower_bound(prefix);
  auto end = it;
  while (end != data_.end() && std::string_view(end->first).starts_with(prefix)) ++end;
  while (end != it && out.size() < limit) {
    --end;
    out.emplace_back(end->first, end->second);
  }
  return out;
}

DetailedResult<void> MemoryCounterStore::commit(std::span<const Mutation> mutations) {
  std::lock_guard lock(mutex_);
  for (const auto& m : mutations) {
    if (m.value) {
      data_.insert_or_assign(m.key, *m.value);
    } else {
      data_.erase(m.key);
    }
  }
  ++commits_;
  return {};
}

std::size_t MemoryCounterStore::commit_count() const {
  std::lock_guard lock(mutex_);
  return commits_;
}

}  // namespace ticketd
