#include "server/app/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "storage/counter_store.h"

namespace ticketd {
namespace {

std::string lock_path(const std::string& dir) { return dir + "/ticketd.lock"; }

// The pid the holder wrote into its lock file, for the message of a refused second process.
std::string owner_of(const std::string& dir) {
  const int fd = ::open(lock_path(dir).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "unknown";
  char buf[32] = {};
  const auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  std::string owner = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "unknown";
  while (!owner.empty() && (owner.back() == '\n' || owner.back() == ' ')) owner.pop_back();
  return owner.empty() ? "unknown" : owner;
}

Error in_use(const std::string& dir) {
  return Error{StorageErrc::kLocked, "data_dir '" + dir + "' is in use by another ticketd (pid " +
                                         owner_of(dir) +
                                         "); two servers on one directory would reissue IDs"};
}

// Opens (creating) and locks `<dir>/ticketd.lock`, then writes this process's pid into it.
DetailedResult<int> lock_file(const std::string& dir) {
  const std::string path = lock_path(dir);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Error{StorageErrc::kIo, "cannot open '" + path + "': " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) return in_use(dir);
    return Error{StorageErrc::kIo, "cannot lock '" + path + "': " + std::strerror(err)};
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The locks are what matter; the pid is only for the message above.
  }
  return fd;
}

}  // namespace

DetailedResult<DataDirLock> DataDirLock::acquire(const std::string& dir, Mode mode) {
  if (mode == Mode::kWrite) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return Error{StorageErrc::kIo, "cannot create data_dir '" + dir + "': " + ec.message()};
    }
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return Error{StorageErrc::kIo, "cannot open data_dir '" + dir + "': " + std::strerror(errno)};
  }
  // The directory's own lock: deleting ticketd.lock (or RocksDB's LOCK) cannot release it.
  if (::flock(dir_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(dir_fd);
    if (err == EWOULDBLOCK) return in_use(dir);
    return Error{StorageErrc::kIo, "cannot lock data_dir '" + dir + "': " + std::strerror(err)};
  }
  if (mode == Mode::kReadOnly) return DataDirLock(dir, dir_fd, -1);
  auto file = lock_file(dir);
  if (!file) {
    ::close(dir_fd);
    return file.error();
  }
  return DataDirLock(dir, dir_fd, *file);
}

DataDirLock::DataDirLock(DataDirLock&& other) noexcept
    : dir_(std::move(other.dir_)),
      dir_fd_(std::exchange(other.dir_fd_, -1)),
      file_fd_(std::exchange(other.file_fd_, -1)) {}

DataDirLock::~DataDirLock() {
  if (file_fd_ >= 0) ::close(file_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::optional<std::string> DataDirLock::lock_file_problem() const {
  if (file_fd_ < 0) return std::nullopt;
  struct stat held {};
  struct stat now {};
  if (::fstat(file_fd_, &held) != 0) return std::nullopt;
  const std::string path = lock_path(dir_);
  if (::lstat(path.c_str(), &now) != 0) {
    return "'" + path + "' was deleted while ticketd runs";
  }
  if (now.st_ino != held.st_ino || now.st_dev != held.st_dev) {
    return "'" + path + "' was replaced by another file while ticketd runs";
  }
  return std::nullopt;
}

DetailedResult<void> DataDirLock::replace_lock_file() {
  // The replacement may be locked by a process that removed ours; the directory lock, held by
  // this process, is what keeps a second ticketd out, so a failure here is only reported.
  auto fd = lock_file(dir_);
  if (!fd) return fd.error();
  if (file_fd_ >= 0) ::close(file_fd_);
  file_fd_ = *fd;
  return {};
}

}  // namespace ticketd
