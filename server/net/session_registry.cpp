#include "server/net/session_registry.h"

#include <vector>

namespace ticketd::net {

std::uint64_t SessionRegistry::add(Cancel cancel) {
  std::lock_guard lock(mutex_);
  if (stopping_.load(std::memory_order_acquire)) return 0;
  const auto id = next_id_++;
  sessions_.emplace(id, std::move(cancel));
  return id;
}

void SessionRegistry::remove(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

void SessionRegistry::cancel_all() {
  std::vector<Cancel> cancels;
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true, std::memory_order_release);
    for (auto& [_, c] : sessions_) cancels.push_back(c);
  }
  for (auto& c : cancels) c();
}

std::size_t SessionRegistry::count() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace ticketd::net
