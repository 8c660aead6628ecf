// The I/O threads: one io_context per thread.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

namespace ticketd::net {

namespace asio = boost::asio;

/// One io_context per I/O thread. Each accepted connection is given to one context (round
/// robin) and runs there from accept to close, on that one thread: no strand, no hop between
/// threads, and Asio's per-thread recycling of handler memory gets back what it handed out
/// (with one shared context, a coroutine resumed on the other thread frees its memory into the
/// wrong cache, which cost about five allocations per MySQL ticket on two threads). Context 0
/// also runs the listeners, signals and background tasks.
/// Thread safety: session_context() from any thread; run() once, by the daemon; stop() from any
/// thread.
class IoPool {
 public:
  explicit IoPool(unsigned threads);
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  [[nodiscard]] asio::io_context& main() { return *contexts_.front(); }
  /// The context the next accepted connection runs on.
  [[nodiscard]] asio::io_context& session_context();
  [[nodiscard]] std::size_t size() const { return contexts_.size(); }

  /// Runs every context, one on the calling thread, until stop(); then joins the others.
  void run();
  /// Ends run(): every context stops (handlers not yet run are destroyed with the pool).
  void stop();

 private:
  using Guard = asio::executor_work_guard<asio::io_context::executor_type>;
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<Guard> guards_;  // keep a context without sessions running until stop()
  std::atomic<std::size_t> next_{0};
};

}  // namespace ticketd::net
