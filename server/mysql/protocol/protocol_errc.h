// Error codes for everything the MySQL wire codec can reject.
#pragma once

#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>
#include <type_traits>

namespace ticketd::mysql {

/// Why a byte sequence was rejected by the codec. Values are stable (they appear in logs).
enum class ProtocolErrc {
  kTruncated = 1,      ///< The payload ended before a field was complete.
  kMalformed,          ///< A field has a value the layout does not allow.
  kPacketTooLarge,     ///< A logical payload exceeds max_allowed_packet.
  kUnsupported,        ///< Valid MySQL, but a variant this server does not speak.
  kBadSequence,        ///< A continuation packet carries the wrong sequence id.
  kUnexpectedPacket,   ///< The header/command byte is not the one this decoder handles.
  kMissingParamTypes,  ///< COM_STMT_EXECUTE without types and none remembered.
};

/// The category behind ProtocolErrc; name "mysql.protocol".
const boost::system::error_category& protocol_category() noexcept;

inline boost::system::error_code make_error_code(ProtocolErrc e) noexcept {
  return {static_cast<int>(e), protocol_category()};
}

}  // namespace ticketd::mysql

template <>
struct boost::system::is_error_code_enum<ticketd::mysql::ProtocolErrc> : std::true_type {};
