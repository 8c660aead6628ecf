#include "server/mysql/protocol/protocol_errc.h"

#include <string>

namespace ticketd::mysql {
namespace {

class ProtocolCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "mysql.protocol"; }

  std::string message(int ev) const override {
    switch (static_cast<ProtocolErrc>(ev)) {
      case ProtocolErrc::kTruncated:
        return "packet truncated";
      case ProtocolErrc::kMalformed:
        return "malformed packet";
      case ProtocolErrc::kPacketTooLarge:
        return "packet larger than max_allowed_packet";
      case ProtocolErrc::kUnsupported:
        return "unsupported protocol variant";
      case ProtocolErrc::kBadSequence:
        return "packets out of order";
      case ProtocolErrc::kUnexpectedPacket:
        return "unexpected packet type";
      case ProtocolErrc::kMissingParamTypes:
        return "statement executed without parameter types";
    }
    return "unknown mysql protocol error";
  }
};

}  // namespace

const boost::system::error_category& protocol_category() noexcept {
  static const ProtocolCategory category;
  return category;
}

}  // namespace ticketd::mysql
