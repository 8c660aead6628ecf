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

TEST(JsonCodec, NotJsonIsMalformedNotAnObjectIsInvalid) {
  EXPECT_EQ(parse_object("{").error().code, HttpErrc::kMalformed);
  EXPECT_EQ(parse_object("[1]").error().code, HttpErrc::kInvalidField);
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
  for (const char* t :
       {R"({"v":"18446744073709551616"})", R"({"v":"+1"})", R"({"v":" 1"})", R"({"v":""})",
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

}  // namespace
}  // namespace ticketd::http
