#include "server/http/response.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>

namespace ticketd::http {
namespace {

using field = Response::field;
using status = Response::status;

constexpr std::string_view kJson = "Content-Type: application/json\r\nCache-Control: no-store\r\n";

std::string wire(const Response& res) {
  std::string out;
  res.serialize(out);
  return out;
}

TEST(Response, AJsonAnswerByteForByte) {
  Response res{status::ok};
  res.preset(kJson);
  res.body() = R"({"sequence":"Tickets64","ids":["1"]})";
  EXPECT_EQ(wire(res),
            "HTTP/1.1 200 OK\r\n"
            "Server: ticketd\r\n"
            "Content-Type: application/json\r\n"
            "Cache-Control: no-store\r\n"
            "Content-Length: 36\r\n"
            "\r\n"
            R"({"sequence":"Tickets64","ids":["1"]})");
}

TEST(Response, FieldsSetFollowThePresetInTheOrderSet) {
  Response res{status::method_not_allowed};
  res.preset(kJson);
  res.set(field::allow, "GET, PUT");
  res.set("X-Content-Type-Options", "nosniff");
  res.body() = "{}";
  EXPECT_EQ(wire(res),
            "HTTP/1.1 405 Method Not Allowed\r\n"
            "Server: ticketd\r\n"
            "Content-Type: application/json\r\n"
            "Cache-Control: no-store\r\n"
            "Allow: GET, PUT\r\n"
            "X-Content-Type-Options: nosniff\r\n"
            "Content-Length: 2\r\n"
            "\r\n"
            "{}");
}

TEST(Response, ConnectionIsWrittenOnlyWhenItDiffersFromTheVersionsDefault) {
  Response close11{status::ok};
  close11.keep_alive(false);
  EXPECT_EQ(wire(close11),
            "HTTP/1.1 200 OK\r\nServer: ticketd\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  Response keep10{status::ok, 10};
  EXPECT_EQ(wire(keep10),
            "HTTP/1.0 200 OK\r\nServer: ticketd\r\nContent-Length: 0\r\n"
            "Connection: keep-alive\r\n\r\n");
  Response close10{status::ok, 10};
  close10.keep_alive(false);
  EXPECT_EQ(wire(close10), "HTTP/1.0 200 OK\r\nServer: ticketd\r\nContent-Length: 0\r\n\r\n");
}

TEST(Response, NoContentLengthWhereAnAnswerHasNoBody) {
  EXPECT_EQ(wire(Response{status::no_content}),
            "HTTP/1.1 204 No Content\r\nServer: ticketd\r\n\r\n");
  Response not_modified{status::not_modified};
  not_modified.set(field::etag, "\"abc\"");
  EXPECT_EQ(wire(not_modified),
            "HTTP/1.1 304 Not Modified\r\nServer: ticketd\r\nETag: \"abc\"\r\n\r\n");
  EXPECT_EQ(wire(Response{status::continue_}), "HTTP/1.1 100 Continue\r\nServer: ticketd\r\n\r\n");
}

TEST(Response, SetReplacesAFieldOfTheSameNameWhateverItsCase) {
  Response res{status::temporary_redirect};
  res.set(field::location, "http://a/1");
  res.set(field::retry_after, "1");
  res.set("LOCATION", "http://b/2");
  EXPECT_EQ(res[field::location], "http://b/2");
  EXPECT_EQ(res["location"], "http://b/2");
  EXPECT_EQ(res[field::retry_after], "1");
  EXPECT_EQ(wire(res),
            "HTTP/1.1 307 Temporary Redirect\r\nServer: ticketd\r\nRetry-After: 1\r\n"
            "LOCATION: http://b/2\r\nContent-Length: 0\r\n\r\n");
}

TEST(Response, LookupCoversThePresetAndIsEmptyWhenAbsent) {
  Response res{status::ok};
  res.preset(kJson);
  res.set(field::etag, "\"x\"");
  EXPECT_EQ(res[field::content_type], "application/json");
  EXPECT_EQ(res["cache-control"], "no-store");
  EXPECT_EQ(res[field::etag], "\"x\"");
  EXPECT_EQ(res[field::allow], "");
  EXPECT_EQ(res["Content"], "");  // a prefix of a name is not the name
  EXPECT_EQ(Response{}[field::content_type], "");
}

// Server, Content-Length and Connection are serialize()'s: a caller cannot contradict them.
TEST(Response, TheFieldsSerializeWritesCannotBeSet) {
  Response res{status::ok};
  res.set(field::server, "other");
  res.set(field::content_length, "999");
  res.set("connection", "close");
  res.body() = "abc";
  EXPECT_EQ(wire(res), "HTTP/1.1 200 OK\r\nServer: ticketd\r\nContent-Length: 3\r\n\r\nabc");
}

// No value can end the header or add a field (response splitting).
TEST(Response, LineBreaksAndNulInAValueBecomeSpaces) {
  Response res{status::temporary_redirect};
  constexpr char kValue[] = "/a\r\nSet-Cookie: x=1\r\n\r\n<html>\0z";
  res.set(field::location, std::string_view(kValue, sizeof kValue - 1));
  const std::string out = wire(res);
  EXPECT_EQ(out,
            "HTTP/1.1 307 Temporary Redirect\r\nServer: ticketd\r\n"
            "Location: /a  Set-Cookie: x=1    <html> z\r\nContent-Length: 0\r\n\r\n");
}

TEST(Response, SerializeReplacesWhatTheBufferHeld) {
  std::string out = std::string(4096, 'x');
  Response res{status::ok};
  res.body() = "1";
  res.serialize(out);
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nServer: ticketd\r\nContent-Length: 1\r\n\r\n1");
}

// What Beast's own parser (as clients' parsers) reads back from the wire form.
TEST(Response, BeastParsesTheWireFormBack) {
  Response res{status::created};
  res.preset(kJson);
  res.set(field::location, "/v1/sequences/a");
  res.body() = std::string(70000, 'b');
  const std::string out = wire(res);
  namespace bhttp = boost::beast::http;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(1 << 20);
  boost::system::error_code ec;
  std::size_t used = 0;
  while (!ec && !parser.is_done() && used < out.size()) {
    used += parser.put(boost::asio::buffer(out.data() + used, out.size() - used), ec);
  }
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(used, out.size());
  ASSERT_TRUE(parser.is_done());
  const auto& m = parser.get();
  EXPECT_EQ(m.result(), bhttp::status::created);
  EXPECT_TRUE(m.keep_alive());
  EXPECT_EQ(m[bhttp::field::server], "ticketd");
  EXPECT_EQ(m[bhttp::field::content_type], "application/json");
  EXPECT_EQ(m[bhttp::field::location], "/v1/sequences/a");
  EXPECT_EQ(m[bhttp::field::content_length], "70000");
  EXPECT_EQ(m.body(), res.body());
}

}  // namespace
}  // namespace ticketd::http
