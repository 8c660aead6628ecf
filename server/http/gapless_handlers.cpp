#include "server/http/gapless_handlers.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "server/core/ticket_errc.h"
#include "server/http/handler_support.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {
namespace {

using beast::http::status;

DetailedResult<std::shared_ptr<GaplessSequence>> gapless(const Reply& reply,
                                                         const std::string& name) {
  if (auto g = reply.deps().tickets.find_gapless(name)) return g;
  if (reply.deps().tickets.exists(name)) {
    return Error{TicketErrc::kWrongKind,
                 "sequence '" + name + "' is not gapless: reservations are for gapless sequences"};
  }
  return unknown_sequence(name);
}

// "<number>-<16 hex digits>" -> "<number>".
std::string number_of(const std::string& reservation_id) {
  return reservation_id.substr(0, reservation_id.find('-'));
}

// Commit (`as_void` false) or void a reservation: both settle its number for good.
void settle(const Reply& reply, const RouteRequest& in, bool as_void) {
  const std::string& name = in.path.get("name");
  const std::string& rid = in.path.get("rid");
  auto g = gapless(reply, name);
  if (!g) return reply.fail(g.error());
  std::optional<std::string> reason;
  if (as_void) {
    auto body = body_object(in.http, {"reason"});
    if (!body) return reply.fail(body.error());
    auto r = read_string(*body, "reason");
    if (!r) return reply.fail(r.error());
    if (!*r || (*r)->empty()) {
      return reply.fail(HttpErrc::kInvalidField, "field 'reason' is required to void a number");
    }
    if ((*r)->size() > 1024) {
      return reply.fail(HttpErrc::kInvalidField, "'reason' must be at most 1024 bytes");
    }
    reason = **r;
  } else if (!in.http.body().empty()) {
    auto body = body_object(in.http, {});
    if (!body) return reply.fail(body.error());
  }
  auto answer =
      reply.resume<DetailedResult<void>>([reply, rid, name, reason](DetailedResult<void> r) {
        if (!r) return reply.fail(r.error());
        reply.json(status::ok, reservation_outcome_json(name, rid, number_of(rid), reason));
      });
  if (reason) return (*g)->commit_void(rid, *reason, std::move(answer));
  (*g)->commit(rid, std::move(answer));
}

}  // namespace

void post_reservation(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto g = gapless(reply, name);
  if (!g) return reply.fail(g.error());
  auto body = body_object(in.http, {"holder", "ttl_ms"});
  if (!body) return reply.fail(body.error());
  auto holder = read_string(*body, "holder");
  if (!holder) return reply.fail(holder.error());
  std::string h = holder->value_or("http");
  if (auto ok = check_holder(h); !ok) return reply.fail(ok.error());
  const auto max_ttl = static_cast<std::uint64_t>((*g)->options().max_reservation_ttl_ms);
  auto ttl = read_integer(*body, "ttl_ms", 1, max_ttl);
  if (!ttl) return reply.fail(ttl.error());
  (*g)->reserve(
      std::move(h), static_cast<std::int64_t>(ttl->value_or(0)),
      reply.resume<DetailedResult<Reservation>>([reply, name](DetailedResult<Reservation> r) {
        if (!r) return reply.fail(r.error());
        reply.deps().metrics.ids_issued(name, kHttpFrontend, 1);
        reply.json(status::created, reservation_json(name, *r));
      }));
}

void post_reservation_commit(const Reply& reply, const RouteRequest& in) {
  settle(reply, in, false);
}

void post_reservation_void(const Reply& reply, const RouteRequest& in) { settle(reply, in, true); }

void delete_reservation(const Reply& reply, const RouteRequest& in) {
  auto g = gapless(reply, in.path.get("name"));
  if (!g) return reply.fail(g.error());
  (*g)->release(in.path.get("rid"),
                reply.resume<DetailedResult<void>>([reply](DetailedResult<void> r) {
                  if (!r) return reply.fail(r.error());
                  reply.no_content();
                }));
}

void get_audit(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto g = gapless(reply, name);
  if (!g) return reply.fail(g.error());
  reply.json(status::ok, gapless_audit_json(name, (*g)->audit()));
}

}  // namespace ticketd::http
