// Routes that issue values: POST /v1/sequences/{name}/next (ticket, Snowflake and UUIDv7
// sequences) and the durable block leases of /v1/sequences/{name}/blocks.
#pragma once

#include "server/http/route_table.h"

namespace ticketd::http {

void post_next(const Reply& reply, const RouteRequest& in);
void post_block(const Reply& reply, const RouteRequest& in);
void get_blocks(const Reply& reply, const RouteRequest& in);

}  // namespace ticketd::http
