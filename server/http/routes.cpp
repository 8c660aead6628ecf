#include "server/http/routes.h"

#include <boost/beast/http/field.hpp>
#include <string>
#include <utility>

#include "server/http/auth.h"
#include "server/http/http_errc.h"
#include "server/http/reply.h"
#include "server/http/request_target.h"
#include "server/http/route_table.h"

namespace ticketd::http {
namespace {

using beast::http::field;

bool needs_token(const HttpDeps& deps, const std::vector<TokenVerifier>& tokens, const Request& req,
                 const RouteMatch& m) {
  if (tokens.empty()) return false;
  // A path no row knows needs the token under /v1/, so that nothing about /v1 leaks.
  if (m.path_route == nullptr) return req.target().starts_with("/v1/");
  switch (m.path_route->access) {
    case Access::kPublic:
      return false;
    case Access::kToken:
      return true;
    case Access::kMetrics:
      return !deps.options.metrics_public;
  }
  return true;
}

DetailedResult<void> check_query(const Route& route, const QueryParams& query) {
  if (route.query.any) return {};
  for (const auto& [key, value] : query) {
    bool known = false;
    for (auto a : route.query.allowed) known = known || key == a;
    if (!known) return Error{HttpErrc::kInvalidField, "unknown query parameter '" + key + "'"};
  }
  return {};
}

}  // namespace

std::optional<std::string> leader_location(std::string_view leader_http, bool tls,
                                           std::string_view target) {
  const auto colon = leader_http.rfind(':');
  if (leader_http.empty() || colon == std::string_view::npos || colon == 0) return std::nullopt;
  const auto host = leader_http.substr(0, colon);
  if (host == "0.0.0.0" || host == "[::]" || host == "::") return std::nullopt;
  if (target.empty() || target.front() != '/') return std::nullopt;
  std::string out(tls ? "https://" : "http://");
  out.append(leader_http).append(target);
  return out;
}

void handle_request(const HttpDeps& deps, Request req, std::function<void(Response)> done,
                    std::shared_ptr<net::Completion> completion, std::string* body_buffer) {
  if (completion == nullptr) {
    completion = std::make_shared<net::Completion>();
    body_buffer = nullptr;  // without the session's strand, a late answer may be built anywhere
  }
  Reply reply(deps, req, std::move(done), completion, body_buffer);
  auto target = parse_request_target(req.target());
  if (!target) return reply.fail(target.error());
  const RouteMatch m = match_route(route_table(), req.method(), *target);
  if (m.route != nullptr) reply.set_route(m.route->label);

  // Authentication comes before 404/405 so that, without a token, nothing about /v1 leaks.
  const std::shared_ptr<const std::vector<TokenVerifier>> tokens = deps.tokens.get();
  if (needs_token(deps, *tokens, req, m) && !authorized(*tokens, req[field::authorization])) {
    deps.metrics.auth_failure(kHttpFrontend);
    return reply.fail(HttpErrc::kUnauthorized,
                      "a valid 'Authorization: Bearer <token>' is required");
  }
  if (m.path_route == nullptr) {
    return reply.fail(HttpErrc::kNoRoute, "no route for '" + std::string(req.target()) + "'");
  }
  if (m.route == nullptr) {
    return reply.fail(Error{HttpErrc::kMethodNotAllowed,
                            "method " + std::string(req.method_string()) + " is not allowed on '" +
                                std::string(req.target()) + "'"},
                      m.allow);
  }
  const Route& route = *m.route;
  // The session enforces the limit while reading; this covers callers that build requests.
  if (req.body().size() > deps.options.body_limit) {
    return reply.fail(
        HttpErrc::kBodyTooLarge,
        "request body is larger than " + std::to_string(deps.options.body_limit) + " bytes");
  }
  if (auto r = check_query(route, target->query); !r) return reply.fail(r.error());
  if (route.needs_leader && deps.gate != nullptr) {
    const auto term = deps.gate->serving_term();
    if (!term) {
      const Error refused = deps.gate->not_serving_error(true);
      if (deps.options.follower_redirect && route.access != Access::kPublic) {
        const auto location =
            leader_location(deps.gate->view().leader.http, deps.tls != nullptr, req.target());
        if (location) return reply.redirect_to_leader(refused, *location);
      }
      return reply.fail(refused);
    }
    reply.set_term(*term);
  }
  completion->begin();
  route.handler(reply, RouteRequest{req, m.params, target->query});
  completion->end();
}

}  // namespace ticketd::http
