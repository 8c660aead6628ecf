#include "server/http/http_session.h"

#include <array>
#include <atomic>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "server/base/log.h"
#include "server/http/error_mapping.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"
#include "server/net/awaited_completion.h"
#include "server/net/session_start.h"
#include "server/net/timed_socket.h"

namespace ticketd::http {
namespace {

namespace asio = net::asio;
namespace bhttp = beast::http;
using net::use_nothrow;

constexpr std::size_t kReadChunk = 4096;
// After answering a request we cannot continue (413, 431, 400), unread bytes still in flight
// would turn close() into a reset that can destroy the answer before the client reads it; so
// the session reads and discards a bounded amount first ("lingering close", as nginx does).
constexpr std::size_t kLingerBytes = 1024 * 1024;
constexpr std::chrono::milliseconds kLingerTimeout{1000};
// The largest answer body a session keeps to reuse for the next one (Reply::json_into): a
// `next` answer is a few dozen bytes, and an idle connection must stay small.
constexpr std::size_t kKeptBodyCapacity = 4096;

Response error_response(HttpErrc code, std::string_view message) {
  const auto m = map_error(code);
  Response res{m.status};
  res.preset("Content-Type: application/json\r\n");
  res.body() = error_body(m.code, message);
  res.keep_alive(false);
  return res;
}

using RequestParser = bhttp::request_parser<bhttp::string_body, FieldsAllocator<char>>;

// What a failed read means for the request being parsed, as Beast's read reports it: at EOF
// a request begun is a partial message (put_eof), none begun is end_of_stream.
beast::error_code end_of_input(const beast::error_code& read_error, RequestParser& parser) {
  if (read_error != asio::error::eof) return read_error;
  if (!parser.got_some()) return bhttp::error::end_of_stream;
  beast::error_code ec;
  parser.put_eof(ec);
  return ec;
}

enum class Until { kHeader, kBody };

// Feeds the bytes already read to the parser until the request's header (or whole body) is
// complete; error::need_more when it needs more input. Parsing in place, rather than through
// Beast's composed async_read_header/async_read, saves the trips through the scheduler those
// make even when nothing needs reading. The parser enforces the header and body limits.
beast::error_code parse_buffered(RequestParser& parser, beast::flat_buffer& buffer, Until until) {
  if (until == Until::kBody) parser.eager(true);  // the whole body, as bhttp::async_read reads
  while (until == Until::kHeader ? !parser.is_header_done() : !parser.is_done()) {
    if (buffer.size() == 0) return bhttp::error::need_more;
    beast::error_code ec;
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec) return ec;
    if (used == 0) return bhttp::error::need_more;
  }
  return {};
}

// Reads until parse_buffered has what it needs, under the stream's current deadline (as
// bhttp::async_read_header / async_read do).
template <class Stream>
asio::awaitable<beast::error_code> read_request(Stream& stream, beast::flat_buffer& buffer,
                                                RequestParser& parser, Until until) {
  while (true) {
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(kReadChunk), use_nothrow);
    if (ec) co_return end_of_input(ec, parser);
    buffer.commit(n);
    if (auto pec = parse_buffered(parser, buffer, until); pec != bhttp::error::need_more) {
      co_return pec;
    }
  }
}

// The answer to a read error that deserves one, or nullopt when the connection just ends
// (EOF, reset, timeout, cancellation).
std::optional<std::pair<HttpErrc, std::string>> answer_for(const beast::error_code& ec,
                                                           const HttpOptions& o) {
  if (ec == bhttp::error::body_limit) {
    return std::pair{HttpErrc::kBodyTooLarge,
                     "request body is larger than " + std::to_string(o.body_limit) + " bytes"};
  }
  if (ec == bhttp::error::header_limit) {
    return std::pair{HttpErrc::kHeaderTooLarge,
                     "request header is larger than " + std::to_string(o.header_limit) + " bytes"};
  }
  if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message) return std::nullopt;
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
    return std::pair{HttpErrc::kMalformed, "malformed HTTP request: " + ec.message()};
  }
  return std::nullopt;
}

// RFC 9112 6.1/6.3: the only transfer coding ticketd reads is a single "chunked". A request
// whose final coding is not chunked has no knowable length, and Beast would read it as bodiless
// and parse the body as the next request (request smuggling); it gets 400 and the connection is
// closed. Codings before chunked (gzip, chunked) are not supported and get the same answer.
std::optional<std::string> transfer_encoding_problem(const Fields& header) {
  std::vector<std::string> codings;
  bool present = false;
  for (auto it = header.find(bhttp::field::transfer_encoding);
       it != header.end() && it->name() == bhttp::field::transfer_encoding; ++it) {
    present = true;
    std::string_view rest = it->value();
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) codings.emplace_back(item);
    }
  }
  if (!present) return std::nullopt;
  if (codings.empty()) return "Transfer-Encoding is empty";
  if (!beast::iequals(codings.back(), "chunked")) {
    return "Transfer-Encoding must end in chunked; the length of this request's body cannot be "
           "determined";
  }
  if (codings.size() > 1) return "only the transfer coding 'chunked' is supported";
  return std::nullopt;
}

Response too_many_connections() {
  Response res{bhttp::status::service_unavailable};
  res.preset("Content-Type: application/json\r\nRetry-After: 1\r\n");
  res.body() = error_body("too_many_connections", "too many open HTTP connections");
  res.keep_alive(false);
  return res;
}

class ConnectionGauge {
 public:
  explicit ConnectionGauge(metrics::Metrics& m) : m_(m) { m_.connection_opened("http"); }
  ~ConnectionGauge() { m_.connection_closed("http"); }
  ConnectionGauge(const ConnectionGauge&) = delete;
  ConnectionGauge& operator=(const ConnectionGauge&) = delete;

 private:
  metrics::Metrics& m_;
};

asio::awaitable<void> linger_and_close(net::TimedSocket& stream) {
  beast::error_code ignored;
  stream.socket().shutdown(net::tcp::socket::shutdown_send, ignored);
  stream.expires_after(kLingerTimeout);
  std::array<char, kReadChunk> sink{};
  std::size_t drained = 0;
  while (drained < kLingerBytes) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), use_nothrow);
    if (ec) break;
    drained += n;
  }
  stream.close();
}

// The current request's line, kept for the audit event and log line of a refused token.
struct RequestLine {
  // Copies `req`'s request line into the kept strings, reusing their capacity.
  void assign(const Request& req) {
    presented_token = req.count(bhttp::field::authorization) != 0;
    method.assign(req.method_string());
    target.assign(req.target());
  }

  std::string method;
  std::string target;
  bool presented_token = false;
};

// What one connection keeps and reuses from one request to the next (in the coroutine frame).
struct RequestLoopState {
  explicit RequestLoopState(const asio::any_io_executor& ex)
      : completion(std::make_shared<net::AwaitedCompletion<Response>>(ex)) {}

  // Hands the parsed request to handle_request and returns the wait for its answer.
  asio::awaitable<Response> answer(const HttpDeps& deps, RequestParser& parser) {
    // The response is built on the session's strand; an inline answer is used at once, a late
    // one resumes the session on its own executor (net::AwaitedCompletion).
    // The completer holds one pointer: std::function keeps it without a heap block.
    handle_request(deps, parser.release(), completion->start(), completion, &body_buffer);
    return completion->wait();
  }

  beast::flat_buffer buffer;
  std::shared_ptr<net::AwaitedCompletion<Response>> completion;
  // Kept per connection and reused: the response's bytes, and the request line for the log
  // line of a refused token (made only then).
  std::string wire;
  std::string body_buffer;  // lent to the answer's body (handle_request), taken back after
  RequestLine line;
  // Every request's header fields come from here and go back here (a pool: the blocks a
  // request frees serve the next one). It outlives the session while any block
  // is out (a response a torn-down io_context still holds).
  const FieldsPool::Owner fields_pool = FieldsPool::make_owned();
  const FieldsAllocator<char> fields_allocator{fields_pool.get()};
};

// The 400 for a request whose header was read but must not be served, or nullopt.
std::optional<std::pair<HttpErrc, std::string>> header_refusal(const beast::error_code& ec,
                                                               const RequestParser& parser) {
  if (ec) return std::nullopt;
  if (auto problem = transfer_encoding_problem(parser.get())) {
    return std::pair{HttpErrc::kMalformed, std::move(*problem)};
  }
  return std::nullopt;
}

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Whether the client waits for kContinue before it sends the body it announced.
bool expects_continue(const RequestParser& parser) {
  // curl and others wait for this before sending a large body.
  return !parser.is_done() && beast::iequals(parser.get()[bhttp::field::expect], "100-continue");
}

// Counts a refusal the connection cannot continue after and serializes it into `wire`.
void serialize_refusal(HttpDeps& deps, const std::pair<HttpErrc, std::string>& answer,
                       std::string& wire) {
  deps.metrics.error("http", map_error(answer.first).code);
  error_response(answer.first, answer.second).serialize(wire);
}

// Takes the auth throttle's slot for a request; false, with the 429 in `wire`, if refused.
bool admitted_by_throttle(HttpDeps& deps, const std::string& peer, AuthThrottle::Slot& slot,
                          std::string& wire) {
  // A token has no user: the pair is the address alone. While this address's bad tokens are
  // being answered slowly, a further request is refused unchecked.
  if (deps.auth == nullptr || deps.auth->admit(peer, {}, slot)) return true;
  deps.metrics.error("http", map_error(HttpErrc::kTooManyAuthFailures).code);
  Response busy = error_response(HttpErrc::kTooManyAuthFailures,
                                 "requests with a bad bearer token from this address are "
                                 "being answered slowly; try again later");
  busy.set(bhttp::field::retry_after, "1");
  busy.serialize(wire);
  return false;
}

// Writes a refusal, then closes the connection lingering so that the client can read it.
template <class Stream>
asio::awaitable<void> refuse_and_close(Stream& io, net::TimedSocket& tcp, const std::string& wire,
                                       std::chrono::milliseconds write_timeout) {
  tcp.expires_after(write_timeout);
  auto [wec, wn] = co_await asio::async_write(io, asio::buffer(wire), use_nothrow);
  if (!wec) co_await linger_and_close(tcp);
}

// A refused bearer token: audited, counted by the auth throttle and logged (AuthOutcomes); how
// long its answer waits, in ms. 0 for any other answer.
std::int64_t record_refused_token(HttpDeps& deps, const Response& res, AuthThrottle::Slot& slot,
                                  const RequestLine& line, const std::string& peer) {
  if (res.result() != bhttp::status::unauthorized || deps.auth == nullptr) return 0;
  // The request line (never the Authorization header) says what was refused.
  const std::string who = line.method + " " + printable(line.target, 128) +
                          (line.presented_token ? " (wrong bearer token)" : " (no bearer token)");
  const std::string detail = "http " + who + " from " + peer;
  const std::string_view refused_target = std::string_view(line.target).substr(0, 128);
  return deps.auth->refused(
      slot, {peer, {}, "http authorization", who, "token_refused", detail},
      {{"client", peer}, {"method", line.method}, {"target", refused_target}});
}

// Serializes the answer into `wire` and keeps its body's buffer for the next answers.
void serialize_answer(Response& res, std::string& wire, std::string& body_buffer) {
  res.serialize(wire);
  if (res.body().capacity() > body_buffer.capacity() &&
      res.body().capacity() <= kKeptBodyCapacity) {
    body_buffer = std::move(res.body());
  }
}

// Whether the connection ends after an answer's write: a write error, or no keep-alive.
bool ends_after_answer(const beast::error_code& write_error, const Response& res,
                       net::TimedSocket& tcp, const std::string& peer) {
  if (write_error) {
    log::debug("http session ended while writing: " + write_error.message(), {{"client", peer}});
    return true;
  }
  if (!res.keep_alive()) {
    beast::error_code ignored;
    tcp.socket().shutdown(net::tcp::socket::shutdown_send, ignored);
    return true;
  }
  return false;
}

// The request loop, on the TCP stream or on TLS over it (`tcp` is the lowest layer either way:
// deadlines, half-close and close act on it).
template <class Stream>
asio::awaitable<void> serve_requests(Stream& io, net::TimedSocket& tcp, HttpDeps& deps,
                                     asio::steady_timer& throttle_timer, const std::string& peer) {
  const auto ex = co_await asio::this_coro::executor;
  const HttpOptions& o = deps.options;
  RequestLoopState conn(ex);

  for (bool first = true;; first = false) {
    if (deps.sessions.stopping()) break;
    if (conn.buffer.size() == 0) {
      // A new connection has header_timeout to send its first request; between requests a
      // kept-alive connection may idle for idle_timeout.
      tcp.expires_after(first ? o.header_timeout : o.idle_timeout);
      auto [ec, n] = co_await io.async_read_some(conn.buffer.prepare(kReadChunk), use_nothrow);
      if (ec) {
        log::debug("http session ended while idle: " + ec.message(), {{"client", peer}});
        break;
      }
      conn.buffer.commit(n);
    }
    RequestParser parser(std::piecewise_construct, std::make_tuple(),
                         std::make_tuple(conn.fields_allocator));
    parser.header_limit(static_cast<std::uint32_t>(o.header_limit));
    parser.body_limit(o.body_limit);
    // The first request's header counts from accept (the deadline set above keeps running);
    // a later one's from its first byte. The body then gets read_timeout.
    if (!first) tcp.expires_after(o.header_timeout);
    // Parsed from what was read; a coroutine only when more must be read.
    beast::error_code ec = parse_buffered(parser, conn.buffer, Until::kHeader);
    if (ec == bhttp::error::need_more) {
      ec = co_await read_request(io, conn.buffer, parser, Until::kHeader);
    }
    std::optional<std::pair<HttpErrc, std::string>> refusal = header_refusal(ec, parser);
    tcp.expires_after(o.read_timeout);
    if (!ec && !refusal && expects_continue(parser)) {
      auto [cec, cn] = co_await asio::async_write(io, asio::buffer(kContinue), use_nothrow);
      ec = cec;
    }
    if (!ec && !refusal && !parser.is_done()) {
      ec = parse_buffered(parser, conn.buffer, Until::kBody);
      if (ec == bhttp::error::need_more) {
        ec = co_await read_request(io, conn.buffer, parser, Until::kBody);
      }
    }
    if (ec && !refusal) {
      refusal = answer_for(ec, o);
      if (!refusal) {
        log::debug("http session ended while reading: " + ec.message(), {{"client", peer}});
        break;
      }
    }
    if (refusal) {
      serialize_refusal(deps, *refusal, conn.wire);
      co_await refuse_and_close(io, tcp, conn.wire, o.read_timeout);
      break;
    }

    conn.line.assign(parser.get());
    AuthThrottle::Slot slot;
    if (!admitted_by_throttle(deps, peer, slot, conn.wire)) {
      co_await refuse_and_close(io, tcp, conn.wire, o.read_timeout);
      break;
    }
    Response res = co_await conn.answer(deps, parser);
    if (const auto delay_ms = record_refused_token(deps, res, slot, conn.line, peer);
        delay_ms > 0) {
      // The bad token's answer waits (a timer: the I/O thread serves others meanwhile),
      // holding its place; a good token is never delayed.
      throttle_timer.expires_after(std::chrono::milliseconds(delay_ms));
      co_await throttle_timer.async_wait(use_nothrow);
      if (deps.sessions.stopping()) res.keep_alive(false);
    }
    if (deps.sessions.stopping()) res.keep_alive(false);
    tcp.expires_after(o.read_timeout);
    serialize_answer(res, conn.wire, conn.body_buffer);
    auto [wec, wn] = co_await asio::async_write(io, asio::buffer(conn.wire), use_nothrow);
    if (ends_after_answer(wec, res, tcp, peer)) break;
  }
}

}  // namespace

asio::awaitable<void> run_http_session(net::tcp::socket socket, HttpDeps& deps) {
  const auto ex = co_await asio::this_coro::executor;
  net::SessionStart start(std::move(socket), deps.sessions, ex);
  net::TimedSocket& stream = start.stream();
  if (!start.admitted()) {
    stream.close();
    co_return;
  }
  ConnectionGauge gauge(deps.metrics);
  const HttpOptions& o = deps.options;
  if (start.over_cap(o.max_connections)) {
    // Answered without reading anything, so the descriptor is free again at once. An HTTPS
    // client expects a TLS handshake, not a plain-text answer: it is closed (a handshake
    // first would spend the CPU the cap protects).
    deps.metrics.error("http", "too_many_connections");
    if (deps.tls) {
      stream.close();
      co_return;
    }
    stream.expires_after(std::chrono::seconds(1));
    std::string wire;
    too_many_connections().serialize(wire);
    co_await asio::async_write(stream, asio::buffer(wire), use_nothrow);
    beast::error_code ignored;
    stream.socket().shutdown(net::tcp::socket::shutdown_send, ignored);
    stream.socket().close(ignored);
    co_return;
  }
  const std::string& peer = start.peer();
  if (!deps.tls) {
    co_await serve_requests(stream, stream, deps, start.throttle_timer(), peer);
  } else {
    // HTTPS: the handshake shares the first request's header_timeout.
    asio::ssl::stream<net::TimedSocket&> tls(stream, *deps.tls);
    if (auto e = co_await net::tls_accept(tls, stream, o.header_timeout); e) {
      log::debug("http TLS handshake failed: " + e.message(), {{"client", peer}});
    } else {
      co_await serve_requests(tls, stream, deps, start.throttle_timer(), peer);
    }
  }
  beast::error_code ignored;
  stream.socket().close(ignored);
}

}  // namespace ticketd::http
