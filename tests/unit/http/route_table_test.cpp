// The route table drives the router: reachability, 405 and Allow, metric labels, the gate.
#include "server/http/route_table.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <set>
#include <string>
#include <vector>

#include "server/core/serving_gate.h"
#include "storage/counter_store.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::http {
namespace {

namespace json = boost::json;
using beast::http::field;
using beast::http::status;
using beast::http::verb;
using testing::HttpEngine;
using testing::make_request;

const verb kMethods[] = {verb::get,   verb::head,    verb::post,   verb::put,
                         verb::patch, verb::delete_, verb::options};

json::object body_of(const Response& r) {
  auto v = json::parse(r.body());
  EXPECT_TRUE(v.is_object()) << r.body();
  return v.is_object() ? v.as_object() : json::object{};
}

std::string error_code_of(const Response& r) {
  if (r.body().empty() || r.body().front() != '{') return "";
  auto b = body_of(r);
  auto* e = b.if_contains("error");
  if (e == nullptr || !e->is_object()) return "";
  return std::string(e->as_object().at("code").as_string());
}

// A target for `pattern` with each placeholder replaced by "p<i>".
std::string target_for(std::string_view pattern) {
  std::string out;
  int n = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{') {
      i = pattern.find('}', i);
      out += "p" + std::to_string(n++);
    } else {
      out += pattern[i];
    }
  }
  return out;
}

// The methods of every row with `pattern`, in table order: what Allow must say.
std::string allow_for(std::string_view pattern) {
  std::string allow;
  for (const auto& row : route_table()) {
    if (row.pattern != pattern) continue;
    for (auto m : row.methods.members()) {
      if (!allow.empty()) allow += ", ";
      allow += beast::http::to_string(m);
    }
  }
  return allow;
}

RouteMatch lookup(verb method, std::string_view target) {
  auto t = parse_request_target(target);
  EXPECT_TRUE(t) << target;
  return t ? match_route(route_table(), method, *t) : RouteMatch{};
}

std::uint64_t label_count(HttpEngine& e, std::string_view label) {
  const std::string text = e.metrics.serialize();
  const std::string key = R"(ticketd_request_duration_seconds_count{frontend="http",route=")" +
                          std::string(label) + "\"} ";
  const auto at = text.find(key);
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + key.size()));
}

TEST(RouteTable, RowsAreWellFormedAndLabelsUnique) {
  std::set<std::string_view> labels;
  std::set<std::pair<std::string_view, int>> pattern_methods;
  for (const auto& row : route_table()) {
    EXPECT_TRUE(row.pattern.starts_with("/")) << row.pattern;
    EXPECT_NE(row.handler, nullptr) << row.pattern;
    EXPECT_FALSE(row.methods.members().empty()) << row.pattern;
    EXPECT_TRUE(labels.insert(row.label).second) << "label used twice: " << row.label;
    EXPECT_NE(row.label, "unmatched");
    for (auto m : row.methods.members()) {
      EXPECT_TRUE(pattern_methods.insert({row.pattern, static_cast<int>(m)}).second)
          << row.pattern << " has two rows for " << beast::http::to_string(m);
    }
  }
}

TEST(RouteTable, EveryRowIsReachableByItsPattern) {
  for (const auto& row : route_table()) {
    for (auto method : row.methods.members()) {
      const auto target = target_for(row.pattern);
      const auto m = lookup(method, target);
      EXPECT_EQ(m.route, &row) << beast::http::to_string(method) << " " << target;
    }
  }
}

TEST(RouteTable, PlaceholdersAreDecodedAndNamed) {
  const auto m = lookup(verb::post, "/v1/sequences/a%2Fb/reservations/7-00ff/commit");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->label, "reservation_commit");
  EXPECT_EQ(m.params.get("name"), "a/b");
  EXPECT_EQ(m.params.get("rid"), "7-00ff");
  EXPECT_EQ(m.params.get("pool"), "");
  // A placeholder needs a non-empty segment; a literal must match exactly.
  EXPECT_EQ(lookup(verb::get, "/v1/sequences//blocks").path_route, nullptr);
  EXPECT_EQ(lookup(verb::post, "/v1/workers/orders/leases/").path_route, nullptr);
  EXPECT_EQ(lookup(verb::get, "/v1/sequences/x/blocks/more").path_route, nullptr);
}

TEST(RouteTable, EveryRowAnswersThroughTheRouterUnderItsLabel) {
  HttpEngine e;
  for (const auto& row : route_table()) {
    for (auto method : row.methods.members()) {
      const auto target = target_for(row.pattern);
      const auto before = label_count(e, row.label);
      auto r = e.call(make_request(method, target));
      EXPECT_NE(r.result(), status::method_not_allowed) << target << " " << r.body();
      EXPECT_EQ(r.body().find("no route for"), std::string::npos) << target << " " << r.body();
      EXPECT_EQ(label_count(e, row.label), before + 1) << row.label;
    }
  }
  EXPECT_EQ(label_count(e, "unmatched"), 0u);
}

TEST(RouteTable, AMethodNotInTheRowsIs405WithAllowBuiltFromTheTable) {
  HttpEngine e;
  std::set<std::string_view> seen;
  for (const auto& row : route_table()) {
    if (!seen.insert(row.pattern).second) continue;
    const auto allow = allow_for(row.pattern);
    const auto target = target_for(row.pattern);
    for (auto method : kMethods) {
      if (allow.find(beast::http::to_string(method)) != std::string::npos) continue;
      auto r = e.call(make_request(method, target));
      EXPECT_EQ(r.result(), status::method_not_allowed)
          << beast::http::to_string(method) << " " << target;
      EXPECT_EQ(r[field::allow], allow) << target;
      EXPECT_EQ(error_code_of(r), "method_not_allowed") << target;
    }
  }
  // Neither a 404 nor a 405 is any row's: both count as "unmatched".
  EXPECT_GT(label_count(e, "unmatched"), 0u);
  ASSERT_EQ(e.call(make_request(verb::get, "/nowhere")).result(), status::not_found);
}

static_assert(split_pattern("/healthz").count == 1);
static_assert(split_pattern("/v1/sequences/{name}/next").count == 4);
static_assert(split_pattern("/v1/sequences/{name}/next").placeholder[2]);
static_assert(!split_pattern("/v1/sequences/{}/next").placeholder[2]);  // "{}" names nothing
static_assert(split_pattern("/").count == 1 && split_pattern("/").segment[0].empty());

// The router compares each row's split pattern: it must be the pattern, segment by segment.
TEST(RouteTable, EveryRowKnowsTheSegmentsOfItsPattern) {
  for (const auto& row : route_table()) {
    std::vector<std::string_view> segments;
    for (std::string_view rest = row.pattern.substr(1);;) {
      const auto slash = rest.find('/');
      segments.push_back(rest.substr(0, slash));
      if (slash == std::string_view::npos) break;
      rest.remove_prefix(slash + 1);
    }
    ASSERT_EQ(row.parts.count, segments.size()) << row.pattern;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      EXPECT_EQ(row.parts.segment[i], segments[i]) << row.pattern;
      EXPECT_EQ(row.parts.placeholder[i], segments[i].starts_with('{')) << row.pattern;
    }
  }
}

TEST(RouteTable, AllowListsTheMethodsOfEveryRowOfAPattern) {
  constexpr Handler kNothing = [](const Reply&, const RouteRequest&) {};
  const Route table[] = {
      {{verb::get}, "/a/{x}", "a_get", false, kNothing},
      {{verb::post, verb::put}, "/a/{x}", "a_write", false, kNothing},
      {{verb::delete_}, "/b/{x}", "b_delete", false, kNothing},
      {{verb::get}, "/a/{x}", "a_shadowed", false, kNothing},
  };
  auto t = parse_request_target("/a/1");
  ASSERT_TRUE(t);
  auto m = match_route(table, verb::patch, *t);
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.path_route, &table[0]);
  // Each method once: rows in table order, a row's own methods in beast's verb order.
  EXPECT_EQ(m.allow, "GET, POST, PUT");
  EXPECT_EQ(match_route(table, verb::put, *t).route, &table[1]);
  EXPECT_EQ(match_route(table, verb::get, *t).route, &table[0]);  // the first row wins
  auto b = parse_request_target("/b/1");
  ASSERT_TRUE(b);
  EXPECT_EQ(match_route(table, verb::get, *b).allow, "DELETE");
}

// A standby that knows the leader: the gate is closed.
struct ClosedGate {
  explicit ClosedGate(const Clock& clock)
      : gate(clock, {"127.0.0.1:3307", "127.0.0.1:8081"}, 10000, 2000) {
    gate.follow({"10.0.0.1:3306", "10.0.0.1:8080"});
  }
  ServingGate gate;
};

TEST(RouteTable, NeedsLeaderRowsAreRefusedByAClosedGateAndOthersAreNot) {
  HttpEngine e;
  ClosedGate closed(e.clock);
  e.deps.gate = &closed.gate;
  for (const auto& row : route_table()) {
    for (auto method : row.methods.members()) {
      const auto target = target_for(row.pattern);
      auto r = e.call(make_request(method, target));
      if (row.needs_leader) {
        EXPECT_EQ(r.result(), status::service_unavailable) << target;
        ASSERT_EQ(error_code_of(r), "not_leader") << target << " " << r.body();
        EXPECT_EQ(body_of(r).at("error").at("leader").as_string(), "10.0.0.1:8080");
      } else {
        EXPECT_NE(error_code_of(r), "not_leader") << target << " " << r.body();
      }
    }
  }
  EXPECT_FALSE(e.tickets.exists("p0"));  // the refused PUT created nothing
}

TEST(RouteTable, ARedirectingFollowerSendsTokenRoutesToTheLeaderAndKeepsProbesAt503) {
  HttpOptions options;
  options.follower_redirect = true;
  HttpEngine e(std::move(options));
  ClosedGate closed(e.clock);
  e.deps.gate = &closed.gate;
  std::size_t redirected = 0;
  for (const auto& row : route_table()) {
    if (!row.needs_leader) continue;
    for (auto method : row.methods.members()) {
      const auto target = target_for(row.pattern);
      auto r = e.call(make_request(method, target));
      ASSERT_EQ(error_code_of(r), "not_leader") << target << " " << r.body();
      if (row.access == Access::kPublic) {
        EXPECT_EQ(r.result(), status::service_unavailable) << target;  // /readyz
        EXPECT_EQ(r[field::location], "") << target;
      } else {
        ++redirected;
        EXPECT_EQ(r.result(), status::temporary_redirect) << target;
        EXPECT_EQ(r[field::location], "http://10.0.0.1:8080" + target) << target;
      }
    }
  }
  EXPECT_GT(redirected, 15u);
  // The query and the encoded path travel as sent.
  auto r = e.call(make_request(verb::get, "/v1/sequences/a%2Fb/blocks?limit=3"));
  EXPECT_EQ(r[field::location], "http://10.0.0.1:8080/v1/sequences/a%2Fb/blocks?limit=3");
  EXPECT_FALSE(e.tickets.exists("p0"));
}

TEST(RouteTable, LeaderLocationNeedsAReachableLeader) {
  EXPECT_EQ(leader_location("10.0.0.1:8080", false, "/v1/x?y=1"), "http://10.0.0.1:8080/v1/x?y=1");
  EXPECT_EQ(leader_location("[fd00::1]:8443", true, "/v1/x"), "https://[fd00::1]:8443/v1/x");
  EXPECT_EQ(leader_location("", false, "/v1/x"), std::nullopt);  // no leader known
  EXPECT_EQ(leader_location("0.0.0.0:8080", false, "/v1/x"), std::nullopt);
  EXPECT_EQ(leader_location("[::]:8080", false, "/v1/x"), std::nullopt);
  EXPECT_EQ(leader_location("10.0.0.1:8080", false, "http://evil/v1/x"), std::nullopt);
  EXPECT_EQ(leader_location("nocolon", false, "/v1/x"), std::nullopt);
}

TEST(RouteTable, AServingLeaderPassesTheGate) {
  HttpEngine e;
  ServingGate gate(e.clock, {"127.0.0.1:3307", "127.0.0.1:8081"}, 10000, 2000);
  gate.lead(7, e.clock.monotonic_ms());
  ASSERT_TRUE(gate.serving());
  e.deps.gate = &gate;
  for (const auto& row : route_table()) {
    for (auto method : row.methods.members()) {
      auto r = e.call(make_request(method, target_for(row.pattern)));
      EXPECT_NE(error_code_of(r), "not_leader") << row.pattern << " " << r.body();
    }
  }
  auto next = e.call(make_request(verb::post, "/v1/sequences/Tickets64/next"));
  EXPECT_EQ(next.result(), status::ok) << next.body();
}

TEST(RouteTable, AFencedWriteIsNotLeaderNamingTheLeader) {
  HttpEngine e;
  ClosedGate closed(e.clock);
  e.deps.gate = &closed.gate;
  std::optional<Response> answer;
  const auto req = make_request(verb::post, "/v1/sequences/Tickets64/next");
  Reply reply(
      e.deps, req, [&answer](Response r) { answer = std::move(r); },
      std::make_shared<net::Completion>());
  reply.fail(Error{StorageErrc::kFenced, "etcd store: this instance is not the elected leader"});
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result(), status::service_unavailable);
  EXPECT_EQ(answer->body(),
            R"({"error":{"code":"not_leader","message":"etcd store: this instance is not the )"
            R"(elected leader","leader":"10.0.0.1:8080"}})");
}

}  // namespace
}  // namespace ticketd::http
