// The daemon's periodic work on the io_context.
#pragma once

#include <boost/asio/io_context.hpp>

#include "server/app/engine.h"
#include "server/core/lease_log.h"

namespace ticketd {

/// Spawns, on `ioc`, the tasks that keep every Snowflake high-water mark ahead of the clock, end
/// gapless reservations and strict-order waits that ran out, close an issue-rate window every
/// 10 s, and once a minute prune lease records past `retention` (on the store-reads thread). All
/// read the registry on every round (sequences can be created at run time) and end when the
/// io_context stops.
void spawn_background_tasks(boost::asio::io_context& ioc, Engine& engine, LeaseLog& leases,
                            LeaseRetention retention);

}  // namespace ticketd
