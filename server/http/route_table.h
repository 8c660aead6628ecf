// The HTTP API as data: one row per (methods, path pattern). The router, 405 answers and
// their Allow header, metric labels, authentication, query checks and the leader gate all
// read this table; adding a route is one row plus its handler.
#pragma once

#include <array>
#include <boost/beast/http/verb.hpp>
#include <boost/container/small_vector.hpp>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/reply.h"
#include "server/http/request_target.h"
#include "server/http/routes.h"

namespace ticketd::http {

/// A set of HTTP methods (a bit per beast verb).
class MethodSet {
 public:
  constexpr MethodSet(std::initializer_list<beast::http::verb> methods) {
    for (auto m : methods) bits_ |= bit(m);
  }
  [[nodiscard]] constexpr bool contains(beast::http::verb m) const { return (bits_ & bit(m)) != 0; }
  /// The members in the order of beast's verb enumeration.
  [[nodiscard]] std::vector<beast::http::verb> members() const;

 private:
  static constexpr std::uint64_t bit(beast::http::verb m) {
    return std::uint64_t{1} << static_cast<unsigned>(m);
  }
  std::uint64_t bits_ = 0;
};

/// The decoded `{placeholder}` segments of a matched pattern. No pattern has more than two,
/// so they live inline (no heap allocation on the request path).
class PathParams {
 public:
  void add(std::string_view placeholder, std::string value) {
    values_.emplace_back(placeholder, std::move(value));
  }
  /// The value of `{placeholder}`; empty when the pattern has none of that name.
  [[nodiscard]] const std::string& get(std::string_view placeholder) const;

 private:
  boost::container::small_vector<std::pair<std::string_view, std::string>, 2> values_;
};

/// What a handler reads: the request, its decoded path parameters and query.
struct RouteRequest {
  const Request& http;
  const PathParams& path;
  const QueryParams& query;
};

/// Parses the request, calls the core once and encodes the answer through `reply`.
using Handler = void (*)(const Reply& reply, const RouteRequest& request);

/// Who may call a route when `http.tokens` is set.
enum class Access {
  kPublic,   // probes: /healthz, /readyz
  kToken,    // the API
  kMetrics,  // a token unless `http.metrics_public`
};

/// The query parameters a route accepts. Unknown ones are refused (422) so that a typo never
/// falls back to a default; a route with `any` ignores its query (probes, and routes that
/// have always done so).
struct QueryRule {
  std::span<const std::string_view> allowed{};
  bool any = false;
};
inline constexpr QueryRule kNoQuery{};
inline constexpr QueryRule kAnyQuery{{}, true};

/// A path pattern split into its '/'-separated segments once, when its row is made, so the
/// router compares segments instead of searching the pattern for '/' on every request
/// ("/v1/sequences/{name}" has 3, the last a placeholder).
struct PatternSegments {
  static constexpr std::size_t kMax = 8;
  std::array<std::string_view, kMax> segment{};
  std::array<bool, kMax> placeholder{};
  std::size_t count = 0;
};

/// Splits a pattern that starts with '/'. The route table is constexpr, so a pattern of more
/// than PatternSegments::kMax segments does not compile.
constexpr PatternSegments split_pattern(std::string_view pattern) {
  PatternSegments p;
  pattern.remove_prefix(1);
  for (;;) {
    const auto slash = pattern.find('/');
    const auto part = pattern.substr(0, slash);
    if (p.count == PatternSegments::kMax) throw std::length_error("route pattern too long");
    p.segment[p.count] = part;
    p.placeholder[p.count] = part.size() > 2 && part.front() == '{' && part.back() == '}';
    ++p.count;
    if (slash == std::string_view::npos) return p;
    pattern.remove_prefix(slash + 1);
  }
}

/// One route. `pattern` is a path whose `{name}` segments match any non-empty segment (the
/// value is percent-decoded; "%2F" stays inside it); other segments match as sent.
struct Route {
  MethodSet methods;
  std::string_view pattern;
  std::string_view label;  // the `route` label of ticketd_request_duration_seconds
  /// Refused with 503 not_leader (naming the leader) while the ServingGate does not serve.
  bool needs_leader;
  Handler handler;
  Access access = Access::kToken;
  QueryRule query = kNoQuery;
  /// Computed from `pattern`.
  PatternSegments parts = split_pattern(pattern);
};

/// Every route of the API, in the order its Allow headers list the methods. A constant table:
/// safe to read from any thread.
[[nodiscard]] std::span<const Route> route_table();

/// What the table says about one request.
struct RouteMatch {
  const Route* route = nullptr;  // the row for the path and the method; null: none
  /// The first row whose pattern matches the path (whatever the method); null: no such path.
  const Route* path_route = nullptr;
  /// For a path with rows but none for the method: their methods, "GET, POST".
  std::string allow;
  PathParams params;
};

/// True when `pattern` matches the encoded `segments`; fills `params` with the decoded
/// placeholders.
[[nodiscard]] bool match_pattern(const PatternSegments& pattern,
                                 std::span<const std::string_view> segments, PathParams* params);

/// Looks a request up in `table` (route_table() in production, another in tests).
[[nodiscard]] RouteMatch match_route(std::span<const Route> table, beast::http::verb method,
                                     const RequestTarget& target);

}  // namespace ticketd::http
