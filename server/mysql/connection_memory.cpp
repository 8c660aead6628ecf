#include "server/mysql/connection_memory.h"

#include <algorithm>
#include <utility>

namespace ticketd::mysql {

bool MemoryBudget::try_reserve(std::uint64_t bytes) {
  std::uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || used > limit_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

ConnectionMemory::ConnectionMemory(ConnectionMemory&& other) noexcept
    : limit_(other.limit_), global_(other.global_), used_(std::exchange(other.used_, 0)) {}

ConnectionMemory& ConnectionMemory::operator=(ConnectionMemory&& other) noexcept {
  if (this != &other) {
    release(used_);
    limit_ = other.limit_;
    global_ = other.global_;
    used_ = std::exchange(other.used_, 0);
  }
  return *this;
}

ConnectionMemory::Verdict ConnectionMemory::try_charge(std::uint64_t bytes) {
  if (bytes > limit_ || used_ > limit_ - bytes) return Verdict::kConnectionLimit;
  if (global_ != nullptr && !global_->try_reserve(bytes)) return Verdict::kGlobalLimit;
  used_ += bytes;
  return Verdict::kOk;
}

void ConnectionMemory::release(std::uint64_t bytes) {
  bytes = std::min(bytes, used_);
  used_ -= bytes;
  if (global_ != nullptr) global_->release(bytes);
}

}  // namespace ticketd::mysql
