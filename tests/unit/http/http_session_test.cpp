// The HTTP session over real loopback sockets: a Listener on 127.0.0.1 port 0 spawning
// run_http_session, and a blocking client socket speaking raw HTTP/1.1.
#include "server/http/http_session.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <thread>

#include "server/net/listener.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::http {
namespace {

namespace asio = net::asio;
namespace bhttp = beast::http;
using net::tcp;
using testing::HttpEngine;

// Runs an io_context with the listener on two threads (as the daemon does).
class Loopback {
 public:
  explicit Loopback(HttpOptions options = {}) : engine_(std::move(options)) {
    auto l = net::Listener::bind(ioc_, "127.0.0.1", 0, "http", [this](tcp::socket socket) {
      auto ex = socket.get_executor();
      asio::co_spawn(ex, run_http_session(std::move(socket), engine_.deps),
                     net::log_on_exit("http"));
    });
    EXPECT_TRUE(l) << (l ? "" : l.error().message);
    listener_ = std::move(*l);
    listener_->start();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }
  ~Loopback() {
    listener_->stop();
    engine_.sessions.cancel_all();
    work_.reset();
    for (auto& t : threads_) t.join();
  }

  HttpEngine& engine() { return engine_; }

  /// A connected blocking socket with a receive timeout, so a broken test fails, not hangs.
  tcp::socket connect() {
    tcp::socket s(client_ctx_);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), listener_->port()));
    timeval tv{10, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return s;
  }

 private:
  HttpEngine engine_;
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{ioc_.get_executor()};
  std::unique_ptr<net::Listener> listener_;
  std::vector<std::thread> threads_;
  asio::io_context client_ctx_;
};

void send(tcp::socket& s, std::string_view bytes) { asio::write(s, asio::buffer(bytes)); }

bhttp::response<bhttp::string_body> read_response(tcp::socket& s, beast::flat_buffer& buffer) {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  beast::error_code ec;
  bhttp::read(s, buffer, parser, ec);
  EXPECT_FALSE(ec) << ec.message();
  return parser.release();
}

// True when the server closed the connection (EOF or reset) before the receive timeout.
bool closed_by_server(tcp::socket& s, beast::flat_buffer& buffer) {
  beast::error_code ec;
  char c;
  if (buffer.size() > 0) return false;
  s.read_some(asio::buffer(&c, 1), ec);
  return ec == asio::error::eof || ec == asio::error::connection_reset;
}

// Polls `done` until it holds or `timeout` passes, for what the server does on its own threads
// (a session ending after its peer closed). The caller asserts the result: a slow machine makes
// the test slower, never wrong, and a condition that never holds fails instead of going on.
template <class Condition>
bool eventually(Condition done,
                std::chrono::steady_clock::duration timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

std::string next_request(int count, bool close = false) {
  std::string body = R"({"count":)" + std::to_string(count) + "}";
  return "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\nContent-Type: "
         "application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n" +
         body;
}

TEST(HttpSession, KeepAliveServesManyRequestsOnOneConnection) {
  Loopback lb;
  auto s = lb.connect();
  beast::flat_buffer buf;
  for (int i = 1; i <= 3; ++i) {
    send(s, next_request(1));
    auto r = read_response(s, buf);
    EXPECT_EQ(r.result(), bhttp::status::ok);
    EXPECT_TRUE(r.keep_alive());
    EXPECT_EQ(r.body(), R"({"sequence":"Tickets64","ids":[")" + std::to_string(i) + "\"]}");
  }
  send(s, next_request(1, /*close=*/true));
  auto last = read_response(s, buf);
  EXPECT_FALSE(last.keep_alive());
  EXPECT_TRUE(closed_by_server(s, buf));
}

TEST(HttpSession, PipelinedRequestsAreAnsweredInOrder) {
  Loopback lb;
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s, next_request(2) + next_request(1) + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(read_response(s, buf).body(), R"({"sequence":"Tickets64","ids":["1","2"]})");
  EXPECT_EQ(read_response(s, buf).body(), R"({"sequence":"Tickets64","ids":["3"]})");
  EXPECT_EQ(read_response(s, buf).body(), R"({"status":"ok"})");
}

// The session parses what it has read and reads more when the parser needs it: a request
// arriving a byte at a time (header, then body) is answered like one that arrives whole.
TEST(HttpSession, ARequestArrivingAByteAtATimeIsAnswered) {
  Loopback lb;
  auto s = lb.connect();
  s.set_option(tcp::no_delay(true));
  beast::flat_buffer buf;
  const std::string request = next_request(2);
  for (const char c : request) send(s, std::string_view(&c, 1));
  EXPECT_EQ(read_response(s, buf).body(), R"({"sequence":"Tickets64","ids":["1","2"]})");
  // And a chunked one, split inside its chunk framing.
  const std::string chunked =
      "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\n"
      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\n{\"cou\r\n6\r\nnt\":1}\r\n0\r\n\r\n";
  for (const char c : chunked) send(s, std::string_view(&c, 1));
  EXPECT_EQ(read_response(s, buf).body(), R"({"sequence":"Tickets64","ids":["3"]})");
}

TEST(HttpSession, OversizedBodyIs413AndCloses) {
  HttpOptions o;
  o.body_limit = 1024;
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  // Content-Length alone is enough: the server answers before the body arrives.
  send(s,
       "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Content-Length: 2000000\r\n\r\n{\"count\":");
  auto r = read_response(s, buf);
  EXPECT_EQ(r.result(), bhttp::status::payload_too_large);
  EXPECT_NE(r.body().find("payload_too_large"), std::string::npos);
  EXPECT_FALSE(r.keep_alive());
  EXPECT_TRUE(closed_by_server(s, buf));
  EXPECT_EQ(lb.engine().tickets.find("Tickets64")->info().issued, 0u);
}

TEST(HttpSession, ChunkedBodyOverTheLimitIs413) {
  HttpOptions o;
  o.body_limit = 64;
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s,
       "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Transfer-Encoding: chunked\r\n\r\n80\r\n" +
           std::string(128, ' ') + "\r\n0\r\n\r\n");
  EXPECT_EQ(read_response(s, buf).result(), bhttp::status::payload_too_large);
}

TEST(HttpSession, HeaderTooLargeIs431AndCloses) {
  HttpOptions o;
  o.header_limit = 1024;
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n");
  auto r = read_response(s, buf);
  EXPECT_EQ(r.result(), bhttp::status::request_header_fields_too_large);
  EXPECT_TRUE(closed_by_server(s, buf));
}

TEST(HttpSession, GarbageIs400AndCloses) {
  Loopback lb;
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s, "HELLO THERE\r\n\r\n");
  auto r = read_response(s, buf);
  EXPECT_EQ(r.result(), bhttp::status::bad_request);
  EXPECT_TRUE(closed_by_server(s, buf));
}

TEST(HttpSession, SlowHeaderIsClosedAfterTheHeaderTimeout) {
  HttpOptions o;
  o.header_timeout = std::chrono::milliseconds(200);
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s, "GET /healthz HTTP/1.1\r\nHo");  // and never the rest
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_by_server(s, buf));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(HttpSession, ANewConnectionThatSendsNothingIsClosedAfterTheHeaderTimeout) {
  HttpOptions o;
  o.header_timeout = std::chrono::milliseconds(200);
  o.idle_timeout = std::chrono::seconds(60);
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_by_server(s, buf));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(HttpSession, ALaterSlowHeaderIsClosedAfterTheHeaderTimeout) {
  HttpOptions o;
  o.header_timeout = std::chrono::milliseconds(200);
  o.idle_timeout = std::chrono::seconds(60);
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(read_response(s, buf).result(), bhttp::status::ok);
  send(s, "GET /healthz HTTP/1.1\r\nHo");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_by_server(s, buf));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(HttpSession, SlowBodyIsClosedAfterTheReadTimeout) {
  HttpOptions o;
  o.read_timeout = std::chrono::milliseconds(200);
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s,
       "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\nContent-Type: "
       "application/json\r\nContent-Length: 11\r\n\r\n{\"co");  // and never the rest
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_by_server(s, buf));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// RFC 9112 6.3: a Transfer-Encoding whose final coding is not chunked leaves the body length
// unknown; reading it as bodiless would parse the body as a second, smuggled request.
TEST(HttpSession, TransferEncodingOtherThanOneChunkedIs400AndCloses) {
  const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string te :
       {"Transfer-Encoding: gzip\r\n", "Transfer-Encoding: chunked, gzip\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
        "Transfer-Encoding: identity\r\n", "Transfer-Encoding: \r\n"}) {
    Loopback lb;
    auto s = lb.connect();
    beast::flat_buffer buf;
    send(s,
         "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\nContent-Type: "
         "application/json\r\n" +
             te + "\r\n" + smuggled);
    auto r = read_response(s, buf);
    EXPECT_EQ(r.result(), bhttp::status::bad_request) << te;
    EXPECT_FALSE(r.keep_alive()) << te;
    EXPECT_TRUE(closed_by_server(s, buf)) << te << ": the smuggled request was answered";
  }
}

TEST(HttpSession, AChunkedBodyIsStillRead) {
  Loopback lb;
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s,
       "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\nContent-Type: "
       "application/json\r\nTransfer-Encoding: Chunked\r\n\r\nb\r\n{\"count\":2}\r\n0\r\n\r\n");
  auto r = read_response(s, buf);
  EXPECT_EQ(r.result(), bhttp::status::ok);
  EXPECT_EQ(r.body(), R"({"sequence":"Tickets64","ids":["1","2"]})");
}

TEST(HttpSession, ConnectionsOverTheCapAreAnswered503AndClosed) {
  HttpOptions o;
  o.max_connections = 2;
  Loopback lb(o);
  beast::flat_buffer b1;
  beast::flat_buffer b2;
  auto s1 = lb.connect();
  auto s2 = lb.connect();
  for (auto* p : {&s1, &s2}) {
    send(*p, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  ASSERT_EQ(read_response(s1, b1).result(), bhttp::status::ok);
  ASSERT_EQ(read_response(s2, b2).result(), bhttp::status::ok);
  auto s3 = lb.connect();
  beast::flat_buffer b3;
  auto r = read_response(s3, b3);
  EXPECT_EQ(r.result(), bhttp::status::service_unavailable);
  EXPECT_NE(r.body().find("too_many_connections"), std::string::npos);
  EXPECT_TRUE(closed_by_server(s3, b3));
  // The first two are still served; once one ends, a new connection is admitted.
  s1.close();
  ASSERT_TRUE(eventually([&] { return lb.engine().sessions.count() <= 1; }))
      << "the closed connection's session never ended";
  auto s4 = lb.connect();
  beast::flat_buffer b4;
  send(s4, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(read_response(s4, b4).result(), bhttp::status::ok);
}

TEST(HttpSession, IdleConnectionIsClosedAfterTheIdleTimeout) {
  HttpOptions o;
  o.idle_timeout = std::chrono::milliseconds(200);
  Loopback lb(o);
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(read_response(s, buf).result(), bhttp::status::ok);
  EXPECT_TRUE(closed_by_server(s, buf));  // nothing more sent: closed when idle
}

TEST(HttpSession, ExpectContinueGetsAnInterimResponse) {
  Loopback lb;
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s,
       "POST /v1/sequences/Tickets64/next HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Content-Length: 11\r\nExpect: 100-continue\r\n\r\n");
  auto interim = read_response(s, buf);
  EXPECT_EQ(interim.result(), bhttp::status::continue_);
  send(s, R"({"count":1})");
  EXPECT_EQ(read_response(s, buf).result(), bhttp::status::ok);
}

TEST(HttpSession, CancelAllEndsOpenSessionsAndTheyAreCounted) {
  Loopback lb;
  auto s = lb.connect();
  beast::flat_buffer buf;
  send(s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(read_response(s, buf).result(), bhttp::status::ok);
  EXPECT_EQ(lb.engine().sessions.count(), 1u);
  EXPECT_NE(lb.engine().metrics.serialize().find(R"(ticketd_open_connections{frontend="http"} 1)"),
            std::string::npos);
  lb.engine().sessions.cancel_all();
  EXPECT_TRUE(closed_by_server(s, buf));
  // A connection made after shutdown started is refused at once.
  auto late = lb.connect();
  beast::flat_buffer late_buf;
  EXPECT_TRUE(closed_by_server(late, late_buf));
}

}  // namespace
}  // namespace ticketd::http
