// net::TimedSocket: an operation pending past its deadline closes the socket and completes with
// timed_out; a deadline moved later or a busy connection never trips it; a nearer deadline
// re-arms; time between operations does not count; destruction with a wait outstanding is safe.
#include "server/net/timed_socket.h"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "server/net/asio_support.h"

namespace ticketd::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A connected pair on loopback: `server` is timed, `client` is a plain socket.
struct Pair {
  asio::io_context ioc;
  std::optional<TimedSocket> server;
  tcp::socket client{ioc};

  Pair() {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    client.connect(acceptor.local_endpoint());
    server.emplace(acceptor.accept());
  }
};

// Waits on `ioc` for `d` (other handlers run meanwhile).
asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(use_nothrow);
}

// One read that the client never answers, started with `deadline`: its error and duration.
struct LoneRead {
  boost::system::error_code result;
  Clock::duration took{};
  void start(Pair& p, Clock::duration deadline) {
    asio::co_spawn(
        p.ioc,
        [this, &p, deadline]() -> asio::awaitable<void> {
          std::array<char, 16> buf{};
          const auto start = Clock::now();
          p.server->expires_after(deadline);
          auto [ec, n] = co_await p.server->async_read_some(asio::buffer(buf), use_nothrow);
          took = Clock::now() - start;
          result = ec;
        },
        asio::detached);
  }
};

TEST(TimedSocket, AReadPendingPastItsDeadlineTimesOutAndClosesTheSocket) {
  Pair p;
  LoneRead read;
  read.start(p, 100ms);
  p.ioc.run();
  const auto [result, took] = read;
  EXPECT_EQ(result, asio::error::timed_out);
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 10s);
  EXPECT_FALSE(p.server->socket().is_open());
}

TEST(TimedSocket, ABusyConnectionWhoseDeadlineMovesOnIsNeverTimedOut) {
  Pair p;
  int echoed = 0;
  boost::system::error_code failure;
  // 30 round trips 20 ms apart (600 ms in all), each read with a 150 ms deadline set before it:
  // the timer armed for the first deadline fires while later deadlines are still ahead.
  asio::co_spawn(
      p.ioc,
      [&]() -> asio::awaitable<void> {
        std::array<char, 1> buf{};
        for (int i = 0; i < 30; ++i) {
          p.server->expires_after(150ms);
          auto [ec, n] = co_await asio::async_read(*p.server, asio::buffer(buf), use_nothrow);
          if (ec) {
            failure = ec;
            co_return;
          }
          auto [wec, wn] = co_await asio::async_write(*p.server, asio::buffer(buf), use_nothrow);
          if (wec) {
            failure = wec;
            co_return;
          }
          ++echoed;
        }
      },
      asio::detached);
  asio::co_spawn(
      p.ioc,
      [&]() -> asio::awaitable<void> {
        std::array<char, 1> buf{'x'};
        for (int i = 0; i < 30; ++i) {
          co_await pause(20ms);
          co_await asio::async_write(p.client, asio::buffer(buf), use_nothrow);
          co_await asio::async_read(p.client, asio::buffer(buf), use_nothrow);
        }
      },
      asio::detached);
  p.ioc.run();
  EXPECT_FALSE(failure) << failure.message();
  EXPECT_EQ(echoed, 30);
  EXPECT_TRUE(p.server->socket().is_open());
}

TEST(TimedSocket, ANearerDeadlineSetWhileAReadIsPendingReArmsTheTimer) {
  Pair p;
  LoneRead read;
  read.start(p, 1h);
  asio::co_spawn(
      p.ioc,
      [&]() -> asio::awaitable<void> {
        co_await pause(20ms);
        p.server->expires_after(50ms);
      },
      asio::detached);
  p.ioc.run();
  EXPECT_EQ(read.result, asio::error::timed_out);
  EXPECT_LT(read.took, 30s);
}

TEST(TimedSocket, TimeBetweenOperationsDoesNotCountButALaterOperationFailsAtOnce) {
  Pair p;
  boost::system::error_code first, second;
  bool open_after_pause = false;
  asio::co_spawn(
      p.ioc,
      [&]() -> asio::awaitable<void> {
        std::array<char, 1> buf{};
        p.server->expires_after(100ms);
        auto [ec, n] = co_await asio::async_read(*p.server, asio::buffer(buf), use_nothrow);
        first = ec;
        // No operation pending while the deadline (and the timer armed for it) passes.
        co_await pause(300ms);
        open_after_pause = p.server->socket().is_open();
        auto [ec2, n2] = co_await p.server->async_read_some(asio::buffer(buf), use_nothrow);
        second = ec2;
      },
      asio::detached);
  asio::co_spawn(
      p.ioc,
      [&]() -> asio::awaitable<void> {
        std::array<char, 1> buf{'x'};
        co_await asio::async_write(p.client, asio::buffer(buf), use_nothrow);
      },
      asio::detached);
  p.ioc.run();
  EXPECT_FALSE(first) << first.message();
  EXPECT_TRUE(open_after_pause);
  EXPECT_EQ(second, asio::error::timed_out);
}

TEST(TimedSocket, DestroyedWithItsTimerArmedAndAReadPending) {
  Pair p;
  boost::system::error_code result;
  bool done = false;
  std::array<char, 16> buf{};
  p.server->expires_after(50ms);
  p.server->async_read_some(asio::buffer(buf), [&](boost::system::error_code ec, std::size_t) {
    result = ec;
    done = true;
  });
  p.server.reset();  // closes the socket; the read and the timer wait complete afterwards
  p.ioc.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(result, asio::error::operation_aborted);
}

}  // namespace
}  // namespace ticketd::net
