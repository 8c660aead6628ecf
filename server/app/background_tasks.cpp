#include "server/app/background_tasks.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "server/core/gapless_sequence.h"
#include "server/core/snowflake_generator.h"
#include "server/net/asio_support.h"

namespace ticketd {
namespace asio = boost::asio;

namespace {

// Keeps every Snowflake high-water mark ahead of the clock (a durable write every few hundred
// ms per generator, group-committed).
asio::awaitable<void> refresh_high_water_marks(asio::io_context& ioc, TicketService& service) {
  asio::steady_timer timer(ioc);
  for (;;) {
    for (const auto& g : service.snowflakes()) (void)g->refresh();  // false: still fresh
    timer.expires_after(std::chrono::milliseconds(250));
    auto [ec] = co_await timer.async_wait(net::use_nothrow);
    if (ec) co_return;
  }
}

// Ends gapless reservations whose TTL ran out and strict-order waits that timed out.
asio::awaitable<void> expire_gapless_reservations(asio::io_context& ioc, TicketService& service) {
  asio::steady_timer timer(ioc);
  for (;;) {
    // Read each time: with the etcd engine the sequences appear once this instance leads.
    for (const auto& g : service.gapless()) g->expire_due();
    timer.expires_after(std::chrono::milliseconds(20));
    auto [ec] = co_await timer.async_wait(net::use_nothrow);
    if (ec) co_return;
  }
}

}  // namespace

void spawn_background_tasks(asio::io_context& ioc, TicketService& service) {
  asio::co_spawn(ioc, refresh_high_water_marks(ioc, service), net::log_on_exit("snowflake"));
  asio::co_spawn(ioc, expire_gapless_reservations(ioc, service), net::log_on_exit("gapless"));
}

}  // namespace ticketd
