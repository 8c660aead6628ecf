// Gapless sequences over HTTP: reservations (/v1/sequences/{name}/reservations[/{rid}[/commit
// |/void]]) and the audit (GET /v1/sequences/{name}/audit).
#pragma once

#include "server/http/route_table.h"

namespace ticketd::http {

void post_reservation(const Reply& reply, const RouteRequest& in);
void delete_reservation(const Reply& reply, const RouteRequest& in);
void post_reservation_commit(const Reply& reply, const RouteRequest& in);
void post_reservation_void(const Reply& reply, const RouteRequest& in);
void get_audit(const Reply& reply, const RouteRequest& in);

}  // namespace ticketd::http
