// net::SessionStart, the start both front ends' sessions share: registration (refused once the
// server stops, removed when the session ends), the peer's address, the connection cap, and the
// registry's cancel reaching a pending read and the throttle wait, and nothing once the session
// is gone.
#include "server/net/session_start.h"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

namespace ticketd::net {
namespace {

// An accepted loopback connection whose client end stays open and silent.
struct Accepted {
  asio::io_context ioc;
  tcp::socket client{ioc};
  std::optional<tcp::socket> server;

  Accepted() {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    client.connect(acceptor.local_endpoint());
    server.emplace(acceptor.accept());
  }
};

TEST(SessionStart, RegistersTheSessionUntilItEndsAndKnowsItsPeer) {
  Accepted a;
  SessionRegistry registry;
  {
    SessionStart start(std::move(*a.server), registry, a.ioc.get_executor());
    EXPECT_TRUE(start.admitted());
    EXPECT_EQ(registry.count(), 1u);
    EXPECT_EQ(start.peer(), "127.0.0.1");
    EXPECT_FALSE(start.over_cap(1));
    EXPECT_TRUE(start.over_cap(0));
  }
  EXPECT_EQ(registry.count(), 0u);
}

TEST(SessionStart, IsRefusedOnceTheServerStops) {
  Accepted a;
  SessionRegistry registry;
  registry.cancel_all();
  SessionStart start(std::move(*a.server), registry, a.ioc.get_executor());
  EXPECT_FALSE(start.admitted());
  EXPECT_EQ(registry.count(), 0u);
}

TEST(SessionStart, StoppingCancelsAPendingReadAndTheThrottleWait) {
  Accepted a;
  SessionRegistry registry;
  auto start = std::make_unique<SessionStart>(std::move(*a.server), registry, a.ioc.get_executor());
  std::optional<boost::system::error_code> read_result;
  std::optional<boost::system::error_code> wait_result;
  asio::co_spawn(
      a.ioc,
      [&]() -> asio::awaitable<void> {
        std::array<char, 8> buf{};
        start->stream().expires_after(std::chrono::hours(1));
        auto [e, n] = co_await start->stream().async_read_some(asio::buffer(buf), use_nothrow);
        read_result = e;
      },
      asio::detached);
  start->throttle_timer().expires_after(std::chrono::hours(1));
  start->throttle_timer().async_wait([&](boost::system::error_code e) { wait_result = e; });
  a.ioc.poll();
  ASSERT_FALSE(read_result.has_value());
  ASSERT_FALSE(wait_result.has_value());

  registry.cancel_all();  // as the daemon does on shutdown, from its own thread
  // The cancel is posted to the session's executor; then both operations complete. (run()
  // would also wait out the socket's one-hour deadline timer.)
  while (!read_result || !wait_result) a.ioc.run_one();
  ASSERT_TRUE(read_result.has_value());
  EXPECT_EQ(*read_result, asio::error::operation_aborted);
  ASSERT_TRUE(wait_result.has_value());
  EXPECT_EQ(*wait_result, asio::error::operation_aborted);
}

TEST(SessionStart, ACancelAfterTheSessionEndedDoesNothing) {
  Accepted a;
  SessionRegistry registry;
  auto start = std::make_unique<SessionStart>(std::move(*a.server), registry, a.ioc.get_executor());
  // The registry's cancel, taken as cancel_all() takes it, then the session ends first.
  registry.cancel_all();
  start.reset();
  EXPECT_NO_THROW(a.ioc.poll());
  EXPECT_EQ(registry.count(), 0u);
}

}  // namespace
}  // namespace ticketd::net
