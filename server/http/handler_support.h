// Checks the handlers share: the JSON body's media type and fields, holder names, and the
// errors for names that do not exist.
#pragma once

#include <boost/json/object.hpp>
#include <initializer_list>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/core/sequence_registry.h"
#include "server/http/routes.h"

namespace ticketd::http {

/// The body as a JSON object with no field outside `allowed`. The media type is checked
/// first (415 before 400/422); an empty body is an empty object.
[[nodiscard]] DetailedResult<boost::json::object> body_object(
    const Request& req, std::initializer_list<std::string_view> allowed);

/// A holder (of a block, reservation or worker lease) is at most kMaxHolderLength bytes
/// without control characters: it ends up in logs and audit listings.
[[nodiscard]] DetailedResult<void> check_holder(const std::string& holder);

// TicketErrc::kUnknownSequence naming a sequence: unknown_sequence() of the core's registry
// (server/core/sequence_registry.h).

}  // namespace ticketd::http
