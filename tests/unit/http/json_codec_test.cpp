#include "server/http/json_codec.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "server/http/http_errc.h"

namespace ticketd::http {
namespace {

namespace json = boost::json;

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

TEST(JsonCodec, EmptyBodyIsAnEmptyObject) {
  auto r = parse_object("");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
}

// "{}" is read without the JSON parser; the answers stay the parser's.
TEST(JsonCodec, EmptyObjectsWithOrWithoutSpacesAreEmptyObjects) {
  for (std::string_view body : {"{}", " {}", "{ }", "\t{\r\n}\n", "  {  }  "}) {
    auto r = parse_object(body);
    ASSERT_TRUE(r) << body;
    EXPECT_TRUE(r->empty()) << body;
  }
  for (std::string_view body : {" ", "\n", "{", "}", "{}}", "{} x", "{}{}", "{\v}"}) {
    auto r = parse_object(body);
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().code, HttpErrc::kMalformed) << body;
  }
}

TEST(JsonCodec, NotJsonIsMalformedNotAnObjectIsInvalid) {
  EXPECT_EQ(parse_object("{").error().code, HttpErrc::kMalformed);
  EXPECT_EQ(parse_object("[1]").error().code, HttpErrc::kInvalidField);
}

TEST(JsonCodec, DuplicateKeysAreMalformedAtAnyDepth) {
  struct Case {
    std::string_view body;
    std::string_view key;  // empty: accepted
  };
  const Case cases[] = {
      {R"({"count":1,"count":5000})", "count"},
      {R"({"count":1,"size":2,"count":1})", "count"},
      {R"({"count":1,"\u0063ount":2})", "count"},  // the same key once unescaped
      {R"({"a":{"b":1,"b":2}})", "b"},
      {R"({"a":[{"x":1},{"y":1,"y":1}]})", "y"},
      {R"({"a":{"k":1},"b":{"k":1}})", ""},  // the same key in two objects is fine
      {R"({"a":[{"k":1},{"k":2}]})", ""},
      {R"({"count":1,"Count":2})", ""},  // keys are case-sensitive
  };
  for (const auto& c : cases) {
    auto r = parse_object(c.body);
    if (c.key.empty()) {
      EXPECT_TRUE(r) << c.body;
      continue;
    }
    ASSERT_FALSE(r) << c.body;
    EXPECT_EQ(r.error().code, HttpErrc::kMalformed) << c.body;
    EXPECT_NE(r.error().message.find("'" + std::string(c.key) + "' more than once"),
              std::string::npos)
        << r.error().message;
  }
}

TEST(JsonCodec, ADuplicateKeyAmongManyIsFound) {
  std::string body = "{";
  for (int i = 0; i < 50000; ++i) body += "\"k" + std::to_string(i) + "\":1,";
  body += "\"k49999\":2}";
  auto r = parse_object(body);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'k49999'"), std::string::npos);
}

TEST(JsonCodec, ReadIntegerAcceptsOnlyIntegersInRange) {
  EXPECT_EQ(**read_integer(obj(R"({"n":5})"), "n", 1, 10), 5u);
  EXPECT_FALSE((*read_integer(obj(R"({"n":5})"), "m", 1, 10)).has_value());
  for (const char* t : {R"({"n":0})", R"({"n":11})", R"({"n":-3})", R"({"n":5.0})", R"({"n":"5"})",
                        R"({"n":false})", R"({"n":{}})"}) {
    auto r = read_integer(obj(t), "n", 1, 10);
    ASSERT_FALSE(r) << t;
    EXPECT_EQ(r.error().code, HttpErrc::kInvalidField);
    EXPECT_EQ(r.error().message, "'n' must be an integer in 1..10");
  }
}

TEST(JsonCodec, ReadIdAcceptsIntegersAndDecimalStrings) {
  EXPECT_EQ(**read_id(obj(R"({"v":"18446744073709551615"})"), "v"), 18446744073709551615ULL);
  EXPECT_EQ(**read_id(obj(R"({"v":18446744073709551615})"), "v"), 18446744073709551615ULL);
  EXPECT_EQ(**read_id(obj(R"({"v":0})"), "v"), 0u);
  // Leading zeros are read as parse_u64 reads them, however many there are.
  EXPECT_EQ(**read_id(obj(R"({"v":"007"})"), "v"), 7u);
  EXPECT_EQ(**read_id(obj(R"({"v":"000000000000000000000018446744073709551615"})"), "v"),
            18446744073709551615ULL);
  for (const char* t : {R"({"v":"18446744073709551616"})", R"({"v":"+1"})", R"({"v":" 1"})",
                        R"({"v":"1 "})", R"({"v":"-1"})", R"({"v":"-0"})", R"({"v":""})",
                        R"({"v":"0x10"})", R"({"v":-1})", R"({"v":1.0})", R"({"v":null})"}) {
    EXPECT_FALSE(read_id(obj(t), "v")) << t;
  }
}

TEST(JsonCodec, ReadStringRejectsOtherTypes) {
  EXPECT_EQ(**read_string(obj(R"({"s":"x"})"), "s"), "x");
  EXPECT_FALSE(read_string(obj(R"({"s":1})"), "s"));
}

TEST(JsonCodec, UnknownFieldsAreNamed) {
  auto r = reject_unknown_fields(obj(R"({"a":1,"b":2})"), {"a"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "unknown field 'b'");
  EXPECT_TRUE(reject_unknown_fields(obj(R"({"a":1})"), {"a", "b"}));
}

TEST(JsonCodec, LeaseJsonHasStringIdsAndNumericShape) {
  Lease l{"000000000000001-0000000000", "S", Block{9223372036854775800ULL, 2, 3}, "h", 0};
  EXPECT_EQ(json::serialize(lease_json(l)),
            R"({"lease_id":"000000000000001-0000000000","sequence":"S",)"
            R"("first":"9223372036854775800","last":"9223372036854775804","step":2,"count":3,)"
            R"("holder":"h","granted_at":"1970-01-01T00:00:00.000Z"})");
}

TEST(JsonCodec, ErrorBodyEscapesTheMessage) {
  EXPECT_EQ(error_body("not_found", "sequence 'a\"b' does not exist"),
            R"({"error":{"code":"not_found","message":"sequence 'a\"b' does not exist"}})");
}

// Found by tests/fuzz/http: a 415 echoing a Content-Type with a 0xff byte was not JSON.
TEST(JsonCodec, ErrorBodyReplacesBytesThatAreNotUtf8) {
  EXPECT_EQ(error_body("unsupported_media_type", "Content-Type was 'a\xff\xc3'"),
            "{\"error\":{\"code\":\"unsupported_media_type\",\"message\":\"Content-Type was "
            "'a\xef\xbf\xbd\xef\xbf\xbd'\"}}");
  EXPECT_EQ(not_leader_body("not_leader", "\xff", ""),
            "{\"error\":{\"code\":\"not_leader\",\"message\":\"\xef\xbf\xbd\",\"leader\":null}}");
}

}  // namespace
}  // namespace ticketd::http
