#include "server/http/request_target.h"

#include <boost/url/parse.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/url_view.hpp>

#include "server/http/http_errc.h"

namespace ticketd::http {

namespace urls = boost::urls;

DetailedResult<RequestTarget> parse_request_target(std::string_view target) {
  RequestTarget t;
  auto origin = urls::parse_origin_form(target);
  if (!origin) {
    // "*", "http://host/path" and "/path#fragment" are URI references but not origin form:
    // no route answers them (404), as before Boost.URL parsed targets. Anything else is 400.
    if (urls::parse_uri_reference(target)) return t;
    return Error{HttpErrc::kMalformed,
                 "the request target is not a valid URI (a bad '%' escape, or a character that "
                 "must be percent-encoded)"};
  }
  t.origin_form = true;
  // The segments come from the encoded path rather than url_view::encoded_segments(), which
  // hides a leading "/." (so "/./healthz" would route as "/healthz"). Splitting at '/' is
  // exact here: the grammar was checked, and an encoded "%2F" holds no '/'.
  std::string_view path = origin->encoded_path();
  path.remove_prefix(1);  // origin form always starts with '/'
  while (true) {
    const auto slash = path.find('/');
    t.segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  // params() decodes with '+' as a space (form encoding), as clients send queries.
  for (const auto& param : origin->params()) {
    if (param.key.empty() && !param.has_value) continue;  // "a=1&&b=2", or a bare "?"
    t.query[param.key] = param.value;
  }
  return t;
}

std::string decode_segment(std::string_view encoded) {
  // Throws on an invalid escape: segments come from parse_request_target, which checked them.
  return urls::pct_string_view(encoded).decode();
}

}  // namespace ticketd::http
