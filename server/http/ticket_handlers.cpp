#include "server/http/ticket_handlers.h"

#include <string>
#include <utility>
#include <vector>

#include "server/base/parse_int.h"
#include "server/http/handler_support.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {
namespace {

using beast::http::status;

// "format": "text" (the default: the kind's canonical text) or "hex" (the 16 bytes).
DetailedResult<std::optional<TextForm>> read_text_form(const boost::json::object& body) {
  auto format = read_string(body, "format");
  if (!format) return format.error();
  if (!*format) return std::optional<TextForm>{};
  if (**format == "text") return std::optional<TextForm>{TextForm::kCanonical};
  if (**format == "hex") return std::optional<TextForm>{TextForm::kHex};
  return Error{HttpErrc::kInvalidField, "field 'format' must be \"text\" or \"hex\""};
}

}  // namespace

void post_next(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto body = body_object(in.http, {"count", "format"});
  if (!body) return reply.fail(body.error());
  auto count = read_integer(*body, "count", 1, kMaxIdsPerCall);
  if (!count) return reply.fail(count.error());
  const std::uint64_t n = count->value_or(1);
  auto form = read_text_form(*body);
  if (!form) return reply.fail(form.error());
  auto answer = [](const Reply& reply, const std::string& name, const Block& b) {
    reply.deps().metrics.ids_issued(name, kHttpFrontend, b.count);
    reply.json_into(status::ok, [&](std::string& out) { append_block_ids(out, name, b); });
  };
  // The common case, a ticket sequence with the values cached: answered inline, with one
  // lookup of the name and no engine callback (as MySQL's SELECT NEXTVAL).
  if (form->has_value()) {
    if (auto kind = reply.deps().tickets.kind_of(name); kind && kind_row(*kind).integer_ids) {
      return reply.fail(HttpErrc::kInvalidField,
                        "field 'format' applies to sequences of text IDs (uuidv7, ulid)");
    }
  }
  if (auto seq = reply.deps().tickets.find(name)) {
    if (auto b = seq->try_take(n)) return answer(reply, name, *b);
  } else if (auto kind = reply.deps().tickets.kind_of(name); kind && !kind_row(*kind).integer_ids) {
    // UUIDv7 and ULID: IDs as JSON strings, each sorting after the previous one.
    return reply.deps().tickets.next_text(
        name, n, form->value_or(TextForm::kCanonical),
        reply.resume<DetailedResult<std::vector<std::string>>>(
            [reply, name](DetailedResult<std::vector<std::string>> ids) {
              if (!ids) return reply.fail(ids.error());
              reply.deps().metrics.ids_issued(name, kHttpFrontend, ids->size());
              reply.json(status::ok, text_ids_json(name, *ids));
            }));
  }
  reply.deps().tickets.next(
      name, n, reply.resume<DetailedResult<Block>>([reply, name, answer](DetailedResult<Block> r) {
        if (!r) return reply.fail(r.error());
        answer(reply, name, *r);
      }));
}

void post_block(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  auto body = body_object(in.http, {"size", "holder"});
  if (!body) return reply.fail(body.error());
  auto size = read_integer(*body, "size", 1, reply.deps().options.max_block_size);
  if (!size) return reply.fail(size.error());
  if (!*size) return reply.fail(HttpErrc::kInvalidField, "field 'size' is required");
  auto holder = read_string(*body, "holder");
  if (!holder) return reply.fail(holder.error());
  std::string h = holder->value_or("");
  if (auto ok = check_holder(h); !ok) return reply.fail(ok.error());
  // One durable write before the reply: the block's record goes into the commit of the
  // ceiling that covers it, so a block is never handed out unrecorded.
  reply.deps().leases.lease(
      name, **size, std::move(h),
      reply.resume<DetailedResult<Lease>>([reply, name](DetailedResult<Lease> l) {
        if (!l) return reply.fail(l.error());
        reply.deps().metrics.ids_issued(name, kHttpFrontend, l->block.count);
        reply.deps().metrics.block_leased(name, kHttpFrontend, l->block.count);
        reply.json_text(status::created, lease_text(*l));
      }));
}

// The query was checked against the route's row ("limit" only).
void get_blocks(const Reply& reply, const RouteRequest& in) {
  const std::string& name = in.path.get("name");
  std::size_t limit = kDefaultLeaseListLimit;
  if (auto it = in.query.find("limit"); it != in.query.end()) {
    auto n = parse_u64(it->second);
    if (!n || *n < 1 || *n > kMaxLeaseListLimit) {
      return reply.fail(HttpErrc::kInvalidField,
                        "'limit' must be an integer in 1.." + std::to_string(kMaxLeaseListLimit));
    }
    limit = *n;
  }
  if (!reply.deps().tickets.exists(name)) return reply.fail(unknown_sequence(name));
  // Read off the I/O thread: with the etcd engine the read is a network call.
  reply.deps().leases.recent(name, limit,
                             reply.resume<DetailedResult<std::vector<Lease>>>(
                                 [reply, name](DetailedResult<std::vector<Lease>> leases) {
                                   if (!leases) return reply.fail(leases.error());
                                   reply.json(status::ok, lease_list_json(name, *leases));
                                 }));
}

}  // namespace ticketd::http
