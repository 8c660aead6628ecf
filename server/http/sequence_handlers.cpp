#include "server/http/sequence_handlers.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "server/core/ticket_errc.h"
#include "server/http/handler_support.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {

namespace json = boost::json;
using beast::http::status;

void get_sequences(const Reply& reply, const RouteRequest&) {
  reply.json(status::ok, sequence_list_json(reply.deps().tickets.describe_all()));
}

void get_sequence(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto d = reply.deps().tickets.describe(name);
  if (!d) return reply.fail(unknown_sequence(name));
  reply.json(status::ok, sequence_description_json(*d));
}

namespace {

// The body fields a kind takes (besides "name" and "kind"): its row's keys, but max_rate, which
// only the config file sets (a restore's bound counts on it: docs/durability.md).
bool takes(SequenceKind kind, std::string_view field) {
  return field != kind_key::kMaxRate && kind_takes(kind, field);
}

// Reads the definition PUT creates; its bounds are checked by the core (validate()).
DetailedResult<SequenceDefinition> read_definition(const json::object& body,
                                                   const std::string& name) {
  SequenceDefinition d;
  d.spec.name = name;
  if (auto n = read_string(body, "name"); !n) {
    return n.error();
  } else if (*n && **n != name) {
    return Error{HttpErrc::kInvalidField,
                 "field 'name' ('" + **n + "') differs from the name in the path ('" + name + "')"};
  }
  auto kind = read_string(body, "kind");
  if (!kind) return kind.error();
  if (*kind) {
    auto k = parse_kind(**kind);
    if (!k) return Error{HttpErrc::kInvalidField, "unknown kind '" + **kind + "'"};
    d.spec.kind = *k;
  }
  for (const auto& [key, _] : body) {
    if (key != "name" && key != "kind" && !takes(d.spec.kind, key)) {
      return Error{HttpErrc::kInvalidField, "field '" + std::string(key) +
                                                "' does not apply to kind " +
                                                std::string(kind_name(d.spec.kind))};
    }
  }
  auto start = read_id(body, "start");
  auto max_value = read_id(body, "max_value");
  auto increment = read_id(body, "increment");
  auto offset = read_id(body, "offset");
  auto cache = read_id(body, "cache");
  for (const auto* r : {&start, &max_value, &increment, &offset, &cache}) {
    if (!*r) return r->error();
  }
  if (*start) d.spec.start = **start;
  if (*max_value) d.spec.max_value = **max_value;
  if (*increment) d.spec.increment = **increment;
  if (*offset) d.spec.offset = **offset;
  if (*cache) d.spec.cache = **cache;
  if (d.spec.kind != SequenceKind::kGapless) return d;  // takes() refused gapless fields
  auto& gapless = d.set_options<GaplessOptions>();
  auto order = read_string(body, "order");
  if (!order) return order.error();
  if (*order) {
    if (**order != "relaxed" && **order != "strict") {
      return Error{HttpErrc::kInvalidField,
                   "'order' must be relaxed or strict, got '" + **order + "'"};
    }
    gapless.order = **order == "strict" ? GaplessOrder::kStrict : GaplessOrder::kRelaxed;
  }
  for (auto [field, target] : {std::pair{"reservation_ttl_ms", &gapless.reservation_ttl_ms},
                               std::pair{"max_reservation_ttl_ms", &gapless.max_reservation_ttl_ms},
                               std::pair{"strict_wait_ms", &gapless.strict_wait_ms}}) {
    auto v = read_integer(body, field, 0, kMaxJsonSafeInteger);
    if (!v) return v.error();
    if (*v) *target = static_cast<std::int64_t>(**v);
  }
  return d;
}

}  // namespace

void put_sequence(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto body = body_object(
      in.http, {"name", "kind", "start", "increment", "offset", "max_value", "cache", "order",
                "reservation_ttl_ms", "max_reservation_ttl_ms", "strict_wait_ms"});
  if (!body) return reply.fail(body.error());
  auto d = read_definition(*body, name);
  if (!d) return reply.fail(d.error());
  reply.deps().tickets.create(
      *d, CreateOptions{},
      reply.resume<DetailedResult<void>>([reply, name](DetailedResult<void> r) {
        if (!r) return reply.fail(r.error());
        auto created = reply.deps().tickets.describe(name);
        if (!created) return reply.fail(unknown_sequence(name));  // dropped right after creation
        reply.json(status::created, sequence_description_json(*created));
      }));
}

namespace {

// PATCH {"fence": F}: nothing above F on the current grid until a restride (docs/restride.md).
void patch_fence(const Reply& reply, const std::string& name,
                 const std::shared_ptr<TicketSequence>& seq, std::uint64_t fence) {
  reply.deps().tickets.set_fence(
      name, fence, reply.resume<DetailedResult<Block>>([reply, seq](DetailedResult<Block> r) {
        if (!r) return reply.fail(r.error());
        reply.json(status::ok, sequence_json(seq->info()));
      }));
}

// PATCH {"increment": n, "offset": k, "next": v}: a restride onto the grid n/k, its first value
// the first one on it at or above v (so v - 1 is the floor).
void patch_restride(const Reply& reply, const std::string& name,
                    const std::shared_ptr<TicketSequence>& seq, Restride r) {
  reply.deps().tickets.restride(
      name, r, reply.resume<DetailedResult<Block>>([reply, seq](DetailedResult<Block> b) {
        if (!b) return reply.fail(b.error());
        reply.json(status::ok, sequence_json(seq->info()));
      }));
}

}  // namespace

void patch_sequence(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto body = body_object(in.http, {"next", "increment", "offset", "fence"});
  if (!body) return reply.fail(body.error());
  auto next = read_id(*body, "next");
  if (!next) return reply.fail(next.error());
  auto increment = read_id(*body, "increment");
  if (!increment) return reply.fail(increment.error());
  auto offset = read_id(*body, "offset");
  if (!offset) return reply.fail(offset.error());
  auto fence = read_id(*body, "fence");
  if (!fence) return reply.fail(fence.error());
  const bool regrid = *increment || *offset;
  if (*fence && (*next || regrid)) {
    return reply.fail(HttpErrc::kInvalidField, "field 'fence' goes alone");
  }
  if (regrid && !(*increment && *offset && *next)) {
    return reply.fail(HttpErrc::kInvalidField,
                      "a restride takes 'increment', 'offset' and 'next' together");
  }
  if (!*next && !*fence) return reply.fail(HttpErrc::kInvalidField, "field 'next' is required");
  auto seq = reply.deps().tickets.find(name);
  if (!seq && reply.deps().tickets.exists(name)) {
    return reply.fail(TicketErrc::kWrongKind,
                      "sequence '" + name + "' is not a ticket sequence: only those move forward");
  }
  if (!seq) return reply.fail(unknown_sequence(name));
  if (*fence) return patch_fence(reply, name, seq, **fence);
  if (regrid) {
    if (**next == 0) return reply.fail(HttpErrc::kInvalidField, "'next' must be at least 1");
    return patch_restride(reply, name, seq, Restride{**increment, **offset, **next - 1});
  }
  // The engine treats a smaller target as a no-op (as MySQL does); over HTTP a backwards move
  // is almost certainly a mistake, so it is refused. A concurrent issue between this check and
  // advance_to can only make the target smaller than the next value, which is still safe.
  const auto before = seq->info();
  if (!before.exhausted && **next < before.next_value) {
    return reply.fail(TicketErrc::kInvalidArgument,
                      "next " + std::to_string(**next) + " is below the next value " +
                          std::to_string(before.next_value) + " of '" + name +
                          "': a sequence never moves back");
  }
  reply.deps().tickets.advance_to(
      name, **next, reply.resume<DetailedResult<Block>>([reply, seq](DetailedResult<Block> r) {
        if (!r) return reply.fail(r.error());
        reply.json(status::ok, sequence_json(seq->info()));
      }));
}

void delete_sequence(const Reply& reply, const RouteRequest& in) {
  reply.deps().tickets.drop(in.path.get("name"),
                            reply.resume<DetailedResult<void>>([reply](DetailedResult<void> r) {
                              if (!r) return reply.fail(r.error());
                              reply.no_content();
                            }));
}

}  // namespace ticketd::http
