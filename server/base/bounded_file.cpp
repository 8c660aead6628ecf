#include "server/base/bounded_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ticketd {

BoundedFile read_bounded_file(const std::string& path, std::size_t max_bytes) {
  BoundedFile out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    out.error = std::string("cannot be opened: ") + std::strerror(errno);
    return out;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &out.st) != 0) {
    out.error = std::string("cannot be examined: ") + std::strerror(errno);
    return out;
  }
  if (S_ISDIR(out.st.st_mode)) {
    out.error = "is a directory, not a file";
    return out;
  }
  if (!S_ISREG(out.st.st_mode)) {
    out.error = S_ISFIFO(out.st.st_mode) ? "is a FIFO, not a regular file"
                                         : "is not a regular file (a device or socket)";
    return out;
  }
  if (static_cast<std::size_t>(out.st.st_size) > max_bytes) {
    out.error = "is larger than " + std::to_string(max_bytes) + " bytes (" +
                std::to_string(out.st.st_size) + ")";
    return out;
  }
  // Read up to one byte past the bound: a file that grew since fstat is refused too.
  out.bytes.resize(max_bytes + 1);
  std::size_t got = 0;
  while (got < out.bytes.size()) {
    const ssize_t n = ::read(fd, out.bytes.data() + got, out.bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.error = std::string("cannot be read: ") + std::strerror(errno);
      out.bytes.clear();
      return out;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes) {
    out.error = "is larger than " + std::to_string(max_bytes) + " bytes";
    out.bytes.clear();
    return out;
  }
  out.bytes.resize(got);
  out.ok = true;
  return out;
}

bool readable_by_others(const struct stat& st) {
  return (st.st_mode & S_IROTH) != 0 || ((st.st_mode & S_IRGRP) != 0 && st.st_gid != ::getegid());
}

std::string mode_text(const struct stat& st) {
  return "0" + std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
         std::to_string(st.st_mode & 7);
}

}  // namespace ticketd
