// Reading a small file an operator names (the config, TLS keys and certificates) safely.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>

namespace ticketd {

/// What read_bounded_file() found: the file's bytes, or why it was not read.
struct BoundedFile {
  bool ok = false;
  std::string bytes;  // when ok
  std::string error;  // when not: "is a FIFO, not a regular file", "is larger than 1048576 bytes"
  struct stat st {};  // the opened file's status (mode, owner), when ok
};

/// Reads `path` whole if it is a regular file of at most `max_bytes`. Opened non-blocking and
/// checked with fstat before a byte is read, so a FIFO, a device or a directory is refused at
/// once instead of blocking start-up or a reload, and a huge file is never read into memory.
[[nodiscard]] BoundedFile read_bounded_file(const std::string& path, std::size_t max_bytes);

/// Whether a file with status `st` may be read by users other than this process's: by anyone,
/// or by a group that is not this process's own (a packaged root:ticketd 0640 file is fine).
[[nodiscard]] bool readable_by_others(const struct stat& st);

/// "0644"-style mode of `st`, for messages.
[[nodiscard]] std::string mode_text(const struct stat& st);

}  // namespace ticketd
