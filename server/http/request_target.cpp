#include "server/http/request_target.h"

#include <boost/url/parse.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/url_view.hpp>

#include "server/http/http_errc.h"

namespace ticketd::http {

namespace urls = boost::urls;

namespace {

// RFC 3986 pchar without pct-encoded, plus '/': a target made of these alone is an origin-form
// path with no query, as Boost.URL would find.
constexpr bool is_plain_path_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
    case ':':
    case '@':
    case '/':
      return true;
    default:
      return false;
  }
}

bool is_plain_path(std::string_view target) {
  if (target.empty() || target.front() != '/') return false;
  for (const char c : target) {
    if (!is_plain_path_char(c)) return false;
  }
  return true;
}

// The segments of an origin-form path (starting with '/'), still encoded. Splitting at '/' is
// exact: the grammar was checked, and an encoded "%2F" holds no '/'.
void split_path(std::string_view path, RequestTarget& t) {
  path.remove_prefix(1);
  while (true) {
    const auto slash = path.find('/');
    t.segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
}

}  // namespace

DetailedResult<RequestTarget> parse_request_target(std::string_view target) {
  RequestTarget t;
  if (is_plain_path(target)) {
    // What every request of the API looks like; answered without Boost.URL's parser.
    t.origin_form = true;
    split_path(target, t);
    return t;
  }
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
  // hides a leading "/." (so "/./healthz" would route as "/healthz").
  split_path(origin->encoded_path(), t);  // origin form always starts with '/'

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
