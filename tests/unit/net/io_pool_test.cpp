// net::IoPool: one context per thread, connections spread round robin, stop() ends run().
#include "server/net/io_pool.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <future>
#include <set>
#include <thread>
#include <vector>

namespace ticketd::net {
namespace {

TEST(IoPool, SpreadsConnectionsRoundRobinOverItsContexts) {
  IoPool pool(3);
  ASSERT_EQ(pool.size(), 3u);
  std::vector<asio::io_context*> picked;
  for (int i = 0; i < 6; ++i) picked.push_back(&pool.session_context());
  EXPECT_EQ(std::set<asio::io_context*>(picked.begin(), picked.end()).size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(picked[i], picked[i + 3]);
  EXPECT_EQ(IoPool(0).size(), 1u);  // at least one thread
}

TEST(IoPool, EachContextRunsOnItsOwnThreadUntilStopped) {
  IoPool pool(2);
  std::vector<asio::io_context*> contexts{&pool.session_context(), &pool.session_context()};
  std::thread runner([&pool] { pool.run(); });
  // Every handler of one context runs on the same thread, and the two contexts' threads differ.
  std::vector<std::set<std::thread::id>> seen(2);
  for (int round = 0; round < 20; ++round) {
    for (std::size_t c = 0; c < 2; ++c) {
      std::promise<std::thread::id> where;
      asio::post(*contexts[c], [&where] { where.set_value(std::this_thread::get_id()); });
      seen[c].insert(where.get_future().get());
    }
  }
  EXPECT_EQ(seen[0].size(), 1u);
  EXPECT_EQ(seen[1].size(), 1u);
  EXPECT_NE(*seen[0].begin(), *seen[1].begin());
  pool.stop();
  runner.join();  // run() returned: every context stopped
  for (auto* c : contexts) EXPECT_TRUE(c->stopped());
}

}  // namespace
}  // namespace ticketd::net
