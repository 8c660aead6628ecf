#include "server/net/io_pool.h"

#include <algorithm>
#include <thread>

namespace ticketd::net {

IoPool::IoPool(unsigned threads) {
  const unsigned n = std::max(1u, threads);
  for (unsigned i = 0; i < n; ++i) {
    // Hint 1: one thread runs the context (other threads may still post to it).
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    guards_.emplace_back(contexts_.back()->get_executor());
  }
}

asio::io_context& IoPool::session_context() {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void IoPool::run() {
  std::vector<std::thread> others;
  for (std::size_t i = 1; i < contexts_.size(); ++i) {
    others.emplace_back([ctx = contexts_[i].get()] { ctx->run(); });
  }
  contexts_.front()->run();
  // The main context ends only through stop(), which stops the others too.
  for (auto& t : others) t.join();
}

void IoPool::stop() {
  for (auto& c : contexts_) c->stop();
}

}  // namespace ticketd::net
