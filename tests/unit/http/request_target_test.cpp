#include "server/http/request_target.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/url/parse.hpp>
#include <string>
#include <vector>

#include "server/http/http_errc.h"
#include "server/http/route_table.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::http {
namespace {

using beast::http::status;
using beast::http::verb;
using testing::HttpEngine;
using testing::make_request;

std::vector<std::string> segments_of(std::string_view target) {
  auto t = parse_request_target(target);
  EXPECT_TRUE(t) << target;
  if (!t) return {};
  return {t->segments.begin(), t->segments.end()};
}

std::string error_code_of(const Response& r) {
  auto v = boost::json::parse(r.body());
  return std::string(v.at("error").at("code").as_string());
}

TEST(RequestTarget, SplitsTheEncodedPathAtItsSlashes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(segments_of("/healthz"), V{"healthz"});
  EXPECT_EQ(segments_of("/v1/sequences/a%2Fb"), (V{"v1", "sequences", "a%2Fb"}));
  EXPECT_EQ(segments_of("/v1/sequences/"), (V{"v1", "sequences", ""}));
  EXPECT_EQ(segments_of("/"), V{""});
  EXPECT_EQ(segments_of("//healthz"), (V{"", "healthz"}));
  // Dot segments reach the router as sent; Boost.URL's segment view would hide a leading "/.".
  EXPECT_EQ(segments_of("/./healthz"), (V{".", "healthz"}));
  EXPECT_EQ(segments_of("/v1/sequences/.."), (V{"v1", "sequences", ".."}));
}

// Plain paths (no '%', '?' or '#') are split without Boost.URL; the answer is the one
// Boost.URL gives, for every character such a path may hold.
TEST(RequestTarget, PlainPathsSplitAsBoostUrlSplitsThem) {
  const std::string plain = "abcxyzABCXYZ0189-._~!$&'()*+,;=:@";
  std::vector<std::string> targets = {
      "/", "//", "/v1/sequences/Tickets64/next", "/a//b/", "/.", "/..", "/./healthz"};
  for (const char c : plain) {
    targets.push_back(std::string("/") + c);
    targets.push_back(std::string("/v1/") + c + "x/" + c);
  }
  for (const auto& target : targets) {
    auto origin = boost::urls::parse_origin_form(target);
    ASSERT_TRUE(origin) << target;
    EXPECT_TRUE(origin->encoded_query().empty()) << target;
    std::vector<std::string> expected;
    std::string_view path = origin->encoded_path();
    path.remove_prefix(1);
    for (auto slash = path.find('/');; slash = path.find('/')) {
      expected.emplace_back(path.substr(0, slash));
      if (slash == std::string_view::npos) break;
      path.remove_prefix(slash + 1);
    }
    auto t = parse_request_target(target);
    ASSERT_TRUE(t) << target;
    EXPECT_TRUE(t->origin_form) << target;
    EXPECT_TRUE(t->query.empty()) << target;
    EXPECT_EQ(std::vector<std::string>(t->segments.begin(), t->segments.end()), expected) << target;
  }
}

TEST(RequestTarget, DecodesSegmentsWithoutTurningPlusIntoSpace) {
  struct Case {
    std::string_view encoded;
    std::string decoded;
  };
  const Case cases[] = {
      {"a%2Fb", "a/b"},
      {"a%2fb", "a/b"},
      {"r%C3%A9sum%C3%A9", "r\xc3\xa9sum\xc3\xa9"},
      {"a+b", "a+b"},
      {"a%20b", "a b"},
      {"%2E%2E", ".."},
      {"a%00b", std::string("a\0b", 3)},
      {"plain", "plain"},
  };
  for (const auto& c : cases) EXPECT_EQ(decode_segment(c.encoded), c.decoded) << c.encoded;
}

TEST(RequestTarget, DecodesTheQueryAsAForm) {
  auto t = parse_request_target("/x?a+b=c+d&plus=%2B&&empty=&bare&dup=1&dup=2&s=%2F");
  ASSERT_TRUE(t);
  const QueryParams expected{{"a b", "c d"}, {"plus", "+"}, {"empty", ""},
                             {"bare", ""},   {"dup", "2"},  {"s", "/"}};
  EXPECT_EQ(t->query, expected);
  auto bare = parse_request_target("/x?");
  ASSERT_TRUE(bare);
  EXPECT_TRUE(bare->query.empty());
}

TEST(RequestTarget, MalformedEscapesAndCharactersAreMalformed) {
  for (const char* target :
       {"/v1/sequences/%zz", "/v1/sequences/%", "/v1/sequences/a%4", "/v1/sequences/%4g",
        "/v1/sequences/%G0", "/v1/sequences/a%%41", "/x?limit=%zz", "/x?%=1", "/x?k=%2",
        "/v1/sequences/a|b", "/v1/sequences/a\"b", "/v1/sequences/r\xc3\xa9"}) {
    auto t = parse_request_target(target);
    ASSERT_FALSE(t) << target;
    EXPECT_EQ(t.error().code, HttpErrc::kMalformed) << target;
  }
}

TEST(RequestTarget, TargetsOutsideOriginFormHaveNoRoute) {
  for (const char* target : {"*", "http://localhost/healthz", "/healthz#top", "healthz"}) {
    auto t = parse_request_target(target);
    ASSERT_TRUE(t) << target;
    EXPECT_FALSE(t->origin_form) << target;
    const auto m = match_route(route_table(), verb::get, *t);
    EXPECT_EQ(m.path_route, nullptr) << target;
  }
}

TEST(RequestTarget, ThroughTheRouterMalformedTargetsAre400AndOthersKeepTheirAnswers) {
  HttpEngine e;
  struct Case {
    verb method;
    const char* target;
    status st;
    const char* code;
  };
  const Case cases[] = {
      {verb::get, "/v1/sequences/%zz", status::bad_request, "bad_request"},
      {verb::get, "/v1/sequences/Tickets64/blocks?limit=%zz", status::bad_request, "bad_request"},
      {verb::get, "/v1/sequences/Tickets64/blocks?limit=%", status::bad_request, "bad_request"},
      {verb::post, "/v1/sequences/Tickets64%/next", status::bad_request, "bad_request"},
      {verb::get, "/healthz?probe=%zz", status::bad_request, "bad_request"},
      // "%2F" stays inside the name, which the name rule then refuses.
      {verb::put, "/v1/sequences/a%2Fb", status::unprocessable_entity, "invalid_argument"},
      {verb::get, "/v1/sequences/a%2Fb", status::not_found, "not_found"},
      // Literal segments match as sent: an encoded "next" is not the route.
      {verb::post, "/v1/sequences/Tickets64/%6Eext", status::not_found, "not_found"},
      {verb::get, "/./healthz", status::not_found, "not_found"},
      {verb::get, "http://localhost/healthz", status::not_found, "not_found"},
  };
  for (const auto& c : cases) {
    auto r = e.call(make_request(c.method, c.target));
    EXPECT_EQ(r.result(), c.st) << c.target << " " << r.body();
    EXPECT_EQ(error_code_of(r), c.code) << c.target;
  }
  // An encoded name reaches the engine decoded.
  auto r = e.call(make_request(verb::post, "/v1/sequences/Tickets%364/next"));
  EXPECT_EQ(r.result(), status::ok) << r.body();
  EXPECT_EQ(r.body(), R"({"sequence":"Tickets64","ids":["1"]})");
}

}  // namespace
}  // namespace ticketd::http
