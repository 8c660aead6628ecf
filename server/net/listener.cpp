#include "server/net/listener.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <chrono>

namespace ticketd::net {

Listener::Listener(asio::io_context& ioc, std::string name, OnAccept on_accept)
    : ioc_(ioc), name_(std::move(name)), on_accept_(std::move(on_accept)), acceptor_(ioc) {}

DetailedResult<std::unique_ptr<Listener>> Listener::bind(asio::io_context& ioc,
                                                         const std::string& host,
                                                         std::uint16_t port, std::string name,
                                                         OnAccept on_accept, PickContext pick) {
  std::unique_ptr<Listener> l(new Listener(ioc, std::move(name), std::move(on_accept)));
  l->pick_ = std::move(pick);
  boost::system::error_code ec;
  const std::string where = l->name_ + " listen address " + host + ":" + std::to_string(port);
  auto address = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) return Error{ec, where + ": " + ec.message()};
  tcp::endpoint endpoint(address, port);
  if (l->acceptor_.open(endpoint.protocol(), ec); ec) return Error{ec, where + ": " + ec.message()};
  if (l->acceptor_.set_option(tcp::acceptor::reuse_address(true), ec); ec) {
    return Error{ec, where + ": " + ec.message()};
  }
  if (l->acceptor_.bind(endpoint, ec); ec) return Error{ec, where + ": " + ec.message()};
  if (l->acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return Error{ec, where + ": " + ec.message()};
  }
  l->port_ = l->acceptor_.local_endpoint().port();
  return l;
}

void Listener::start() {
  log::info(name_ + " listening on " + acceptor_.local_endpoint().address().to_string() + ":" +
            std::to_string(port_));
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), log_on_exit(name_ + " listener"));
}

void Listener::stop() {
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);  // ends accept_loop with operation_aborted
  });
}

asio::awaitable<void> Listener::accept_loop() {
  for (;;) {
    const asio::any_io_executor session_executor =
        pick_ ? asio::any_io_executor(pick_().get_executor())
              : asio::any_io_executor(asio::make_strand(ioc_));
    auto [ec, socket] = co_await acceptor_.async_accept(session_executor, use_nothrow);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      // A flood keeps failing the same way: log about one line a second, with a count.
      const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
      if (auto suppressed = accept_failures_.admit(now_ms)) {
        log::warn(name_ + " accept failed: " + ec.message() +
                  (*suppressed == 0 ? std::string()
                                    : " (" + std::to_string(*suppressed) +
                                          " more accept failures since the last such line)"));
      }
      // Out of file descriptors: the pending connection stays in the backlog and the next
      // accept fails at once, so wait for sessions to end instead of spinning. Other errors
      // (a peer that reset before accept) concern one connection only.
      if (ec == asio::error::no_descriptors || ec.value() == ENFILE ||
          ec == asio::error::no_buffer_space || ec == asio::error::no_memory) {
        asio::steady_timer t(acceptor_.get_executor(), kAcceptBackoff);
        co_await t.async_wait(use_nothrow);
      }
      continue;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    on_accept_(std::move(socket));
  }
}

}  // namespace ticketd::net
