#include "server/core/sequence_registry.h"

#include <mutex>

#include "server/core/kind_module.h"
#include "server/core/ticket_errc.h"

namespace ticketd {

Error unknown_sequence(std::string_view name) {
  return Error{TicketErrc::kUnknownSequence, "sequence '" + std::string(name) + "' does not exist"};
}

std::optional<SequenceHandle> SequenceRegistry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = sequences_.find(name);
  if (it == sequences_.end()) return std::nullopt;
  return it->second;
}

std::optional<SequenceKind> SequenceRegistry::kind_of(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = sequences_.find(name);
  if (it == sequences_.end()) return std::nullopt;
  return kind_of_handle(it->second);
}

std::vector<std::pair<std::string, SequenceHandle>> SequenceRegistry::handles() const {
  std::vector<std::pair<std::string, SequenceHandle>> out;
  {
    std::shared_lock lock(mutex_);
    out.assign(sequences_.begin(), sequences_.end());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::vector<SequenceHandle> SequenceRegistry::with_deadlines() const {
  std::vector<SequenceHandle> out;
  std::shared_lock lock(mutex_);
  for (const auto& [_, h] : sequences_) {
    if (kind_module(h).keeps_deadlines()) out.push_back(h);
  }
  return out;
}

void SequenceRegistry::put(const std::string& name, SequenceHandle handle) {
  std::unique_lock lock(mutex_);
  sequences_[name] = std::move(handle);
}

SequenceRegistry::Claim SequenceRegistry::claim_new(const std::string& name) {
  std::unique_lock lock(mutex_);
  if (sequences_.contains(name)) return Claim::kServed;
  if (!claimed_.insert(name).second) return Claim::kBusy;
  return Claim::kClaimed;
}

DetailedResult<SequenceHandle> SequenceRegistry::claim_for_drop(const std::string& name) {
  std::unique_lock lock(mutex_);
  auto it = sequences_.find(name);
  if (it == sequences_.end()) return unknown_sequence(name);
  if (!claimed_.insert(name).second) return busy(name);
  SequenceHandle handle = std::move(it->second);
  sequences_.erase(it);
  return handle;
}

void SequenceRegistry::release(const std::string& name, std::optional<SequenceHandle> handle) {
  std::unique_lock lock(mutex_);
  claimed_.erase(name);
  if (handle) sequences_[name] = std::move(*handle);
}

Error SequenceRegistry::busy(const std::string& name) {
  return Error{TicketErrc::kRetryLater, "another create or drop of '" + name + "' is in progress"};
}

}  // namespace ticketd
