// How a route answers: JSON, 204, Prometheus text or a mapped error, with request metrics.
#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/http/routes.h"

namespace ticketd::http {

/// The `frontend` label of this front end's metrics.
inline constexpr std::string_view kHttpFrontend = "http";

/// Builds the responses to one request and reports each to the metrics (latency under the
/// route's label, errors under their code). Copyable, so it rides in the engine's callbacks;
/// each copy holds `done` (the session's is a reference, copied without allocating) and one of
/// them calls it, once. Holds `deps` by reference (it outlives every request). Thread safety: one
/// request's copies answer once, on the session's strand (engine callbacks are wrapped by
/// resume()).
class Reply {
 public:
  /// `body_buffer`, when set, is the session's: json_into() writes the body into it (its
  /// capacity reused from the last answer) and the session takes it back after the write.
  /// Only touched on the session's strand, where answers are built.
  Reply(const HttpDeps& deps, const Request& req, std::function<void(Response)> done,
        std::shared_ptr<net::Completion> completion, std::string* body_buffer = nullptr);

  /// The metric label of the route; "unmatched" until one is set.
  void set_route(std::string_view label) { route_ = label; }
  /// The leadership term the request was admitted under (ServingGate::serving_term): every
  /// answer carries it as `Ticketd-Term`, so a client (the nemesis checker) can tell which
  /// leader served it. 0 (standalone): no such field.
  void set_term(std::int64_t term) { term_ = term; }
  [[nodiscard]] const HttpDeps& deps() const { return *deps_; }
  /// Wraps a callback given to the engine: `then` runs on the session's strand with the
  /// engine's answer of type T, so the response is built there (net::Completion).
  template <class T, class Then>
  [[nodiscard]] auto resume(Then then) const {
    return completion_->resume<T>(std::move(then));
  }

  /// Sends `res` with the request's version and keep-alive (Response::serialize adds Server
  /// and Content-Length).
  void send(Response res) const;
  void json(boost::beast::http::status st, const boost::json::value& body) const;
  /// As json(), with the body already written as JSON text.
  void json_text(boost::beast::http::status st, std::string body) const;
  /// As json_text(), with the body written by `write(std::string&)` into the session's body
  /// buffer: no allocation once the buffer has grown (the hot answers: `next`).
  template <class Write>
  void json_into(boost::beast::http::status st, const Write& write) const {
    Response res = json_response(st);
    write(res.body());
    send(std::move(res));
  }
  void no_content() const;
  /// The error's row of error_mapping as a JSON error body; `allow` fills the Allow header
  /// of a 405. A not_leader answer names the leader, when the gate knows it.
  void fail(const Error& e, std::string_view allow = {}) const;
  void fail(ErrorCode code, std::string message) const { fail(Error{code, std::move(message)}); }
  /// A follower with `ha.follower_http: redirect`: 307 to `location` (the same target on the
  /// leader; method and body are kept by clients that follow it) with the not_leader body.
  void redirect_to_leader(const Error& e, std::string_view location) const;

 private:
  using Clock = std::chrono::steady_clock;

  // A response with the request's version.
  [[nodiscard]] Response response(boost::beast::http::status st) const;
  // A JSON answer's head, its body the session's buffer (emptied) when there is one.
  [[nodiscard]] Response json_response(boost::beast::http::status st) const;
  // The error's answer (error_mapping's row, its headers and JSON body), counted in metrics.
  [[nodiscard]] Response error_response(const Error& e, std::string_view allow) const;

  const HttpDeps* deps_;
  unsigned version_;
  bool keep_alive_;
  Clock::time_point start_;
  std::string_view route_ = "unmatched";
  std::function<void(Response)> done_;
  std::shared_ptr<net::Completion> completion_;
  std::string* body_buffer_ = nullptr;
  std::int64_t term_ = 0;
};

}  // namespace ticketd::http
