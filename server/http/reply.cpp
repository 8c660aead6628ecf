#include "server/http/reply.h"

#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <iterator>
#include <utility>

#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "server/http/error_mapping.h"
#include "server/http/json_codec.h"

namespace ticketd::http {

namespace {

using beast::http::field;
using beast::http::status;

// The fields of every JSON answer, as wire text (Response::preset).
constexpr std::string_view kJsonFields =
    "Content-Type: application/json\r\nCache-Control: no-store\r\n";

}  // namespace

Reply::Reply(const HttpDeps& deps, const Request& req, std::function<void(Response)> done,
             std::shared_ptr<net::Completion> completion, std::string* body_buffer)
    : deps_(&deps),
      version_(req.version()),
      keep_alive_(req.keep_alive()),
      start_(Clock::now()),
      done_(std::move(done)),
      completion_(std::move(completion)),
      body_buffer_(body_buffer) {}

Response Reply::response(status st) const { return Response{st, version_}; }

Response Reply::json_response(status st) const {
  Response res = response(st);
  res.preset(kJsonFields);
  if (body_buffer_ != nullptr) {
    res.body() = std::move(*body_buffer_);
    res.body().clear();
  }
  return res;
}

void Reply::send(Response res) const {
  res.version(version_);
  res.keep_alive(keep_alive_);
  if (term_ > 0) {
    char digits[24];
    const auto end = std::to_chars(std::begin(digits), std::end(digits), term_).ptr;
    res.set("Ticketd-Term", std::string_view(digits, static_cast<std::size_t>(end - digits)));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  deps_->metrics.request_latency(kHttpFrontend, route_, seconds);
  done_(std::move(res));
}

void Reply::json(status st, const boost::json::value& body) const {
  json_text(st, boost::json::serialize(body));
}

void Reply::json_text(status st, std::string body) const {
  Response res = response(st);
  res.preset(kJsonFields);
  res.body() = std::move(body);
  send(std::move(res));
}

void Reply::no_content() const {
  Response res = response(status::no_content);
  res.preset("Cache-Control: no-store\r\n");
  send(std::move(res));
}

void Reply::redirect_to_leader(const Error& e, std::string_view location) const {
  // The not_leader answer as fail() builds it (the same body, naming the leader), as a 307.
  Response res = error_response(e, {});
  res.result(status::temporary_redirect);
  res.set(field::location, location);
  send(std::move(res));
}

void Reply::fail(const Error& e, std::string_view allow) const { send(error_response(e, allow)); }

Response Reply::error_response(const Error& e, std::string_view allow) const {
  const auto m = map_error(e.code);
  deps_->metrics.error(kHttpFrontend, m.code);
  Response res = response(m.status);
  res.preset(kJsonFields);
  if (!allow.empty()) res.set(field::allow, allow);
  if (m.status == status::unauthorized) {
    res.set(field::www_authenticate, "Bearer realm=\"ticketd\"");
  }
  if (e.code == TicketErrc::kRetryLater || e.code == WorkerErrc::kPoolFull) {
    res.set(field::retry_after, "1");
  }
  // The message is what the engine wrote; 500s carry it too, since ticketd's messages never
  // hold secrets and an operator needs them.
  const std::string message = e.message.empty() ? e.code.message() : e.message;
  if (m.code == "not_leader" && deps_->gate != nullptr) {
    // Clients (and proxies) reconnect to the leader named here: after a refused gate and
    // after a fenced write alike.
    res.body() = not_leader_body(m.code, message, deps_->gate->view().leader.http);
  } else {
    res.body() = error_body(m.code, message);
  }
  return res;
}

}  // namespace ticketd::http
