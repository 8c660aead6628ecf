// A TCP socket with a deadline, for the front ends' sessions: what beast::tcp_stream's timeouts
// do, without a timer operation per read and write.
#pragma once

#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <utility>

namespace ticketd::net {

/// A stream socket (AsyncReadStream, AsyncWriteStream; the next layer of an asio::ssl::stream)
/// whose operations must complete by a deadline. As with beast::tcp_stream: `expires_after(d)`
/// sets the deadline of the operations pending and started from now on; an operation pending
/// when it passes makes the socket close, and every pending operation completes with
/// asio::error::timed_out. Between operations (a session computing its answer, a login delay)
/// the deadline does not apply; an operation started after it passed fails at once.
///
/// Unlike beast's stream, which starts and cancels a timer wait for every operation (a
/// scheduler lock and a timer-queue entry each time), the one timer here is started when an
/// operation begins and none is pending, for the current deadline, and a later deadline only
/// moves a number: when the timer fires early it waits again for what is left. A nearer
/// deadline re-arms it. A connection that keeps talking costs a clock read per expires_after.
///
/// One thread or strand (the connection's) uses it; its state lives in a shared block that
/// pending handlers hold, so it may be destroyed with operations or the timer outstanding.
class TimedSocket {
  using Clock = std::chrono::steady_clock;
  struct State;

 public:
  using socket_type = boost::asio::ip::tcp::socket;
  using executor_type = socket_type::executor_type;
  using lowest_layer_type = socket_type::lowest_layer_type;

  explicit TimedSocket(socket_type socket) : state_(std::make_shared<State>(std::move(socket))) {}
  ~TimedSocket() {
    if (!state_) return;
    state_->owner_gone = true;
    boost::system::error_code ignored;
    state_->socket.close(ignored);
    state_->timer.cancel();
  }
  TimedSocket(const TimedSocket&) = delete;
  TimedSocket& operator=(const TimedSocket&) = delete;

  executor_type get_executor() noexcept { return state_->socket.get_executor(); }
  socket_type& socket() noexcept { return state_->socket; }
  lowest_layer_type& lowest_layer() noexcept { return state_->socket.lowest_layer(); }

  /// The deadline of pending and later operations: now + d.
  void expires_after(Clock::duration d) {
    State& s = *state_;
    s.deadline = Clock::now() + d;
    if (s.armed ? s.deadline < s.armed_until : s.pending > 0) arm(state_);
  }

  void close() {
    boost::system::error_code ignored;
    state_->socket.close(ignored);
  }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          started();
          state_->socket.async_read_some(b,
                                         Completion<decltype(handler)>{state_, std::move(handler)});
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          started();
          state_->socket.async_write_some(
              b, Completion<decltype(handler)>{state_, std::move(handler)});
        },
        token, buffers);
  }

  // Completes an operation: counts it out and reports a close by the deadline as timed_out.
  // Every association (executor, allocator, cancellation slot) is the wrapped handler's.
  template <class Handler>
  struct Completion {
    std::shared_ptr<State> state;
    Handler handler;
    void operator()(boost::system::error_code ec, std::size_t n) {
      --state->pending;
      if (ec && state->timed_out) ec = boost::asio::error::timed_out;
      state.reset();
      std::move(handler)(ec, n);
    }
  };

 private:
  struct State {
    explicit State(socket_type s) : socket(std::move(s)), timer(socket.get_executor()) {}
    socket_type socket;
    boost::asio::steady_timer timer;
    Clock::time_point deadline = Clock::time_point::max();
    Clock::time_point armed_until{};
    int pending = 0;     // operations started and not yet completed
    bool armed = false;  // a timer wait is outstanding, until armed_until
    bool timed_out = false;
    bool owner_gone = false;
  };

  void started() {
    State& s = *state_;
    ++s.pending;
    if (!s.armed && s.deadline != Clock::time_point::max()) arm(state_);
  }

  static void arm(const std::shared_ptr<State>& state) {
    State& s = *state;
    s.armed = true;
    s.armed_until = s.deadline;
    s.timer.expires_at(s.deadline);  // cancels a wait outstanding for a later time
    s.timer.async_wait([state](boost::system::error_code ec) {
      if (ec == boost::asio::error::operation_aborted || state->owner_gone) return;
      State& st = *state;
      st.armed = false;
      if (Clock::now() < st.deadline) {
        arm(state);  // the deadline moved on since the wait began
      } else if (st.pending > 0) {
        st.timed_out = true;
        boost::system::error_code ignored;
        st.socket.close(ignored);
      }
      // Passed between operations: the next one to start arms the timer, which fires at once.
    });
  }

  std::shared_ptr<State> state_;
};

}  // namespace ticketd::net

namespace boost::asio {

// TimedSocket's completion is its handler for every association (the awaitable's executor and
// its recycling allocator in particular).
template <template <class, class> class Associator, class Handler, class DefaultCandidate>
struct associator<Associator, ticketd::net::TimedSocket::Completion<Handler>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const ticketd::net::TimedSocket::Completion<Handler>& c) noexcept {
    return Associator<Handler, DefaultCandidate>::get(c.handler);
  }
  static auto get(const ticketd::net::TimedSocket::Completion<Handler>& c,
                  const DefaultCandidate& d) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(c.handler, d)) {
    return Associator<Handler, DefaultCandidate>::get(c.handler, d);
  }
};

}  // namespace boost::asio
