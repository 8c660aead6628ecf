// An engine on an in-memory store with the HTTP front end's dependencies, for route tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>

#include "server/core/lease_log.h"
#include "server/core/ticket_service.h"
#include "server/core/uuidv7_generator.h"
#include "server/core/worker_pool_service.h"
#include "server/http/routes.h"
#include "server/metrics/metrics.h"
#include "server/net/session_registry.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_store.h"

namespace ticketd::http::testing {

using FakeClock = ::ticketd::testing::FakeClock;

/// Store, committer, engine, lease log, worker pools ("orders": 4 IDs, TTL 1..60 s, default 10),
/// a UUIDv7 sequence "Uuids", metrics and the HttpDeps over them. The store can fail
/// commits on demand (ScriptedStore over a MemoryCounterStore).
struct HttpEngine {
  explicit HttpEngine(HttpOptions options = {})
      : committer(store),
        tickets(store, committer),
        leases(tickets, store, reads, clock),
        workers(store, committer, clock),
        metrics(tickets, committer, clock),
        deps{tickets,           leases, metrics, clock, sessions, [this] { return ready.load(); },
             std::move(options)} {
    tickets.enable_runtime_kinds(RuntimeKinds{&clock, &reads, nullptr});
    EXPECT_TRUE(tickets.load());
    EXPECT_TRUE(tickets.ensure_configured(SequenceSpec{.name = "Tickets64"}));
    EXPECT_TRUE(tickets.ensure_configured(
        SequenceSpec{.name = "Tickets32", .increment = 2, .offset = 1, .max_value = 4294967295}));
    EXPECT_TRUE(tickets.add_uuidv7("Uuids", std::make_shared<UuidV7Generator>(clock, 42)));
    EXPECT_TRUE(workers.add_pool(WorkerPoolSpec{.name = "orders",
                                                .size = 4,
                                                .min_ttl_ms = 1000,
                                                .max_ttl_ms = 60000,
                                                .default_ttl_ms = 10000}));
    deps.workers = &workers;
  }
  ~HttpEngine() {
    reads.stop();
    committer.stop();
  }

  /// Runs handle_request and waits for its response (it may complete on the committer thread).
  Response call(Request req) {
    std::promise<Response> p;
    auto f = p.get_future();
    handle_request(deps, std::move(req), [&p](Response r) { p.set_value(std::move(r)); });
    return f.get();
  }

  ticketd::testing::ScriptedStore store;
  FakeClock clock;
  GroupCommitter committer;
  TicketService tickets;
  TimerQueue reads;
  LeaseLog leases;
  WorkerPoolService workers;
  metrics::Metrics metrics;
  net::SessionRegistry sessions;
  std::atomic<bool> ready{true};
  HttpDeps deps;
};

inline Request make_request(beast::http::verb method, std::string target, std::string body = {},
                            std::string content_type = "application/json") {
  Request req{method, target, 11};
  req.set(beast::http::field::host, "localhost");
  if (!body.empty() && !content_type.empty()) {
    req.set(beast::http::field::content_type, content_type);
  }
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

}  // namespace ticketd::http::testing
