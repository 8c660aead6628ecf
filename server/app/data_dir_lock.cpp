#include "server/app/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "storage/counter_store.h"

namespace ticketd {

DetailedResult<DataDirLock> DataDirLock::acquire(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{StorageErrc::kIo, "cannot create data_dir '" + dir + "': " + ec.message()};
  const std::string path = dir + "/ticketd.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error{StorageErrc::kIo, "cannot open '" + path + "': " + std::strerror(errno)};
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    auto n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string owner = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "unknown";
    while (!owner.empty() && (owner.back() == '\n' || owner.back() == ' ')) owner.pop_back();
    if (err == EWOULDBLOCK) {
      return Error{StorageErrc::kLocked, "data_dir '" + dir +
                                             "' is in use by another ticketd (pid " + owner +
                                             "); two servers on one directory would reissue IDs"};
    }
    return Error{StorageErrc::kIo, "cannot lock '" + path + "': " + std::strerror(err)};
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock is what matters; the pid is only for the message above.
  }
  return DataDirLock(fd);
}

DataDirLock::DataDirLock(DataDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ticketd
