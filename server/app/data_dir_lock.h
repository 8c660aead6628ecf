// Keeps a second ticketd out of a data directory.
#pragma once

#include <string>

#include "server/base/result.h"

namespace ticketd {

/// An exclusive flock(2) on `<dir>/ticketd.lock`, holding the owner's pid for the message a
/// second process prints. Released when the object is destroyed or the process dies (the kernel
/// drops flocks on exit, so `kill -9` never leaves a stale lock).
class DataDirLock {
 public:
  [[nodiscard]] static DetailedResult<DataDirLock> acquire(const std::string& dir);
  DataDirLock(DataDirLock&& other) noexcept;
  DataDirLock& operator=(DataDirLock&&) = delete;
  ~DataDirLock();

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ticketd
