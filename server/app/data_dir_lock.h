// Keeps a second ticketd out of a data directory.
#pragma once

#include <optional>
#include <string>

#include "server/base/result.h"

namespace ticketd {

/// An exclusive flock(2) on the data directory itself, which no deleted or replaced file can
/// defeat, and one on `<dir>/ticketd.lock`, which holds the owner's pid for the message a second
/// process prints (and keeps out a ticketd of a release that locked only the file). Released
/// when the object is destroyed or the process dies (the kernel drops flocks on exit, so
/// `kill -9` never leaves a stale lock).
class DataDirLock {
 public:
  enum class Mode {
    kWrite,     // a server or a tool that writes: creates the directory and the lock file
    kReadOnly,  // `ticketd verify`: locks the existing directory and writes nothing
  };
  [[nodiscard]] static DetailedResult<DataDirLock> acquire(const std::string& dir,
                                                           Mode mode = Mode::kWrite);
  DataDirLock(DataDirLock&& other) noexcept;
  DataDirLock& operator=(DataDirLock&&) = delete;
  ~DataDirLock();

  /// What happened to `<dir>/ticketd.lock` since it was locked (deleted, or replaced by another
  /// file), or nullopt while it is the file this lock holds. The directory lock keeps a second
  /// server out either way; this is for the log (checked periodically by the daemon).
  [[nodiscard]] std::optional<std::string> lock_file_problem() const;
  /// Writes a new `<dir>/ticketd.lock` with this process's pid and locks it (after
  /// lock_file_problem() found the old one gone).
  [[nodiscard]] DetailedResult<void> replace_lock_file();

 private:
  DataDirLock(std::string dir, int dir_fd, int file_fd)
      : dir_(std::move(dir)), dir_fd_(dir_fd), file_fd_(file_fd) {}
  std::string dir_;
  int dir_fd_ = -1;
  int file_fd_ = -1;  // -1 in kReadOnly mode
};

}  // namespace ticketd
