// The request target as the router sees it: validated and split by Boost.URL, path segments
// still percent-encoded (literal route segments match them as sent), query decoded.
#pragma once

#include <boost/container/small_vector.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/result.h"

namespace ticketd::http {

/// Decoded query parameters; a key given twice keeps its last value.
using QueryParams = std::map<std::string, std::string, std::less<>>;

/// One parsed request target. `segments` view into the target string it was parsed from.
struct RequestTarget {
  /// False for the absolute, authority and asterisk forms: valid targets no route answers.
  bool origin_form = false;
  /// The path split at its '/' delimiters, still percent-encoded: "/v1/sequences/a%2Fb" is
  /// {"v1", "sequences", "a%2Fb"}. Dot segments are kept as sent, never resolved.
  /// Inline up to eight segments: the API's paths have at most five.
  boost::container::small_vector<std::string_view, 8> segments;
  QueryParams query;
};

/// Parses a request target (RFC 9112 section 3.2). A target that is no URI reference at all
/// (a bad `%` escape, a character outside RFC 3986) is HttpErrc::kMalformed.
[[nodiscard]] DetailedResult<RequestTarget> parse_request_target(std::string_view target);

/// The decoded text of one segment from RequestTarget::segments ("a%2Fb" -> "a/b").
[[nodiscard]] std::string decode_segment(std::string_view encoded);

}  // namespace ticketd::http
