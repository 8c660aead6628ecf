#include "server/http/sequence_handlers.h"

#include <string>

#include "server/core/ticket_errc.h"
#include "server/http/handler_support.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {

using beast::http::status;

void get_sequences(const Reply& reply, const RouteRequest&) {
  reply.json(status::ok, sequence_list_json(reply.deps().tickets.list()));
}

void get_sequence(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto seq = reply.deps().tickets.find(name);
  if (!seq) {
    if (auto g = reply.deps().tickets.find_gapless(name)) {
      const auto a = g->audit(0);
      return reply.json(status::ok, gapless_sequence_json(name, a, g->next_value()));
    }
    return reply.fail(unknown_sequence(name));
  }
  reply.json(status::ok, sequence_json(seq->info()));
}

void put_sequence(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto body =
      body_object(in.http, {"name", "kind", "start", "increment", "offset", "max_value", "cache"});
  if (!body) return reply.fail(body.error());
  SequenceSpec spec;
  spec.name = name;
  if (auto n = read_string(*body, "name"); !n) {
    return reply.fail(n.error());
  } else if (*n && **n != name) {
    return reply.fail(
        HttpErrc::kInvalidField,
        "field 'name' ('" + **n + "') differs from the name in the path ('" + name + "')");
  }
  auto kind = read_string(*body, "kind");
  if (!kind) return reply.fail(kind.error());
  if (*kind) {
    auto k = parse_kind(**kind);
    if (!k) return reply.fail(HttpErrc::kInvalidField, "unknown kind '" + **kind + "'");
    // Gapless and Snowflake sequences have their own issues; until they land only ticket works.
    if (*k != SequenceKind::kTicket) {
      return reply.fail(HttpErrc::kNotBuiltYet, "kind '" + **kind + "' is not built yet");
    }
    spec.kind = *k;
  }
  auto start = read_id(*body, "start");
  auto max_value = read_id(*body, "max_value");
  auto increment = read_integer(*body, "increment", 1, 65535);
  auto offset = read_integer(*body, "offset", 1, 65535);
  auto cache = read_integer(*body, "cache", 1, std::uint64_t{1} << 53);
  for (const auto* r : {&start, &max_value, &increment, &offset, &cache}) {
    if (!*r) return reply.fail(r->error());
  }
  if (*start) spec.start = **start;
  if (*max_value) spec.max_value = **max_value;
  if (*increment) spec.increment = **increment;
  if (*offset) spec.offset = **offset;
  if (*cache) spec.cache = **cache;
  reply.deps().tickets.create(spec, CreateOptions{}, [reply, name](DetailedResult<void> r) {
    if (!r) return reply.fail(r.error());
    auto seq = reply.deps().tickets.find(name);
    if (!seq) return reply.fail(unknown_sequence(name));  // dropped right after creation
    reply.json(status::created, sequence_json(seq->info()));
  });
}

void patch_sequence(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto body = body_object(in.http, {"next"});
  if (!body) return reply.fail(body.error());
  auto next = read_id(*body, "next");
  if (!next) return reply.fail(next.error());
  if (!*next) return reply.fail(HttpErrc::kInvalidField, "field 'next' is required");
  auto seq = reply.deps().tickets.find(name);
  if (!seq) return reply.fail(unknown_sequence(name));
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
  reply.deps().tickets.advance_to(name, **next, [reply, seq](DetailedResult<Block> r) {
    if (!r) return reply.fail(r.error());
    reply.json(status::ok, sequence_json(seq->info()));
  });
}

void delete_sequence(const Reply& reply, const RouteRequest& in) {
  reply.deps().tickets.drop(in.path.get("name"), [reply](DetailedResult<void> r) {
    if (!r) return reply.fail(r.error());
    reply.no_content();
  });
}

}  // namespace ticketd::http
