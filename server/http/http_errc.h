// Error codes the HTTP front end raises itself (the engine's come as TicketErrc/StorageErrc).
#pragma once

#include <boost/system/error_code.hpp>
#include <type_traits>

namespace ticketd::http {

enum class HttpErrc {
  kMalformed = 1,         // bad JSON, bad percent-encoding, unparsable HTTP
  kUnauthorized,          // missing or wrong bearer token
  kNoRoute,               // no such path
  kMethodNotAllowed,      // path exists, method does not
  kBodyTooLarge,          // body over http body_limit
  kUnsupportedMediaType,  // a body that is not application/json
  kInvalidField,          // well-formed JSON with wrong types, unknown fields, values out of range
  kNotBuiltYet,           // a sequence kind this build does not implement
  kHeaderTooLarge,        // request head over http header_limit
  kNotReady,              // storage not open or not writable
  kNotConfigured,         // a feature the config leaves off (online backups without backup.dir)
  kTooManyAuthFailures,   // this address's bad tokens are being answered (the auth throttle)
};

const boost::system::error_category& http_category() noexcept;

inline boost::system::error_code make_error_code(HttpErrc e) noexcept {
  return {static_cast<int>(e), http_category()};
}

}  // namespace ticketd::http

template <>
struct boost::system::is_error_code_enum<ticketd::http::HttpErrc> : std::true_type {};
