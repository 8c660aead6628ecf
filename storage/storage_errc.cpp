#include "storage/counter_store.h"

namespace ticketd {
namespace {

class StorageCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "ticketd.storage"; }
  std::string message(int ev) const override {
    switch (static_cast<StorageErrc>(ev)) {
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
    }
    return "unknown storage error";
  }
};

}  // namespace

const boost::system::error_category& storage_category() noexcept {
  static const StorageCategory category;
  return category;
}

}  // namespace ticketd
