#include "server/base/error_category.h"
#include "storage/counter_store.h"

namespace ticketd {
namespace {

const char* describe_storage(StorageErrc e) noexcept {
  switch (e) {
    case StorageErrc::kIo:
      return "storage I/O error";
    case StorageErrc::kNoSpace:
      return "no space left on the data device";
    case StorageErrc::kCorruption:
      return "stored data is corrupt";
    case StorageErrc::kLocked:
      return "data directory is locked by another process";
    case StorageErrc::kFenced:
      return "write fenced: this instance no longer owns the data";
    case StorageErrc::kClosed:
      return "store is closed";
    case StorageErrc::kOutcomeUnknown:
      return "the write's outcome is unknown: it may have applied";
  }
  return nullptr;
}

}  // namespace

const boost::system::error_category& storage_category() noexcept {
  static const EnumCategory<StorageErrc> category("ticketd.storage", describe_storage,
                                                  "unknown storage error");
  return category;
}

}  // namespace ticketd
