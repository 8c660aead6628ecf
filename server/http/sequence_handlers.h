// Routes that describe and administer sequences: GET /v1/sequences and
// GET/PUT/PATCH/DELETE /v1/sequences/{name}.
#pragma once

#include "server/http/route_table.h"

namespace ticketd::http {

void get_sequences(const Reply& reply, const RouteRequest& in);
void get_sequence(const Reply& reply, const RouteRequest& in);
void put_sequence(const Reply& reply, const RouteRequest& in);
void patch_sequence(const Reply& reply, const RouteRequest& in);
void delete_sequence(const Reply& reply, const RouteRequest& in);

}  // namespace ticketd::http
