#include "server/http/routes.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <set>
#include <string>

#include "tests/unit/http/http_fixture.h"

namespace ticketd::http {
namespace {

namespace json = boost::json;
using beast::http::field;
using beast::http::status;
using beast::http::verb;
using testing::HttpEngine;
using testing::make_request;

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

std::uint64_t issued(HttpEngine& e, const std::string& name) {
  return e.tickets.find(name)->info().issued;
}

Response post_next(HttpEngine& e, const std::string& body, const std::string& name = "Tickets64") {
  return e.call(make_request(verb::post, "/v1/sequences/" + name + "/next", body));
}

// ---- health, readiness, metrics ----

TEST(HttpRoutes, HealthzIsOk) {
  HttpEngine e;
  auto r = e.call(make_request(verb::get, "/healthz"));
  EXPECT_EQ(r.result(), status::ok);
  EXPECT_EQ(r.body(), R"({"status":"ok"})");
  EXPECT_EQ(r[field::content_type], "application/json");
}

TEST(HttpRoutes, ReadyzFollowsStorageReadiness) {
  HttpEngine e;
  EXPECT_EQ(e.call(make_request(verb::get, "/readyz")).result(), status::ok);
  e.ready = false;
  auto r = e.call(make_request(verb::get, "/readyz"));
  EXPECT_EQ(r.result(), status::service_unavailable);
  EXPECT_EQ(error_code_of(r), "not_ready");
}

TEST(HttpRoutes, MetricsIsPrometheusText) {
  HttpEngine e;
  ASSERT_EQ(post_next(e, "").result(), status::ok);
  auto r = e.call(make_request(verb::get, "/metrics"));
  EXPECT_EQ(r.result(), status::ok);
  EXPECT_EQ(r[field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body().find("ticketd_ids_issued_total{"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find("ticketd_sequence_remaining_values{sequence=\"Tickets64\"}"),
            std::string::npos);
}

// ---- POST /v1/sequences/{name}/next ----

TEST(HttpRoutes, NextWithoutBodyReturnsOneIdAsAString) {
  HttpEngine e;
  auto r = post_next(e, "");
  ASSERT_EQ(r.result(), status::ok) << r.body();
  EXPECT_EQ(r.body(), R"({"sequence":"Tickets64","ids":["1"]})");
  EXPECT_EQ(r[field::cache_control], "no-store");
}

TEST(HttpRoutes, NextWithCountReturnsConsecutiveValuesOfTheSequence) {
  HttpEngine e;
  auto r = post_next(e, R"({"count":3})", "Tickets32");
  ASSERT_EQ(r.result(), status::ok) << r.body();
  EXPECT_EQ(r.body(), R"({"sequence":"Tickets32","ids":["1","3","5"]})");
  auto again = post_next(e, R"({"count":1})", "Tickets32");
  EXPECT_EQ(again.body(), R"({"sequence":"Tickets32","ids":["7"]})");
}

TEST(HttpRoutes, NextAcceptsTheMaximumCount) {
  HttpEngine e;
  auto r = post_next(e, R"({"count":10000})");
  ASSERT_EQ(r.result(), status::ok);
  auto ids = body_of(r).at("ids").as_array();
  ASSERT_EQ(ids.size(), 10000u);
  EXPECT_EQ(ids.front().as_string(), "1");
  EXPECT_EQ(ids.back().as_string(), "10000");
}

TEST(HttpRoutes, IdsAboveTwoToThe53AreExactStrings) {
  HttpEngine e;
  ASSERT_TRUE(e.tickets.ensure_configured(
      SequenceSpec{.name = "big", .start = 9007199254740993ULL}));  // 2^53 + 1
  auto r = post_next(e, R"({"count":2})", "big");
  ASSERT_EQ(r.result(), status::ok);
  EXPECT_EQ(r.body(), R"({"sequence":"big","ids":["9007199254740993","9007199254740994"]})");
}

TEST(HttpRoutes, BadCountsAre422AndIssueNothing) {
  HttpEngine e;
  for (const char* body :
       {R"({"count":0})", R"({"count":100001})", R"({"count":-1})", R"({"count":"5"})",
        R"({"count":1.5})", R"({"count":1e3})", R"({"count":null})", R"({"count":true})",
        R"({"count":[1]})", R"({"count":99999999999999999999999})",
        R"({"count":18446744073709551616})", R"({"count":18446744073709551615})"}) {
    auto r = post_next(e, body);
    EXPECT_EQ(r.result(), status::unprocessable_entity) << body;
    EXPECT_EQ(error_code_of(r), "invalid_argument") << body;
  }
  EXPECT_EQ(issued(e, "Tickets64"), 0u);
}

TEST(HttpRoutes, MalformedJsonIs400AndIssuesNothing) {
  HttpEngine e;
  for (const char* body :
       {"{", "{\"count\":}", "count=1", "{\"count\":1}}", "\xff\xfe", "[1,", "{\"count\":1,}"}) {
    auto r = post_next(e, body);
    EXPECT_EQ(r.result(), status::bad_request) << body;
    EXPECT_EQ(error_code_of(r), "bad_request") << body;
  }
  EXPECT_EQ(issued(e, "Tickets64"), 0u);
}

TEST(HttpRoutes, DeeplyNestedJsonIsRejectedNotACrash) {
  HttpEngine e;
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = post_next(e, deep);
  EXPECT_EQ(r.result(), status::bad_request);
}

TEST(HttpRoutes, UnknownFieldsAre422NamingTheField) {
  HttpEngine e;
  auto r = post_next(e, R"({"cont":5})");
  EXPECT_EQ(r.result(), status::unprocessable_entity);
  EXPECT_EQ(r.body(), R"({"error":{"code":"invalid_argument","message":"unknown field 'cont'"}})");
  EXPECT_EQ(issued(e, "Tickets64"), 0u);
}

TEST(HttpRoutes, NonObjectJsonIs422) {
  HttpEngine e;
  for (const char* body : {"[]", "1", "\"x\"", "null"}) {
    EXPECT_EQ(post_next(e, body).result(), status::unprocessable_entity) << body;
  }
}

TEST(HttpRoutes, BodyThatIsNotJsonMediaTypeIs415) {
  HttpEngine e;
  auto r = e.call(
      make_request(verb::post, "/v1/sequences/Tickets64/next", R"({"count":1})", "text/plain"));
  EXPECT_EQ(r.result(), status::unsupported_media_type);
  EXPECT_EQ(error_code_of(r), "unsupported_media_type");
  auto none = e.call(make_request(verb::post, "/v1/sequences/Tickets64/next", "{}", ""));
  EXPECT_EQ(none.result(), status::unsupported_media_type);
  auto with_charset = e.call(make_request(verb::post, "/v1/sequences/Tickets64/next", "{}",
                                          "Application/JSON; charset=utf-8"));
  EXPECT_EQ(with_charset.result(), status::ok);
}

TEST(HttpRoutes, UnknownSequenceIs404WithTheEngineMessage) {
  HttpEngine e;
  auto r = post_next(e, "", "X");
  EXPECT_EQ(r.result(), status::not_found);
  EXPECT_EQ(r.body(), R"({"error":{"code":"not_found","message":"sequence 'X' does not exist"}})");
}

TEST(HttpRoutes, ExhaustedSequenceIs409) {
  HttpEngine e;
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "tiny", .max_value = 2}));
  EXPECT_EQ(post_next(e, R"({"count":2})", "tiny").result(), status::ok);
  auto r = post_next(e, "", "tiny");
  EXPECT_EQ(r.result(), status::conflict);
  EXPECT_EQ(error_code_of(r), "exhausted");
}

TEST(HttpRoutes, FailedDurableWriteIs503AndIssuesNothing) {
  HttpEngine e;
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "c1", .cache = 1}));
  e.store.fail_next(1);
  auto r = post_next(e, "", "c1");
  EXPECT_EQ(r.result(), status::service_unavailable);
  EXPECT_EQ(error_code_of(r), "storage_failed");
  EXPECT_EQ(issued(e, "c1"), 0u);
}

TEST(HttpRoutes, NextIsCountedInMetrics) {
  HttpEngine e;
  ASSERT_EQ(post_next(e, R"({"count":7})").result(), status::ok);
  ASSERT_EQ(post_next(e, "", "Nope").result(), status::not_found);
  const auto text = e.metrics.serialize();
  EXPECT_NE(text.find(R"(ticketd_ids_issued_total{frontend="http",sequence="Tickets64"} 7)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(ticketd_errors_total{code="not_found",frontend="http"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(ticketd_request_duration_seconds_count{frontend="http",route="next"} 2)"),
            std::string::npos);
}

// ---- blocks ----

TEST(HttpRoutes, LeasingABlockReturnsADurableLeaseRecord) {
  HttpEngine e;
  auto r = e.call(make_request(verb::post, "/v1/sequences/Tickets32/blocks",
                               R"({"size":1000,"holder":"billing-7"})"));
  ASSERT_EQ(r.result(), status::created) << r.body();
  auto b = body_of(r);
  EXPECT_EQ(b.at("sequence").as_string(), "Tickets32");
  EXPECT_EQ(b.at("first").as_string(), "1");
  EXPECT_EQ(b.at("last").as_string(), "1999");
  EXPECT_EQ(b.at("step").as_int64(), 2);
  EXPECT_EQ(b.at("count").as_int64(), 1000);
  EXPECT_EQ(b.at("holder").as_string(), "billing-7");
  EXPECT_EQ(b.at("granted_at").as_string(), "2026-01-01T00:00:00.000Z");
  EXPECT_TRUE(b.at("lease_id").is_string());
  EXPECT_GE(e.tickets.find("Tickets32")->info().durable_ceiling, 1999u);
  // The next single ticket comes after the block.
  EXPECT_EQ(post_next(e, "", "Tickets32").body(), R"({"sequence":"Tickets32","ids":["2001"]})");
}

TEST(HttpRoutes, LeasesAreListedNewestFirstWithALimit) {
  HttpEngine e;
  for (int i = 0; i < 3; ++i) {
    e.clock.advance(1000);
    auto r = e.call(make_request(verb::post, "/v1/sequences/Tickets64/blocks",
                                 R"({"size":10,"holder":"h)" + std::to_string(i) + "\"}"));
    ASSERT_EQ(r.result(), status::created);
  }
  auto r = e.call(make_request(verb::get, "/v1/sequences/Tickets64/blocks?limit=2"));
  ASSERT_EQ(r.result(), status::ok) << r.body();
  auto leases = body_of(r).at("leases").as_array();
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].at("holder").as_string(), "h2");
  EXPECT_EQ(leases[0].at("first").as_string(), "21");
  EXPECT_EQ(leases[0].at("granted_at").as_string(), "2026-01-01T00:00:03.000Z");
  EXPECT_EQ(leases[1].at("holder").as_string(), "h1");
  auto all = e.call(make_request(verb::get, "/v1/sequences/Tickets64/blocks"));
  EXPECT_EQ(body_of(all).at("leases").as_array().size(), 3u);
  auto other = e.call(make_request(verb::get, "/v1/sequences/Tickets32/blocks"));
  EXPECT_EQ(other.body(), R"({"sequence":"Tickets32","leases":[]})");
}

TEST(HttpRoutes, BadLeaseRequestsAre422AndLeaseNothing) {
  HttpEngine e;
  for (const char* body : {R"({})", R"({"holder":"x"})", R"({"size":0})", R"({"size":100001})",
                           R"({"size":"10"})", R"({"size":10,"holder":7})",
                           R"({"size":10,"owner":"x"})", R"({"size":10,"holder":"a\nb"})"}) {
    auto r = e.call(make_request(verb::post, "/v1/sequences/Tickets64/blocks", body));
    EXPECT_EQ(r.result(), status::unprocessable_entity) << body << " " << r.body();
  }
  auto long_holder =
      e.call(make_request(verb::post, "/v1/sequences/Tickets64/blocks",
                          R"({"size":1,"holder":")" + std::string(129, 'x') + "\"}"));
  EXPECT_EQ(long_holder.result(), status::unprocessable_entity);
  EXPECT_EQ(issued(e, "Tickets64"), 0u);
}

TEST(HttpRoutes, BlockSizeIsBoundedByTheOption) {
  HttpEngine e(HttpOptions{.max_block_size = 50});
  EXPECT_EQ(
      e.call(make_request(verb::post, "/v1/sequences/Tickets64/blocks", R"({"size":50})")).result(),
      status::created);
  auto r = e.call(make_request(verb::post, "/v1/sequences/Tickets64/blocks", R"({"size":51})"));
  EXPECT_EQ(r.result(), status::unprocessable_entity);
  EXPECT_NE(r.body().find("1..50"), std::string::npos) << r.body();
}

TEST(HttpRoutes, FailedLeaseRecordIs503) {
  HttpEngine e;
  ASSERT_EQ(post_next(e, "").result(), status::ok);  // the ceiling now covers the next values
  e.store.fail_next(1);
  auto r = e.call(make_request(verb::post, "/v1/sequences/Tickets64/blocks", R"({"size":10})"));
  EXPECT_EQ(r.result(), status::service_unavailable);
  EXPECT_EQ(error_code_of(r), "storage_failed");
  auto list = e.call(make_request(verb::get, "/v1/sequences/Tickets64/blocks"));
  EXPECT_EQ(body_of(list).at("leases").as_array().size(), 0u);
}

TEST(HttpRoutes, LeaseListingValidatesItsQuery) {
  HttpEngine e;
  for (const char* target :
       {"/v1/sequences/Tickets64/blocks?limit=0", "/v1/sequences/Tickets64/blocks?limit=1001",
        "/v1/sequences/Tickets64/blocks?limit=abc", "/v1/sequences/Tickets64/blocks?limit=-1",
        "/v1/sequences/Tickets64/blocks?lmit=2"}) {
    EXPECT_EQ(e.call(make_request(verb::get, target)).result(), status::unprocessable_entity)
        << target;
  }
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences/Nope/blocks")).result(),
            status::not_found);
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences/Tickets64/blocks?limit=%zz")).result(),
            status::bad_request);
}

TEST(HttpRoutes, LeasesAreCountedInMetrics) {
  HttpEngine e;
  ASSERT_EQ(e.call(make_request(verb::post, "/v1/sequences/Tickets64/blocks", R"({"size":100})"))
                .result(),
            status::created);
  const auto text = e.metrics.serialize();
  EXPECT_NE(text.find(R"(ticketd_blocks_leased_total{frontend="http",sequence="Tickets64"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(ticketd_ids_issued_total{frontend="http",sequence="Tickets64"} 100)"),
            std::string::npos);
}

// ---- sequence admin ----

TEST(HttpRoutes, ListsSequencesWithLargeValuesAsStrings) {
  HttpEngine e;
  ASSERT_EQ(post_next(e, R"({"count":5})").result(), status::ok);
  auto r = e.call(make_request(verb::get, "/v1/sequences"));
  ASSERT_EQ(r.result(), status::ok);
  auto list = body_of(r).at("sequences").as_array();
  // Every kind is listed, by name: the fixture's UUIDv7 sequence comes last.
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(json::serialize(list[2]), R"({"name":"Uuids","kind":"uuidv7","issued":"0"})");
  const auto& t32 = list[0].as_object();
  EXPECT_EQ(t32.at("name").as_string(), "Tickets32");
  EXPECT_EQ(t32.at("max_value").as_string(), "4294967295");
  EXPECT_EQ(t32.at("increment").as_int64(), 2);
  const auto& t64 = list[1].as_object();
  EXPECT_EQ(
      json::serialize(t64),
      R"({"name":"Tickets64","kind":"ticket","start":"1","increment":1,"offset":1,)"
      R"("max_value":"9223372036854775807","cache":1000,"max_rate":100000000,"next_value":"6",)"
      R"("durable_ceiling":"1004","issued":"5","remaining":"9223372036854775802",)"
      R"("exhausted":false})");
}

TEST(HttpRoutes, GetsOneSequence) {
  HttpEngine e;
  auto r = e.call(make_request(verb::get, "/v1/sequences/Tickets32"));
  ASSERT_EQ(r.result(), status::ok);
  EXPECT_EQ(body_of(r).at("next_value").as_string(), "1");
  auto missing = e.call(make_request(verb::get, "/v1/sequences/X"));
  EXPECT_EQ(missing.result(), status::not_found);
  EXPECT_EQ(missing.body(),
            R"({"error":{"code":"not_found","message":"sequence 'X' does not exist"}})");
}

TEST(HttpRoutes, PutCreatesATicketSequence) {
  HttpEngine e;
  auto r = e.call(make_request(
      verb::put, "/v1/sequences/orders",
      R"({"kind":"ticket","start":"5000","increment":3,"offset":2,"max_value":1000000,"cache":10})"));
  ASSERT_EQ(r.result(), status::created) << r.body();
  auto b = body_of(r);
  EXPECT_EQ(b.at("start").as_string(), "5000");
  EXPECT_EQ(b.at("max_value").as_string(), "1000000");
  EXPECT_EQ(b.at("cache").as_int64(), 10);
  // First value >= 5000 with v ≡ 2 (mod 3).
  EXPECT_EQ(post_next(e, "", "orders").body(), R"({"sequence":"orders","ids":["5000"]})");
  auto again = e.call(make_request(verb::put, "/v1/sequences/orders", "{}"));
  EXPECT_EQ(again.result(), status::conflict);
  EXPECT_EQ(error_code_of(again), "already_exists");
}

TEST(HttpRoutes, PutWithEmptyBodyUsesDefaults) {
  HttpEngine e;
  auto r = e.call(make_request(verb::put, "/v1/sequences/plain", ""));
  ASSERT_EQ(r.result(), status::created) << r.body();
  EXPECT_EQ(body_of(r).at("kind").as_string(), "ticket");
}

TEST(HttpRoutes, PutCreatesEveryKindAndGetDescribesItWithItsOwnFields) {
  HttpEngine e;
  auto g = e.call(make_request(verb::put, "/v1/sequences/Inv",
                               R"({"kind":"gapless","start":"100","order":"strict",)"
                               R"("reservation_ttl_ms":5000})"));
  ASSERT_EQ(g.result(), status::created) << g.body();
  auto gb = body_of(g);
  EXPECT_EQ(gb.at("kind").as_string(), "gapless");
  EXPECT_EQ(gb.at("order").as_string(), "strict");
  EXPECT_EQ(gb.at("next_value").as_string(), "100");
  EXPECT_EQ(gb.at("reservation_ttl_ms").as_int64(), 5000);
  EXPECT_TRUE(gb.at("committed_through").is_null());
  auto u = e.call(make_request(verb::put, "/v1/sequences/Events", R"({"kind":"uuidv7"})"));
  ASSERT_EQ(u.result(), status::created) << u.body();
  EXPECT_EQ(u.body(), R"({"name":"Events","kind":"uuidv7","issued":"0"})");
  // A gapless sequence issues its numbers over /next; the listing shows every kind, by name.
  EXPECT_EQ(post_next(e, "", "Inv").body(), R"({"sequence":"Inv","ids":["100"]})");
  auto one = body_of(e.call(make_request(verb::get, "/v1/sequences/Inv")));
  EXPECT_EQ(one.at("committed_through").as_string(), "100");
  auto list = body_of(e.call(make_request(verb::get, "/v1/sequences")));
  std::vector<std::pair<std::string, std::string>> kinds;
  for (const auto& s : list.at("sequences").as_array()) {
    kinds.emplace_back(s.at("name").as_string(), s.at("kind").as_string());
  }
  EXPECT_EQ(kinds, (std::vector<std::pair<std::string, std::string>>{{"Events", "uuidv7"},
                                                                     {"Inv", "gapless"},
                                                                     {"Tickets32", "ticket"},
                                                                     {"Tickets64", "ticket"},
                                                                     {"Uuids", "uuidv7"}}));
  // Fields of another kind are refused by name, and nothing is created.
  auto bad = e.call(make_request(verb::put, "/v1/sequences/x", R"({"kind":"uuidv7","cache":5})"));
  EXPECT_EQ(bad.result(), status::unprocessable_entity);
  EXPECT_NE(bad.body().find("'cache' does not apply to kind uuidv7"), std::string::npos);
  auto bad2 = e.call(make_request(verb::put, "/v1/sequences/x", R"({"order":"strict"})"));
  EXPECT_EQ(bad2.result(), status::unprocessable_entity);
  EXPECT_FALSE(e.tickets.exists("x"));
}

TEST(HttpRoutes, DeleteDropsEveryKind) {
  HttpEngine e;
  ASSERT_EQ(e.call(make_request(verb::put, "/v1/sequences/Inv", R"({"kind":"gapless"})")).result(),
            status::created);
  for (const char* name : {"Inv", "Uuids", "Tickets32"}) {
    auto r = e.call(make_request(verb::delete_, std::string("/v1/sequences/") + name));
    EXPECT_EQ(r.result(), status::no_content) << name << " " << r.body();
    EXPECT_EQ(e.call(make_request(verb::get, std::string("/v1/sequences/") + name)).result(),
              status::not_found)
        << name;
  }
}

TEST(HttpRoutes, PutRejectsBadSpecs) {
  HttpEngine e;
  for (const char* body :
       {R"({"kind":"bogus"})", R"({"kind":1})", R"({"increment":0})", R"({"increment":65536})",
        R"({"offset":3,"increment":2})", R"({"start":0})", R"({"start":"-5"})",
        R"({"start":"1e3"})", R"({"start":"18446744073709551616"})",
        R"({"start":100,"max_value":50})", R"({"cache":0})", R"({"cache":1000000001})",
        R"({"name":"other"})", R"({"colour":"red"})", R"({"kind":"gapless","strict_wait_ms":0})",
        R"({"kind":"gapless","reservation_ttl_ms":90000000})"}) {
    auto r = e.call(make_request(verb::put, "/v1/sequences/s", body));
    EXPECT_EQ(r.result(), status::unprocessable_entity) << body << " " << r.body();
  }
  EXPECT_FALSE(e.tickets.exists("s"));
}

TEST(HttpRoutes, PercentEncodedNamesAreDecoded) {
  HttpEngine e;
  ASSERT_EQ(e.call(make_request(verb::put, "/v1/sequences/r%C3%A9sum%C3%A9", "")).result(),
            status::created);
  EXPECT_TRUE(e.tickets.exists("r\xc3\xa9sum\xc3\xa9"));
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences/%zz")).result(), status::bad_request);
  // The name rule applies to the decoded name: '/', spaces, control characters, '.' and '..'.
  for (const char* target : {"/v1/sequences/a%2Fb", "/v1/sequences/a%20b", "/v1/sequences/a%0Ab",
                             "/v1/sequences/%2E%2E", "/v1/sequences/%2E"}) {
    EXPECT_EQ(e.call(make_request(verb::put, target, "")).result(), status::unprocessable_entity)
        << target;
  }
  EXPECT_FALSE(e.tickets.exists("a b"));
  EXPECT_FALSE(e.tickets.exists(".."));
}

TEST(HttpRoutes, PatchMovesForwardNeverBack) {
  HttpEngine e;
  auto r = e.call(make_request(verb::patch, "/v1/sequences/Tickets64", R"({"next":"5000"})"));
  ASSERT_EQ(r.result(), status::ok) << r.body();
  EXPECT_EQ(body_of(r).at("next_value").as_string(), "5000");
  EXPECT_EQ(post_next(e, "").body(), R"({"sequence":"Tickets64","ids":["5000"]})");
  auto back = e.call(make_request(verb::patch, "/v1/sequences/Tickets64", R"({"next":100})"));
  EXPECT_EQ(back.result(), status::unprocessable_entity);
  EXPECT_EQ(error_code_of(back), "invalid_argument");
  EXPECT_EQ(post_next(e, "").body(), R"({"sequence":"Tickets64","ids":["5001"]})");
}

TEST(HttpRoutes, PatchFencesThenRestrides) {
  HttpEngine e;
  EXPECT_EQ(post_next(e, "").body(), R"({"sequence":"Tickets64","ids":["1"]})");  // ceiling 1000
  const auto patch = [&](std::string_view body) {
    return e.call(make_request(verb::patch, "/v1/sequences/Tickets64", std::string(body)));
  };
  auto low = patch(R"({"fence":"999"})");
  EXPECT_EQ(low.result(), status::unprocessable_entity) << low.body();
  auto fenced = patch(R"({"fence":"2000"})");
  ASSERT_EQ(fenced.result(), status::ok) << fenced.body();
  EXPECT_EQ(body_of(fenced).at("fence").as_string(), "2000");
  auto r = patch(R"({"increment":3,"offset":2,"next":"2001"})");
  ASSERT_EQ(r.result(), status::ok) << r.body();
  const auto body = body_of(r);
  EXPECT_EQ(body.at("next_value").as_string(), "2003");  // the first value ≡ 2 (mod 3) >= 2001
  EXPECT_EQ(body.at("increment").as_int64(), 3);
  EXPECT_EQ(body.at("offset").as_int64(), 2);
  EXPECT_TRUE(body.at("restrided").as_bool());
  EXPECT_FALSE(body.contains("fence"));  // the restride lifted it
  EXPECT_EQ(post_next(e, "").body(), R"({"sequence":"Tickets64","ids":["2003"]})");
  for (const auto* bad :
       {R"({"increment":3,"offset":1})", R"({"increment":3,"next":"9000"})",
        R"({"fence":"9000","next":"9000"})", R"({"increment":3,"offset":4,"next":"9000"})",
        R"({"increment":3,"offset":1,"next":"2003"})"}) {
    EXPECT_EQ(patch(bad).result(), status::unprocessable_entity) << bad;
  }
  EXPECT_EQ(post_next(e, "").body(), R"({"sequence":"Tickets64","ids":["2006"]})");
}

TEST(HttpRoutes, PatchErrors) {
  HttpEngine e;
  EXPECT_EQ(e.call(make_request(verb::patch, "/v1/sequences/Tickets64", "{}")).result(),
            status::unprocessable_entity);
  EXPECT_EQ(
      e.call(make_request(verb::patch, "/v1/sequences/Tickets64", R"({"next":1,"x":1})")).result(),
      status::unprocessable_entity);
  EXPECT_EQ(e.call(make_request(verb::patch, "/v1/sequences/Nope", R"({"next":5})")).result(),
            status::not_found);
  auto above =
      e.call(make_request(verb::patch, "/v1/sequences/Tickets32", R"({"next":"4294967296"})"));
  EXPECT_EQ(above.result(), status::unprocessable_entity);
}

TEST(HttpRoutes, DeleteDropsTheSequence) {
  HttpEngine e;
  auto r = e.call(make_request(verb::delete_, "/v1/sequences/Tickets32"));
  EXPECT_EQ(r.result(), status::no_content);
  EXPECT_TRUE(r.body().empty());
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences/Tickets32")).result(), status::not_found);
  EXPECT_EQ(e.call(make_request(verb::delete_, "/v1/sequences/Tickets32")).result(),
            status::not_found);
}

// ---- routing ----

TEST(HttpRoutes, WrongMethodIs405WithAllow) {
  HttpEngine e;
  struct Case {
    verb method;
    const char* target;
    const char* allow;
  };
  for (const auto& c : {Case{verb::delete_, "/v1/sequences", "GET"},
                        Case{verb::get, "/v1/sequences/Tickets64/next", "POST"},
                        Case{verb::post, "/v1/sequences/Tickets64", "GET, PUT, PATCH, DELETE"},
                        Case{verb::put, "/v1/sequences/Tickets64/blocks", "GET, POST"},
                        Case{verb::post, "/healthz", "GET"}, Case{verb::post, "/metrics", "GET"}}) {
    auto r = e.call(make_request(c.method, c.target));
    EXPECT_EQ(r.result(), status::method_not_allowed) << c.target;
    EXPECT_EQ(r[field::allow], c.allow) << c.target;
    EXPECT_EQ(error_code_of(r), "method_not_allowed");
  }
}

TEST(HttpRoutes, UnknownPathsAre404) {
  HttpEngine e;
  for (const char* target : {"/", "/v1", "/v1/sequences/", "/v1/sequences/Tickets64/nope",
                             "/v2/sequences", "/v1/sequences/Tickets64/next/x", "/healthzz"}) {
    auto r = e.call(make_request(verb::get, target));
    EXPECT_EQ(r.result(), status::not_found) << target;
    EXPECT_EQ(error_code_of(r), "not_found");
  }
}

TEST(HttpRoutes, UnknownQueryParametersOnV1Are422) {
  HttpEngine e;
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences?x=1")).result(),
            status::unprocessable_entity);
  EXPECT_EQ(e.call(make_request(verb::get, "/healthz?probe=1")).result(), status::ok);
}

TEST(HttpRoutes, OversizedBodyIs413) {
  HttpEngine e(HttpOptions{.body_limit = 16});
  auto r = post_next(e, R"({"count":1       })");
  EXPECT_EQ(r.result(), status::payload_too_large);
  EXPECT_EQ(issued(e, "Tickets64"), 0u);
}

TEST(HttpRoutes, KeepAliveFollowsTheRequest) {
  HttpEngine e;
  auto req = make_request(verb::get, "/healthz");
  EXPECT_TRUE(e.call(req).keep_alive());
  req.version(10);
  auto r10 = e.call(req);
  EXPECT_FALSE(r10.keep_alive());
  EXPECT_EQ(r10.version(), 10u);
  req.version(11);
  req.set(field::connection, "close");
  EXPECT_FALSE(e.call(req).keep_alive());
}

// ---- auth ----

TEST(HttpAuth, V1NeedsABearerTokenWhenTokensAreConfigured) {
  HttpEngine e(HttpOptions{.tokens = {"s3cret", "other-token"}});
  auto none = post_next(e, "");
  EXPECT_EQ(none.result(), status::unauthorized);
  EXPECT_EQ(none[field::www_authenticate], "Bearer realm=\"ticketd\"");
  EXPECT_EQ(error_code_of(none), "unauthorized");

  for (const char* header : {"Bearer wrong", "Bearer s3cre", "Bearer s3cret2", "Basic s3cret",
                             "s3cret", "Bearer", "Bearer "}) {
    auto req = make_request(verb::post, "/v1/sequences/Tickets64/next");
    req.set(field::authorization, header);
    EXPECT_EQ(e.call(req).result(), status::unauthorized) << header;
  }
  for (const char* header : {"Bearer s3cret", "bearer other-token", "Bearer   s3cret  "}) {
    auto req = make_request(verb::post, "/v1/sequences/Tickets64/next");
    req.set(field::authorization, header);
    EXPECT_EQ(e.call(req).result(), status::ok) << header;
  }
  EXPECT_EQ(issued(e, "Tickets64"), 3u);
  EXPECT_NE(e.metrics.serialize().find(R"(ticketd_auth_failures_total{frontend="http"} 8)"),
            std::string::npos);
}

TEST(HttpAuth, UnknownV1RoutesAndWrongMethodsAskForATokenFirst) {
  HttpEngine e(HttpOptions{.tokens = {"t"}});
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/nothing")).result(), status::unauthorized);
  EXPECT_EQ(e.call(make_request(verb::delete_, "/v1/sequences")).result(), status::unauthorized);
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences")).result(), status::unauthorized);
}

TEST(HttpAuth, HealthzAndReadyzStayOpen) {
  HttpEngine e(HttpOptions{.tokens = {"t"}});
  EXPECT_EQ(e.call(make_request(verb::get, "/healthz")).result(), status::ok);
  EXPECT_EQ(e.call(make_request(verb::get, "/readyz")).result(), status::ok);
}

TEST(HttpAuth, MetricsNeedATokenUnlessPublic) {
  HttpEngine closed(HttpOptions{.tokens = {"t"}});
  EXPECT_EQ(closed.call(make_request(verb::get, "/metrics")).result(), status::unauthorized);
  auto req = make_request(verb::get, "/metrics");
  req.set(field::authorization, "Bearer t");
  EXPECT_EQ(closed.call(req).result(), status::ok);
  HttpEngine open(HttpOptions{.tokens = {"t"}, .metrics_public = true});
  EXPECT_EQ(open.call(make_request(verb::get, "/metrics")).result(), status::ok);
}

TEST(HttpAuth, NoTokensMeansNoAuth) {
  HttpEngine e;
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences")).result(), status::ok);
  EXPECT_EQ(e.call(make_request(verb::get, "/metrics")).result(), status::ok);
}

}  // namespace
}  // namespace ticketd::http
