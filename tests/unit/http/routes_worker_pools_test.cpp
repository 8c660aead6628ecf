// Routes of the worker-ID pools and of UUIDv7 sequences (kept apart from routes_test.cpp, which
// covers the ticket routes).
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <string>

#include "server/core/ulid_generator.h"
#include "server/http/routes.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::http {
namespace {

namespace json = boost::json;
using beast::http::field;
using beast::http::status;
using beast::http::verb;
using testing::HttpEngine;
using testing::make_request;

constexpr std::int64_t kT0 = 1767225600000;

json::object body_of(const Response& r) {
  auto v = json::parse(r.body());
  EXPECT_TRUE(v.is_object()) << r.body();
  return v.is_object() ? v.as_object() : json::object{};
}

std::string error_code_of(const Response& r) {
  auto b = body_of(r);
  auto* e = b.if_contains("error");
  if (e == nullptr || !e->is_object()) return "<no error object: " + r.body() + ">";
  return std::string(e->as_object().at("code").as_string());
}

Response acquire(HttpEngine& e, const std::string& body, const std::string& pool = "orders") {
  return e.call(make_request(verb::post, "/v1/workers/" + pool + "/leases", body));
}

Response keepalive(HttpEngine& e, const std::string& id, const std::string& body = "") {
  return e.call(make_request(verb::post, "/v1/workers/orders/leases/" + id + "/keepalive", body));
}

Response release(HttpEngine& e, const std::string& id, const std::string& body = "") {
  return e.call(make_request(verb::delete_, "/v1/workers/orders/leases/" + id, body));
}

TEST(HttpWorkerRoutes, ListingShowsEveryPoolWithItsLeases) {
  HttpEngine e;
  ASSERT_TRUE(e.workers.add_pool(WorkerPoolSpec{.name = "render", .size = 2}));
  ASSERT_EQ(acquire(e, R"({"holder":"r-1"})", "render").result(), status::created);
  auto r = e.call(make_request(verb::get, "/v1/workers"));
  ASSERT_EQ(r.result(), status::ok) << r.body();
  const auto pools = body_of(r).at("pools").as_array();
  ASSERT_EQ(pools.size(), 2u);
  // Each entry is what GET /v1/workers/{pool} answers for it.
  for (const auto& p : pools) {
    const std::string name(p.as_object().at("pool").as_string());
    auto one = e.call(make_request(verb::get, "/v1/workers/" + name));
    EXPECT_EQ(json::serialize(p), one.body()) << name;
  }
  EXPECT_EQ(pools[0].as_object().at("pool").as_string(), "orders");
  EXPECT_EQ(pools[1].as_object().at("pool").as_string(), "render");
  EXPECT_EQ(pools[1].as_object().at("leased").as_int64(), 1);
}

TEST(HttpWorkerRoutes, ListingWithoutPoolsIsEmpty) {
  HttpEngine e;
  e.deps.workers = nullptr;
  auto r = e.call(make_request(verb::get, "/v1/workers"));
  ASSERT_EQ(r.result(), status::ok) << r.body();
  EXPECT_EQ(r.body(), R"({"pools":[]})");
}

TEST(HttpWorkerRoutes, AcquireReturnsTheLowestFreeIdWithItsTimes) {
  HttpEngine e;
  auto r = acquire(e, R"({"holder":"orders-7f9c","ttl_s":10})");
  ASSERT_EQ(r.result(), status::created) << r.body();
  EXPECT_EQ(r.body(),
            R"({"lease_id":"0-1","pool":"orders","worker_id":0,"holder":"orders-7f9c","ttl_s":10,)"
            R"("granted_at":"2026-01-01T00:00:00.000Z","expires_at":"2026-01-01T00:00:10.000Z",)"
            R"("expires_at_ms":1767225610000,"not_before_ms":0,"high_water_ms":0})");
  auto second = body_of(acquire(e, R"({"holder":"b"})"));
  EXPECT_EQ(second.at("worker_id").as_int64(), 1);
  EXPECT_EQ(second.at("ttl_s").as_int64(), 10);  // the pool's default
}

TEST(HttpWorkerRoutes, KeepaliveExtendsAndReleaseHandsTheMarkToTheNextHolder) {
  HttpEngine e;
  ASSERT_EQ(acquire(e, R"({"holder":"a","ttl_s":5})").result(), status::created);
  e.clock.advance(4000);
  auto k = keepalive(e, "0-1", R"({"high_water_ms":1767225604500})");
  ASSERT_EQ(k.result(), status::ok) << k.body();
  EXPECT_EQ(body_of(k).at("expires_at_ms").as_int64(), kT0 + 9000);
  EXPECT_EQ(body_of(k).at("high_water_ms").as_int64(), kT0 + 4500);
  auto d = release(e, "0-1", R"({"high_water_ms":1767225604900})");
  EXPECT_EQ(d.result(), status::no_content);
  EXPECT_TRUE(d.body().empty());
  auto next = body_of(acquire(e, R"({"holder":"b"})"));
  EXPECT_EQ(next.at("worker_id").as_int64(), 0);
  EXPECT_EQ(next.at("lease_id").as_string(), "0-2");
  EXPECT_EQ(next.at("not_before_ms").as_int64(), kT0 + 4900);
}

TEST(HttpWorkerRoutes, EndedAndUnknownLeasesAreClearErrors) {
  HttpEngine e;
  ASSERT_EQ(acquire(e, R"({"holder":"a","ttl_s":1})").result(), status::created);
  ASSERT_EQ(acquire(e, R"({"holder":"b","ttl_s":60})").result(), status::created);
  e.clock.advance(1000);
  auto expired = keepalive(e, "0-1");
  EXPECT_EQ(expired.result(), status::conflict);
  EXPECT_EQ(error_code_of(expired), "lease_expired");
  EXPECT_NE(body_of(expired).at("error").at("message").as_string().find("expired at"),
            std::string::npos);
  ASSERT_EQ(release(e, "1-1").result(), status::no_content);
  auto released = keepalive(e, "1-1");
  EXPECT_EQ(released.result(), status::conflict);
  EXPECT_EQ(error_code_of(released), "lease_released");
  EXPECT_EQ(error_code_of(release(e, "1-1")), "lease_released");
  for (const char* id : {"7-1", "0-9", "zz"}) {
    auto unknown = keepalive(e, id);
    EXPECT_EQ(unknown.result(), status::not_found) << id;
    EXPECT_EQ(error_code_of(unknown), "not_found") << id;
  }
}

TEST(HttpWorkerRoutes, AFullPoolIs503WithRetryAfter) {
  HttpEngine e;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(acquire(e, R"({"holder":"h"})").result(), status::created);
  auto full = acquire(e, R"({"holder":"h"})");
  EXPECT_EQ(full.result(), status::service_unavailable);
  EXPECT_EQ(error_code_of(full), "pool_full");
  EXPECT_EQ(full[field::retry_after], "1");
}

TEST(HttpWorkerRoutes, BadRequestsAreRefusedAndGrantNothing) {
  HttpEngine e;
  struct Case {
    const char* body;
    status st;
    const char* code;
  };
  const Case cases[] = {
      {R"({"holder":)", status::bad_request, "bad_request"},
      {R"({})", status::unprocessable_entity, "invalid_argument"},
      {R"({"holder":""})", status::unprocessable_entity, "invalid_argument"},
      {R"({"holder":7})", status::unprocessable_entity, "invalid_argument"},
      {R"({"holder":"a","ttl_s":0})", status::unprocessable_entity, "invalid_argument"},
      {R"({"holder":"a","ttl_s":61})", status::unprocessable_entity, "invalid_argument"},
      {R"({"holder":"a","ttl_s":1.5})", status::unprocessable_entity, "invalid_argument"},
      {R"({"holder":"a","ttl":5})", status::unprocessable_entity, "invalid_argument"},
      {"{\"holder\":\"a\\nb\"}", status::unprocessable_entity, "invalid_argument"},
  };
  for (const auto& c : cases) {
    auto r = acquire(e, c.body);
    EXPECT_EQ(r.result(), c.st) << c.body << " -> " << r.body();
    EXPECT_EQ(error_code_of(r), c.code) << c.body;
  }
  EXPECT_TRUE(e.workers.status("orders")->live.empty());
  ASSERT_EQ(acquire(e, R"({"holder":"a"})").result(), status::created);
  EXPECT_EQ(keepalive(e, "0-1", R"({"high_water_ms":-1})").result(), status::unprocessable_entity);
  EXPECT_EQ(keepalive(e, "0-1", R"({"high_water_ms":"1"})").result(), status::unprocessable_entity);
  EXPECT_EQ(keepalive(e, "0-1", R"({"hwm":1})").result(), status::unprocessable_entity);
  EXPECT_EQ(e.workers.status("orders")->live.at(0).high_water_ms, 0);
}

TEST(HttpWorkerRoutes, UnknownPoolsAndWrongMethodsAreRefused) {
  HttpEngine e;
  auto r = acquire(e, R"({"holder":"a"})", "nope");
  EXPECT_EQ(r.result(), status::not_found);
  EXPECT_EQ(error_code_of(r), "not_found");
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/workers/nope")).result(), status::not_found);
  auto get = e.call(make_request(verb::get, "/v1/workers/orders/leases"));
  EXPECT_EQ(get.result(), status::method_not_allowed);
  EXPECT_EQ(get[field::allow], "POST");
  auto put = e.call(make_request(verb::put, "/v1/workers/orders/leases/0-1"));
  EXPECT_EQ(put[field::allow], "DELETE");
  for (const char* path : {"/v1/workers/", "/v1/workers/orders/lease", "/v1/workers//leases",
                           "/v1/workers/orders/leases/0-1/renew", "/v1/workers/orders/leases/"}) {
    EXPECT_EQ(error_code_of(e.call(make_request(verb::post, path))), "not_found") << path;
  }
}

TEST(HttpWorkerRoutes, PoolStatusListsLiveLeases) {
  HttpEngine e;
  ASSERT_EQ(acquire(e, R"({"holder":"a"})").result(), status::created);
  ASSERT_EQ(acquire(e, R"({"holder":"b"})").result(), status::created);
  ASSERT_EQ(release(e, "0-1").result(), status::no_content);
  auto r = e.call(make_request(verb::get, "/v1/workers/orders"));
  ASSERT_EQ(r.result(), status::ok);
  auto b = body_of(r);
  EXPECT_EQ(b.at("pool").as_string(), "orders");
  EXPECT_EQ(b.at("size").as_int64(), 4);
  EXPECT_EQ(b.at("default_ttl_s").as_int64(), 10);
  EXPECT_EQ(b.at("leased").as_int64(), 1);
  ASSERT_EQ(b.at("leases").as_array().size(), 1u);
  EXPECT_EQ(b.at("leases").as_array()[0].at("holder").as_string(), "b");
}

TEST(HttpWorkerRoutes, WorkerRoutesNeedTheTokenLikeEveryV1Route) {
  HttpOptions o;
  o.tokens = {"t0ken-one-0123456789"};
  HttpEngine e(o);
  auto r = acquire(e, R"({"holder":"a"})");
  EXPECT_EQ(r.result(), status::unauthorized);
  auto req = make_request(verb::post, "/v1/workers/orders/leases", R"({"holder":"a"})");
  req.set(field::authorization, "Bearer t0ken-one-0123456789");
  EXPECT_EQ(e.call(std::move(req)).result(), status::created);
}

// ---- UUIDv7 sequences ----

TEST(HttpUuidv7Routes, NextReturnsCanonicalIncreasingUuids) {
  HttpEngine e;
  auto r = e.call(make_request(verb::post, "/v1/sequences/Uuids/next", R"({"count":3})"));
  ASSERT_EQ(r.result(), status::ok) << r.body();
  auto b = body_of(r);
  EXPECT_EQ(b.at("sequence").as_string(), "Uuids");
  const auto& ids = b.at("ids").as_array();
  ASSERT_EQ(ids.size(), 3u);
  std::string previous;
  for (const auto& v : ids) {
    const std::string id(v.as_string());
    ASSERT_EQ(id.size(), 36u) << id;
    EXPECT_EQ(id.substr(0, 13), "019b76da-a800");  // 2026-01-01T00:00:00Z in the time field
    EXPECT_EQ(id[14], '7');                        // version 7
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;  // variant 10
    EXPECT_GT(id, previous);
    previous = id;
  }
  auto one = body_of(e.call(make_request(verb::post, "/v1/sequences/Uuids/next")));
  EXPECT_EQ(one.at("ids").as_array().size(), 1u);
}

TEST(HttpUuidv7Routes, CountLimitsAndBlocksFollowTheUsualRules) {
  HttpEngine e;
  auto over = e.call(make_request(verb::post, "/v1/sequences/Uuids/next", R"({"count":100001})"));
  EXPECT_EQ(over.result(), status::unprocessable_entity);
  auto zero = e.call(make_request(verb::post, "/v1/sequences/Uuids/next", R"({"count":0})"));
  EXPECT_EQ(zero.result(), status::unprocessable_entity);
  auto max = e.call(make_request(verb::post, "/v1/sequences/Uuids/next", R"({"count":100000})"));
  ASSERT_EQ(max.result(), status::ok);
  EXPECT_EQ(body_of(max).at("ids").as_array().size(), 100000u);
  auto block = e.call(make_request(verb::post, "/v1/sequences/Uuids/blocks", R"({"size":5})"));
  EXPECT_EQ(block.result(), status::conflict);
  EXPECT_EQ(error_code_of(block), "wrong_kind");
}

// ---- ULID sequences ----

TEST(HttpUlidRoutes, CreateNextAndDescribeAUlidSequence) {
  HttpEngine e;
  auto made = e.call(make_request(verb::put, "/v1/sequences/Events", R"({"kind":"ulid"})"));
  ASSERT_EQ(made.result(), status::created) << made.body();
  EXPECT_EQ(
      made.body(),
      R"({"name":"Events","kind":"ulid","clock_policy":"wait","issued":"0","last_issued":null,)"
      R"("mark":"2026-01-01T00:00:02.000Z"})");
  // The fake clock stands still: every ID is in one millisecond, each the previous one + 1.
  auto r = e.call(make_request(verb::post, "/v1/sequences/Events/next", R"({"count":1000})"));
  ASSERT_EQ(r.result(), status::ok) << r.body();
  const auto body = body_of(r);
  const auto& ids = body.at("ids").as_array();
  ASSERT_EQ(ids.size(), 1000u);
  std::string previous;
  for (const auto& v : ids) {
    const std::string id(v.as_string());
    ASSERT_EQ(id.size(), 26u) << id;
    const auto parsed = parse_ulid(id);
    ASSERT_TRUE(parsed) << id;
    EXPECT_EQ(ulid_unix_ms(*parsed), e.clock.now_unix_ms());
    EXPECT_GT(id, previous);
    previous = id;
  }
  auto d = body_of(e.call(make_request(verb::get, "/v1/sequences/Events")));
  EXPECT_EQ(d.at("issued").as_string(), "1000");
  EXPECT_EQ(d.at("last_issued").as_string(), previous);
  // Its IDs are text: blocks and integer paths refuse it by kind.
  auto block = e.call(make_request(verb::post, "/v1/sequences/Events/blocks", R"({"size":5})"));
  EXPECT_EQ(block.result(), status::conflict);
  EXPECT_EQ(error_code_of(block), "wrong_kind");
  auto field = e.call(make_request(verb::put, "/v1/sequences/x", R"({"kind":"ulid","start":"5"})"));
  EXPECT_EQ(field.result(), status::unprocessable_entity);
  // The binary form on request: the 16 bytes as 32 hex digits, in the same order.
  auto hex = e.call(
      make_request(verb::post, "/v1/sequences/Events/next", R"({"count":3,"format":"hex"})"));
  ASSERT_EQ(hex.result(), status::ok) << hex.body();
  const auto hex_body = body_of(hex);
  std::string previous_hex;
  for (const auto& v : hex_body.at("ids").as_array()) {
    const std::string id(v.as_string());
    const auto parsed = parse_ulid_hex(id);
    ASSERT_TRUE(parsed) << id;
    EXPECT_GT(ulid_to_string(*parsed), previous);  // after every text ID issued before
    EXPECT_GT(id, previous_hex);
    previous_hex = id;
  }
  auto bad = e.call(make_request(verb::post, "/v1/sequences/Events/next", R"({"format":"b64"})"));
  EXPECT_EQ(bad.result(), status::unprocessable_entity);
  auto on_ticket =
      e.call(make_request(verb::post, "/v1/sequences/Tickets64/next", R"({"format":"hex"})"));
  EXPECT_EQ(on_ticket.result(), status::unprocessable_entity);
  auto uuid_hex =
      e.call(make_request(verb::post, "/v1/sequences/Uuids/next", R"({"format":"hex"})"));
  ASSERT_EQ(uuid_hex.result(), status::ok);
  const auto uuid_body = body_of(uuid_hex);
  const std::string uuid(uuid_body.at("ids").as_array()[0].as_string());
  EXPECT_EQ(uuid.size(), 32u);
  EXPECT_EQ(uuid[12], '7');  // the version nibble, where the text form has its dash-less 13th
  EXPECT_EQ(e.call(make_request(verb::delete_, "/v1/sequences/Events")).result(),
            status::no_content);
}

}  // namespace
}  // namespace ticketd::http
