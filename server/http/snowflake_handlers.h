// GET /v1/snowflake/decode/{id}: the parts of a Snowflake ID under the configured layout.
#pragma once

#include "server/http/route_table.h"

namespace ticketd::http {

void get_snowflake_decode(const Reply& reply, const RouteRequest& in);

}  // namespace ticketd::http
