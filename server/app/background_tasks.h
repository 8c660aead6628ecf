// The daemon's periodic work on the io_context.
#pragma once

#include <boost/asio/io_context.hpp>

#include "server/core/ticket_service.h"

namespace ticketd {

/// Spawns, on `ioc`, the tasks that keep every Snowflake high-water mark ahead of the clock and
/// end gapless reservations and strict-order waits that ran out. Both read the registry on every
/// round (sequences can be created at run time) and end when the io_context stops.
void spawn_background_tasks(boost::asio::io_context& ioc, TicketService& service);

}  // namespace ticketd
