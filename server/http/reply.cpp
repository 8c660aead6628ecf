#include "server/http/reply.h"

#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>
#include <tuple>
#include <utility>

#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "server/http/error_mapping.h"
#include "server/http/json_codec.h"

namespace ticketd::http {

namespace {

using beast::http::field;
using beast::http::status;

constexpr std::string_view kJson = "application/json";

}  // namespace

Reply::Reply(const HttpDeps& deps, const Request& req, std::function<void(Response)> done,
             std::shared_ptr<net::Handoff> handoff)
    : deps_(&deps),
      pool_(req.get_allocator().pool()),
      version_(req.version()),
      keep_alive_(req.keep_alive()),
      start_(Clock::now()),
      done_(std::move(done)),
      handoff_(std::move(handoff)) {}

Response Reply::response(status st) const {
  Response res{std::piecewise_construct, std::make_tuple(),
               std::make_tuple(FieldsAllocator<char>(pool_))};
  res.result(st);
  res.version(version_);
  return res;
}

void Reply::send(Response res) const {
  res.version(version_);
  res.keep_alive(keep_alive_);
  res.set(field::server, "ticketd");
  if (!res.has_content_length() && res.result() != status::no_content) res.prepare_payload();
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  deps_->metrics.request_latency(kHttpFrontend, route_, seconds);
  done_(std::move(res));
}

void Reply::json(status st, const boost::json::value& body) const {
  json_text(st, boost::json::serialize(body));
}

void Reply::json_text(status st, std::string body) const {
  Response res = response(st);
  res.set(field::content_type, kJson);
  res.set(field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  send(std::move(res));
}

void Reply::no_content() const {
  Response res = response(status::no_content);
  res.set(field::cache_control, "no-store");
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
  res.set(field::content_type, kJson);
  res.set(field::cache_control, "no-store");
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
  res.prepare_payload();
  return res;
}

}  // namespace ticketd::http
