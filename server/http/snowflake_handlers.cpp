#include "server/http/snowflake_handlers.h"

#include <string>

#include "server/base/parse_int.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {

using beast::http::status;

void get_snowflake_decode(const Reply& reply, const RouteRequest& in) {
  const std::string& text = in.path.get("id");
  const auto generators = reply.deps().tickets.snowflakes();
  if (generators.empty()) {
    return reply.fail(HttpErrc::kNoRoute, "no Snowflake sequence is configured");
  }
  const auto id = parse_u64(text);
  if (!id) return reply.fail(HttpErrc::kInvalidField, "'" + text + "' is not a decimal 64-bit ID");
  auto parts = generators.front()->layout().decode(*id);
  if (!parts) return reply.fail(HttpErrc::kInvalidField, "'" + text + "' has the sign bit set");
  reply.json(status::ok, snowflake_parts_json(*id, *parts));
}

}  // namespace ticketd::http
