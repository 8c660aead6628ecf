#include "storage/durable_mark.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "storage/counter_store.h"

namespace ticketd {
namespace {

constexpr std::string_view kMagicV1 = "TDMARK01";
constexpr std::size_t kSlotSizeV1 = 32;  // magic, position, generation, checksum: 8 bytes each
constexpr std::string_view kMagic = "TDMARK02";
// magic, position, generation (8 each), identity length (1), identity (47), checksum (8).
constexpr std::size_t kSlotSize = 80;
static_assert(8 * 3 + 1 + DurableMark::kMaxIdentity + 8 == kSlotSize);

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

std::string encode_mark_slot(const MarkSlot& slot) {
  std::string out(kMagic);
  put_u64(out, slot.position);
  put_u64(out, slot.generation);
  const std::size_t n = std::min(slot.identity.size(), DurableMark::kMaxIdentity);
  out.push_back(static_cast<char>(n));
  out.append(slot.identity, 0, n);
  out.append(DurableMark::kMaxIdentity - n, '\0');
  put_u64(out, checksum(out));
  return out;
}

std::optional<MarkSlot> decode_mark_slot(std::string_view slot) {
  if (slot.size() == kSlotSizeV1 && slot.substr(0, 8) == kMagicV1) {
    if (get_u64(slot.substr(24)) != checksum(slot.substr(0, 24))) return std::nullopt;
    return MarkSlot{get_u64(slot.substr(8)), get_u64(slot.substr(16)), {}};
  }
  if (slot.size() != kSlotSize || slot.substr(0, 8) != kMagic) return std::nullopt;
  if (get_u64(slot.substr(kSlotSize - 8)) != checksum(slot.substr(0, kSlotSize - 8))) {
    return std::nullopt;
  }
  const auto n = static_cast<unsigned char>(slot[24]);
  if (n > DurableMark::kMaxIdentity) return std::nullopt;
  return MarkSlot{get_u64(slot.substr(8)), get_u64(slot.substr(16)),
                  std::string(slot.substr(25, n))};
}

namespace {

// The newest readable slot of a mark file's bytes (current slots first, then the old form), or
// empty when none is readable.
std::optional<MarkSlot> newest_slot(std::string_view bytes) {
  std::optional<MarkSlot> best;
  for (const std::size_t size : {kSlotSize, kSlotSizeV1}) {
    for (std::size_t slot = 0; slot < 2; ++slot) {
      if (bytes.size() < (slot + 1) * size) break;
      auto decoded = decode_mark_slot(bytes.substr(slot * size, size));
      if (decoded && (!best || decoded->generation > best->generation)) best = std::move(decoded);
    }
    if (best) return best;
  }
  return best;
}

Error unreadable(const std::string& path, std::size_t n) {
  return Error{StorageErrc::kCorruption,
               "'" + path + "' holds no readable durable mark (" + std::to_string(n) +
                   " bytes): it records the highest write ticketd acknowledged and must not "
                   "be edited; refusing to guess it"};
}

// Reads the whole (small) file at `fd`.
DetailedResult<std::string> read_all(int fd, const std::string& path) {
  std::array<char, 4 * kSlotSize> buf{};
  const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
  if (n < 0) return io_error("read", path, errno);
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

}  // namespace

DetailedResult<std::optional<DurableMark::Reading>> DurableMark::read(const std::string& dir) {
  return read_file(dir + "/" + kFileName);
}

DetailedResult<std::optional<DurableMark::Reading>> DurableMark::read_file(const std::string& path,
                                                                           bool empty_is_unbound) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<Reading>{};
    return io_error("open", path, errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{StorageErrc::kCorruption, "'" + path + "' is not a regular file"};
  }
  auto bytes = read_all(fd, path);
  ::close(fd);
  if (!bytes) return bytes.error();
  if (bytes->empty() && empty_is_unbound) return std::optional<Reading>{Reading{}};
  auto slot = newest_slot(*bytes);
  if (!slot) return unreadable(path, bytes->size());
  return std::optional<Reading>{Reading{slot->position, slot->identity}};
}

DetailedResult<std::unique_ptr<DurableMark>> DurableMark::open(
    const std::string& dir, std::chrono::milliseconds sync_interval) {
  return open_file(dir + "/" + kFileName, sync_interval, false);
}

DetailedResult<std::unique_ptr<DurableMark>> DurableMark::open_file(
    const std::string& path, std::chrono::milliseconds sync_interval, bool empty_is_new) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  std::optional<MarkSlot> slot;
  bool old_form = false;
  if (fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return Error{StorageErrc::kCorruption, "'" + path + "' is not a regular file"};
    }
    auto bytes = read_all(fd, path);
    if (!bytes) {
      ::close(fd);
      return bytes.error();
    }
    slot = newest_slot(*bytes);
    if (!slot && bytes->empty() && empty_is_new) old_form = true;
    if (!slot && !old_form) {
      ::close(fd);
      return unreadable(path, bytes->size());
    }
    old_form = bytes->size() < kSlotSize || bytes->substr(0, 8) == kMagicV1;
  } else if (errno == ENOENT) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("create", path, errno);
  } else {
    return io_error("open", path, errno);
  }
  std::optional<std::uint64_t> stored;
  if (slot) stored = slot->position;
  std::unique_ptr<DurableMark> mark(new DurableMark(fd, path, stored, slot ? slot->generation : 0,
                                                    slot ? slot->identity : std::string(),
                                                    sync_interval));
  if (!stored || old_form) {
    // A new file (or one of the old form): both slots written and synced, and a new file's name
    // made durable, before any use.
    if (auto r = mark->record(stored.value_or(0), true); !r) return r.error();
    if (auto r = mark->record(stored.value_or(0), true); !r) return r.error();
    if (const int err = sync_directory(dir); err != 0) return io_error("sync", dir, err);
  }
  return mark;
}

DurableMark::DurableMark(int fd, std::string path, std::optional<std::uint64_t> stored,
                         std::uint64_t generation, std::string identity,
                         std::chrono::milliseconds sync_interval)
    : fd_(fd),
      path_(std::move(path)),
      stored_(stored),
      recorded_(stored.value_or(0)),
      generation_(generation),
      identity_(std::move(identity)),
      sync_interval_(sync_interval) {}

std::string DurableMark::identity() const {
  std::lock_guard lock(mutex_);
  return identity_;
}

DetailedResult<void> DurableMark::bind(std::string identity) {
  std::lock_guard lock(mutex_);
  return rewrite_locked(recorded_, std::move(identity));
}

DetailedResult<void> DurableMark::reset(std::uint64_t position, std::string identity) {
  std::lock_guard lock(mutex_);
  return rewrite_locked(position, std::move(identity));
}

DetailedResult<void> DurableMark::rewrite_locked(std::uint64_t position, std::string identity) {
  if (identity.size() > kMaxIdentity) {
    return Error{StorageErrc::kIo, "store identity '" + identity + "' is longer than " +
                                       std::to_string(kMaxIdentity) + " bytes"};
  }
  identity_ = std::move(identity);
  for (int slot = 0; slot < 2; ++slot) {
    if (auto r = write_slot_locked(position); !r) return r;
  }
  if (::fdatasync(fd_) != 0) return io_error("sync", path_, errno);
  recorded_ = position;
  last_sync_ = std::chrono::steady_clock::now();
  dirty_ = false;
  return {};
}

DetailedResult<void> DurableMark::write_slot_locked(std::uint64_t position) {
  ++generation_;
  const std::string slot = encode_mark_slot(MarkSlot{position, generation_, identity_});
  const auto offset = static_cast<off_t>((generation_ % 2) * kSlotSize);
  if (::pwrite(fd_, slot.data(), slot.size(), offset) != static_cast<ssize_t>(slot.size())) {
    return io_error("write", path_, errno == 0 ? EIO : errno);
  }
  dirty_ = true;
  return {};
}

DurableMark::~DurableMark() {
  if (dirty_) (void)::fdatasync(fd_);  // best effort: a stale mark is lower, never wrong
  ::close(fd_);
}

DetailedResult<void> DurableMark::record(std::uint64_t position, bool force_sync) {
  std::lock_guard lock(mutex_);
  const bool first = generation_ == 0 && !stored_;
  if (position > recorded_ || first || (force_sync && position == recorded_)) {
    if (auto r = write_slot_locked(std::max(position, recorded_)); !r) return r;
    recorded_ = std::max(position, recorded_);
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
