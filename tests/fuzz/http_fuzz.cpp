// HTTP request handling (handle_request: the route table, its handlers, the JSON codec) over
// the engine on the in-memory store, with the request heads parsed by Beast as the session
// parses them.
//
// Input: [flags] then requests separated by "\n~~~\n". Each request is a head up to its blank
// line (the session's parser reads it) and a body (the rest, so that mutated bodies keep a
// matching Content-Length). Flag bit 0 configures a bearer token, bit 1 makes /metrics public.
// One engine serves all the requests of an input, so a sequence can be created, then used.
//
// Invariants: handle_request answers exactly once; the status is one the error table or a
// handler can give, never 500 (an error without a row in http/error_mapping); a JSON answer
// parses, and an error answer is {"error": {"code": ..., "message": ...}}; a 405 names the allowed
// methods; Content-Length is the body's; the response serializes.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "server/base/log.h"
#include "server/core/group_committer.h"
#include "server/core/lease_log.h"
#include "server/core/ticket_service.h"
#include "server/core/timer_queue.h"
#include "server/core/uuidv7_generator.h"
#include "server/core/worker_pool_service.h"
#include "server/http/routes.h"
#include "server/metrics/metrics.h"
#include "server/net/session_registry.h"
#include "storage/memory_counter_store.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/fake_clock.h"

namespace {

namespace bhttp = boost::beast::http;
using namespace ::ticketd;
using namespace ::ticketd::http;

constexpr std::string_view kSeparator = "\n~~~\n";
constexpr std::string_view kToken = "fuzz-token-0123456789abcdef";

struct Engine {
  explicit Engine(HttpOptions options)
      : deps{tickets, leases, metrics, clock, sessions, [] { return true; }, std::move(options)} {
    log::set_level(log::Level::kError);  // not a line per sequence created, per input
    tickets.enable_runtime_kinds(RuntimeKinds{&clock, &reads, nullptr});
    FUZZ_CHECK(tickets.load().has_value());
    FUZZ_CHECK(tickets.ensure_configured(SequenceSpec{.name = "Tickets64"}).has_value());
    FUZZ_CHECK(tickets
                   .ensure_configured(SequenceSpec{
                       .name = "Tickets32", .increment = 2, .offset = 1, .max_value = 4294967295})
                   .has_value());
    FUZZ_CHECK(tickets.add_uuidv7("Uuids", std::make_shared<UuidV7Generator>(clock, 42)));
    FUZZ_CHECK(workers.add_pool(WorkerPoolSpec{.name = "orders",
                                               .size = 4,
                                               .min_ttl_ms = 1000,
                                               .max_ttl_ms = 60000,
                                               .default_ttl_ms = 10000}));
    deps.workers = &workers;
  }
  ~Engine() {
    reads.stop();
    committer.stop();
  }

  ticketd::testing::FakeClock clock;
  MemoryCounterStore store;
  GroupCommitter committer{store};
  TicketService tickets{store, committer};
  TimerQueue reads;  // real time, as in production: a FakeClock that never steps would hold it
  LeaseLog leases{tickets, store, reads, clock};
  WorkerPoolService workers{store, committer, clock};
  metrics::Metrics metrics{tickets, committer, clock};
  net::SessionRegistry sessions;
  HttpDeps deps;
};

using RequestParser = bhttp::request_parser<bhttp::string_body, FieldsAllocator<char>>;

// The request the session would hand to handle_request, or nullopt where the session itself
// answers (a head that does not parse, Transfer-Encoding). A body over the limit is left in:
// handle_request refuses it too, for callers that build requests.
std::optional<Request> make_request(std::string_view text, const HttpOptions& options) {
  const auto blank = text.find("\r\n\r\n");
  if (blank == std::string_view::npos) return std::nullopt;
  const std::string_view head = text.substr(0, blank + 4);
  const std::string_view body = text.substr(blank + 4);
  RequestParser parser;
  parser.header_limit(static_cast<std::uint32_t>(options.header_limit));
  parser.eager(false);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (!parser.is_header_done()) return std::nullopt;
  Request req = parser.release();
  if (req.count(bhttp::field::transfer_encoding) != 0) return std::nullopt;
  req.erase(bhttp::field::content_length);
  req.body() = std::string(body);
  req.prepare_payload();
  return req;
}

bool known_status(unsigned status) {
  switch (status) {
    case 200:
    case 201:
    case 204:
    case 400:
    case 401:
    case 404:
    case 405:
    case 409:
    case 413:
    case 415:
    case 422:
    case 431:
    case 503:
      return true;
    default:
      return false;
  }
}

void check_response(const Response& res) {
  const unsigned status = res.result_int();
  FUZZ_CHECK(status != 500);
  FUZZ_CHECK(known_status(status));
  if (status == 405) FUZZ_CHECK(!res[bhttp::field::allow].empty());
  if (status == 204) FUZZ_CHECK(res.body().empty());
  if (res[bhttp::field::content_type].starts_with("application/json")) {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(res.body(), ec);
    if (ec) std::fprintf(stderr, "%u answer is not JSON: %s\n", status, res.body().c_str());
    FUZZ_CHECK(!ec);
    if (status >= 400) {
      // {"error": {"code": "not_found", "message": "..."}}
      FUZZ_CHECK(v.is_object());
      const auto* error = v.as_object().if_contains("error");
      FUZZ_CHECK(error != nullptr && error->is_object());
      const auto* code = error->as_object().if_contains("code");
      const auto* message = error->as_object().if_contains("message");
      FUZZ_CHECK(code != nullptr && code->is_string() && !code->as_string().empty());
      FUZZ_CHECK(message != nullptr && message->is_string());
    }
  } else if (status >= 400) {
    FUZZ_CHECK(false);  // errors are always JSON
  }
  // The wire form reads back as one whole response with this status and body (a client's
  // parser sees what the route answered, and nothing after it).
  std::string wire;
  res.serialize(wire);
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(boost::none);
  boost::system::error_code ec;
  std::size_t used = 0;
  while (!ec && !parser.is_done() && used < wire.size()) {
    used += parser.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
  }
  FUZZ_CHECK(!ec && parser.is_done() && used == wire.size());
  FUZZ_CHECK(parser.get().result_int() == status);
  FUZZ_CHECK(parser.get().body() == res.body());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ticketd::fuzz::Input in(data, size);
  const std::uint8_t flags = in.u8();
  HttpOptions options;
  if (flags & 1) options.tokens = {std::string(kToken)};
  options.metrics_public = (flags & 2) != 0;
  Engine engine(options);

  std::string_view rest = in.rest();
  while (!rest.empty()) {
    const auto end = rest.find(kSeparator);
    const std::string_view text = rest.substr(0, end);
    rest =
        end == std::string_view::npos ? std::string_view() : rest.substr(end + kSeparator.size());
    auto req = make_request(text, engine.deps.options);
    if (!req) continue;
    auto calls = std::make_shared<std::atomic<int>>(0);
    std::promise<Response> promise;
    auto answer = promise.get_future();
    handle_request(engine.deps, std::move(*req), [calls, &promise](Response r) {
      FUZZ_CHECK(calls->fetch_add(1) == 0);
      promise.set_value(std::move(r));
    });
    check_response(answer.get());
  }
  return 0;
}
