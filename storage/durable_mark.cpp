#include "storage/durable_mark.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "storage/counter_store.h"

namespace ticketd {
namespace {

constexpr std::string_view kMagic = "TDMARK01";
constexpr std::size_t kSlotSize = 32;  // magic, position, generation, checksum: 8 bytes each

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_u64(std::string_view in) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

// FNV-1a, 64 bits: enough to tell a torn or foreign slot from a written one.
std::uint64_t checksum(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Error io_error(const std::string& what, const std::string& path, int err) {
  return Error{err == ENOSPC ? StorageErrc::kNoSpace : StorageErrc::kIo,
               what + " '" + path + "': " + std::strerror(err)};
}

// A new file's name is durable only once its directory is synced.
int sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int rc = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return rc;
}

}  // namespace

std::string encode_mark_slot(std::uint64_t position, std::uint64_t generation) {
  std::string out(kMagic);
  put_u64(out, position);
  put_u64(out, generation);
  put_u64(out, checksum(out));
  return out;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> decode_mark_slot(std::string_view slot) {
  if (slot.size() != kSlotSize || slot.substr(0, 8) != kMagic) return std::nullopt;
  if (get_u64(slot.substr(24)) != checksum(slot.substr(0, 24))) return std::nullopt;
  return std::pair{get_u64(slot.substr(8)), get_u64(slot.substr(16))};
}

DetailedResult<std::unique_ptr<DurableMark>> DurableMark::open(
    const std::string& dir, std::chrono::milliseconds sync_interval) {
  const std::string path = dir + "/" + kFileName;
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  std::optional<std::uint64_t> stored;
  std::uint64_t generation = 0;
  if (fd >= 0) {
    std::array<char, 2 * kSlotSize> buf{};
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("read", path, err);
    }
    for (std::size_t slot = 0; slot < 2; ++slot) {
      if (static_cast<std::size_t>(n) < (slot + 1) * kSlotSize) break;
      auto decoded = decode_mark_slot(std::string_view(buf.data() + slot * kSlotSize, kSlotSize));
      if (!decoded) continue;
      if (!stored || decoded->second > generation) {
        stored = decoded->first;
        generation = decoded->second;
      }
    }
    if (!stored) {
      ::close(fd);
      return Error{StorageErrc::kCorruption,
                   "'" + path + "' holds no readable durable mark (" + std::to_string(n) +
                       " bytes): it records the highest write ticketd acknowledged and must not "
                       "be edited; refusing to guess it"};
    }
  } else if (errno == ENOENT) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("create", path, errno);
  } else {
    return io_error("open", path, errno);
  }
  std::unique_ptr<DurableMark> mark(new DurableMark(fd, path, stored, generation, sync_interval));
  if (!stored) {
    // A new file: both slots written and synced, and its name made durable, before any use.
    if (auto r = mark->record(0, true); !r) return r.error();
    if (auto r = mark->record(0, true); !r) return r.error();
    if (const int err = sync_directory(dir); err != 0) return io_error("sync", dir, err);
  }
  return mark;
}

DurableMark::DurableMark(int fd, std::string path, std::optional<std::uint64_t> stored,
                         std::uint64_t generation, std::chrono::milliseconds sync_interval)
    : fd_(fd),
      path_(std::move(path)),
      stored_(stored),
      recorded_(stored.value_or(0)),
      generation_(generation),
      sync_interval_(sync_interval) {}

DurableMark::~DurableMark() {
  if (dirty_) (void)::fdatasync(fd_);  // best effort: a stale mark is lower, never wrong
  ::close(fd_);
}

DetailedResult<void> DurableMark::record(std::uint64_t position, bool force_sync) {
  std::lock_guard lock(mutex_);
  const bool first = generation_ == 0 && !stored_;
  if (position > recorded_ || first || (force_sync && position == recorded_)) {
    ++generation_;
    const std::string slot = encode_mark_slot(std::max(position, recorded_), generation_);
    const auto offset = static_cast<off_t>((generation_ % 2) * kSlotSize);
    if (::pwrite(fd_, slot.data(), slot.size(), offset) != static_cast<ssize_t>(slot.size())) {
      return io_error("write", path_, errno == 0 ? EIO : errno);
    }
    recorded_ = std::max(position, recorded_);
    dirty_ = true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (dirty_ && (force_sync || now - last_sync_ >= sync_interval_)) {
    if (::fdatasync(fd_) != 0) return io_error("sync", path_, errno);
    last_sync_ = now;
    dirty_ = false;
  }
  return {};
}

}  // namespace ticketd
