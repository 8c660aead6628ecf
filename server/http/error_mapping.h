// The one table that turns engine, storage and HTTP errors into HTTP statuses and JSON codes.
#pragma once

#include <boost/beast/http/status.hpp>
#include <span>
#include <string_view>

#include "server/base/result.h"

namespace ticketd::http {

/// What a client sees for one error code: the status and the `error.code` string of the body.
struct ErrorMapping {
  ErrorCode error;
  boost::beast::http::status status;
  std::string_view code;
};

/// Every mapped error code (for tests and documentation).
[[nodiscard]] std::span<const ErrorMapping> error_mappings();
/// The row for `ec`; codes not in the table map to 500 "internal".
[[nodiscard]] ErrorMapping map_error(const ErrorCode& ec);

}  // namespace ticketd::http
