// GET /ui: the status page's files are the source tree's bytes, served with their media type,
// a validator and a policy that keeps the page to this server; no token for the files.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "server/http/ui_handlers.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::http {
namespace {

using beast::http::field;
using beast::http::status;
using beast::http::verb;
using testing::HttpEngine;
using testing::make_request;

std::string source_file(std::string_view name) {
  std::ifstream in(std::string(TICKETD_SOURCE_DIR) + "/server/http/ui/" + std::string(name),
                   std::ios::binary);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(UiFiles, AreTheBytesOfTheSourceTreeWithAMediaTypeEach) {
  std::set<std::string_view> names;
  for (const auto& f : ui_files()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_EQ(f.bytes, source_file(f.name)) << f.name;
    EXPECT_TRUE(ui_media_type(f.name).has_value()) << f.name;
  }
  EXPECT_EQ(names,
            (std::set<std::string_view>{"index.html", "favicon.svg", "status.css", "status.js"}));
}

TEST(UiFiles, MediaTypesComeFromTheExtension) {
  EXPECT_EQ(ui_media_type("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(ui_media_type("status.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ui_media_type("status.css"), "text/css; charset=utf-8");
  EXPECT_EQ(ui_media_type("favicon.svg"), "image/svg+xml");
  EXPECT_EQ(ui_media_type(".js"), std::nullopt);  // no name before the extension
  EXPECT_EQ(ui_media_type("status.js.map"), std::nullopt);
  EXPECT_EQ(ui_media_type("ticketd.yaml"), std::nullopt);
}

TEST(UiRoutes, ThePageIsIndexHtmlWithItsPolicy) {
  HttpEngine e;
  auto r = e.call(make_request(verb::get, "/ui"));
  ASSERT_EQ(r.result(), status::ok) << r.body();
  EXPECT_EQ(r[field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ(r.body(), source_file("index.html"));
  EXPECT_EQ(r[field::cache_control], "no-cache");
  EXPECT_EQ(r["X-Content-Type-Options"], "nosniff");
  const std::string csp(r["Content-Security-Policy"]);
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe"), std::string::npos) << csp;
}

TEST(UiRoutes, AFileIsRevalidatedByItsETag) {
  HttpEngine e;
  auto first = e.call(make_request(verb::get, "/ui/status.js"));
  ASSERT_EQ(first.result(), status::ok);
  EXPECT_EQ(first.body(), source_file("status.js"));
  const std::string etag(first[field::etag]);
  ASSERT_EQ(etag.size(), 18u) << etag;  // "<16 hex>"
  auto req = make_request(verb::get, "/ui/status.js");
  req.set(field::if_none_match, etag);
  auto again = e.call(std::move(req));
  EXPECT_EQ(again.result(), status::not_modified);
  EXPECT_TRUE(again.body().empty());
  EXPECT_EQ(again[field::etag], etag);
  // Another file's validator is another's.
  auto css = e.call(make_request(verb::get, "/ui/status.css"));
  EXPECT_NE(css[field::etag], etag);
  auto stale = make_request(verb::get, "/ui/status.css");
  stale.set(field::if_none_match, etag);
  EXPECT_EQ(e.call(std::move(stale)).result(), status::ok);
}

TEST(UiRoutes, OnlyThePagesFilesAreServed) {
  HttpEngine e;
  for (const char* target : {"/ui/nope.js", "/ui/..%2F..%2Fetc%2Fpasswd", "/ui/index.html.bak",
                             "/ui/STATUS.JS", "/ui/ui_files.cpp"}) {
    auto r = e.call(make_request(verb::get, target));
    EXPECT_EQ(r.result(), status::not_found) << target << " " << r.body();
  }
  EXPECT_EQ(e.call(make_request(verb::post, "/ui")).result(), status::method_not_allowed);
}

TEST(UiRoutes, TheFilesNeedNoTokenButTheDataDoes) {
  HttpOptions options;
  options.tokens.emplace_back("ui-test-token-0123456789");
  HttpEngine e(std::move(options));
  EXPECT_EQ(e.call(make_request(verb::get, "/ui")).result(), status::ok);
  EXPECT_EQ(e.call(make_request(verb::get, "/ui/status.js")).result(), status::ok);
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/sequences")).result(), status::unauthorized);
  EXPECT_EQ(e.call(make_request(verb::get, "/v1/workers")).result(), status::unauthorized);
}

}  // namespace
}  // namespace ticketd::http
