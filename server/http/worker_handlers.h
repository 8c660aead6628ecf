// Worker-ID pools: GET /v1/workers (every pool), GET /v1/workers/{pool} and its leases
// (/v1/workers/{pool}/leases[/{id}[/keepalive]]).
#pragma once

#include "server/http/route_table.h"

namespace ticketd::http {

void get_worker_pools(const Reply& reply, const RouteRequest& in);
void get_worker_pool(const Reply& reply, const RouteRequest& in);
void post_worker_lease(const Reply& reply, const RouteRequest& in);
void post_worker_keepalive(const Reply& reply, const RouteRequest& in);
void delete_worker_lease(const Reply& reply, const RouteRequest& in);

}  // namespace ticketd::http
