// Probes and operations: /healthz, /readyz, /metrics and GET /v1/cluster.
#pragma once

#include "server/http/route_table.h"

namespace ticketd::http {

void get_healthz(const Reply& reply, const RouteRequest& in);
/// Ready means serving (the route needs the leader) with storage open and writable.
void get_readyz(const Reply& reply, const RouteRequest& in);
void get_metrics(const Reply& reply, const RouteRequest& in);
/// Who leads, who this is, and the leadership term (the leader key's revision).
void get_cluster(const Reply& reply, const RouteRequest& in);
/// An online backup into backup.dir: answers with its path and manifest once it is on disk.
void post_backup(const Reply& reply, const RouteRequest& in);
/// Re-reads the config file (as SIGHUP does): 200 with what changed, 422 when nothing could.
void post_reload(const Reply& reply, const RouteRequest& in);

}  // namespace ticketd::http
