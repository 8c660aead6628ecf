#include "server/mysql/protocol/protocol_errc.h"

#include <string>

#include "server/base/error_category.h"

namespace ticketd::mysql {
namespace {

const char* describe_protocol(ProtocolErrc e) noexcept {
  switch (e) {
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
  return nullptr;
}

}  // namespace

const boost::system::error_category& protocol_category() noexcept {
  static const EnumCategory<ProtocolErrc> category("mysql.protocol", describe_protocol,
                                                   "unknown mysql protocol error");
  return category;
}

}  // namespace ticketd::mysql
