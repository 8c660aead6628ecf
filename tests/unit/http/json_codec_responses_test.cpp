// The response shapes of json_codec that routes_test does not pin byte for byte.
#include <gtest/gtest.h>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>
#include <string>

#include "server/http/json_codec.h"

namespace ticketd::http {
namespace {

std::string text(const boost::json::object& o) { return boost::json::serialize(o); }

TEST(JsonCodecResponses, NotLeaderNamesTheLeaderOrNull) {
  EXPECT_EQ(not_leader_body("not_leader", "standby", "10.0.0.1:8080"),
            R"({"error":{"code":"not_leader","message":"standby","leader":"10.0.0.1:8080"}})");
  EXPECT_EQ(not_leader_body("not_leader", "standby", ""),
            R"({"error":{"code":"not_leader","message":"standby","leader":null}})");
}

TEST(JsonCodecResponses, ClusterShowsUnknownAddressesAsNull) {
  ClusterView view;
  view.role = Role::kLeader;
  view.self = {"127.0.0.1:3306", "127.0.0.1:8080"};
  view.revision = 42;
  EXPECT_EQ(
      text(cluster_json(view, true)),
      R"({"role":"leader","serving":true,"leader":null,)"
      R"("self":{"mysql":"127.0.0.1:3306","http":"127.0.0.1:8080"},"term":42,"revision":42})");
}

TEST(JsonCodecResponses, ReservationOutcomesCarryTheReasonOnlyWhenVoid) {
  EXPECT_EQ(text(reservation_outcome_json("Credit", "7-00ff", "7", std::nullopt)),
            R"({"sequence":"Credit","reservation_id":"7-00ff","id":"7","status":"committed"})");
  EXPECT_EQ(text(reservation_outcome_json("Credit", "7-00ff", "7", std::string("typo"))),
            R"({"sequence":"Credit","reservation_id":"7-00ff","id":"7","status":"void",)"
            R"("reason":"typo"})");
}

TEST(JsonCodecResponses, IdsAreDecimalStrings) {
  EXPECT_EQ(block_ids_text("T", Block{.first = 9007199254740993ULL, .step = 2, .count = 2}),
            R"({"sequence":"T","ids":["9007199254740993","9007199254740995"]})");
  EXPECT_EQ(block_ids_text("T", Block{.first = 1, .step = 1, .count = 0}),
            R"({"sequence":"T","ids":[]})");
  EXPECT_EQ(block_ids_text("Tickets64", Block{.first = 18446744073709551615ULL, .count = 1}),
            R"({"sequence":"Tickets64","ids":["18446744073709551615"]})");
  EXPECT_EQ(text(text_ids_json("U", {"a", "b"})), R"({"sequence":"U","ids":["a","b"]})");
}

// The session's buffer keeps what it held before (append, never replace), and its capacity.
TEST(JsonCodecResponses, BlockIdsAreAppendedToWhatTheBufferHolds) {
  std::string out = "head:";
  append_block_ids(out, "T", Block{.first = 5, .step = 5, .count = 2});
  EXPECT_EQ(out, R"(head:{"sequence":"T","ids":["5","10"]})");
  out.clear();
  out.reserve(512);
  const char* const storage = out.data();
  append_block_ids(out, "Tickets64", Block{.first = 18446744073709551615ULL, .count = 1});
  EXPECT_EQ(out, block_ids_text("Tickets64", Block{.first = 18446744073709551615ULL, .count = 1}));
  EXPECT_EQ(out.data(), storage);  // written in place: no new block for a buffer large enough
}

// block_ids_text writes its text without a DOM: the same bytes boost::json::serialize gives
// for the same object, whatever the sequence name holds.
TEST(JsonCodecResponses, BlockIdsTextIsWhatTheDomSerializes) {
  const std::string every_byte = [] {
    std::string s;
    for (int c = 0; c < 256; ++c) s += static_cast<char>(c);
    return s;
  }();
  const std::string_view names[] = {
      "", "a", "quote\"and\\back/slash", "tab\tnl\n", "\x01\x1f\x7f", "caf\xc3\xa9", every_byte};
  const Block blocks[] = {{.first = 0, .step = 1, .count = 1},
                          {.first = 7, .step = 3, .count = 4},
                          {.first = 1, .step = 1, .count = 0}};
  for (const auto name : names) {
    for (const auto& block : blocks) {
      boost::json::array ids;
      for (std::uint64_t i = 0; i < block.count; ++i) {
        ids.emplace_back(std::to_string(block.first + i * block.step));
      }
      const boost::json::object dom{{"sequence", name}, {"ids", std::move(ids)}};
      EXPECT_EQ(block_ids_text(name, block), text(dom)) << name;
    }
  }
}

// lease_text is lease_json serialized, byte for byte, whatever the strings hold.
TEST(JsonCodecResponses, LeaseTextIsWhatTheDomSerializes) {
  const std::string every_byte = [] {
    std::string s;
    for (int c = 0; c < 256; ++c) s += static_cast<char>(c);
    return s;
  }();
  const Lease leases[] = {
      {.lease_id = "1001",
       .sequence = "Tickets64",
       .block = {.first = 1001, .step = 1, .count = 1000},
       .holder = "",
       .granted_at_ms = 1767225600123},
      {.lease_id = "18446744073709551615",
       .sequence = "quote\"and\\back/slash",
       .block = {.first = 18446744073709551615ULL, .step = 2, .count = 1},
       .holder = "tab\tnl\n\x01\x7f caf\xc3\xa9",
       .granted_at_ms = -1},
      {.lease_id = every_byte,
       .sequence = every_byte,
       .block = {.first = 7, .step = 3, .count = 0},
       .holder = every_byte,
       .granted_at_ms = 253402300800000},
  };
  for (const auto& lease : leases) EXPECT_EQ(lease_text(lease), text(lease_json(lease)));
  EXPECT_EQ(lease_text(leases[0]),
            R"({"lease_id":"1001","sequence":"Tickets64","first":"1001","last":"2000","step":1,)"
            R"("count":1000,"holder":"","granted_at":"2026-01-01T00:00:00.123Z"})");
}

TEST(JsonCodecResponses, GaplessDescriptionHasNullUntilTheFirstCommit) {
  GaplessAudit audit;
  audit.order = GaplessOrder::kStrict;
  EXPECT_EQ(text(gapless_sequence_json("Inv", audit, 1)),
            R"({"name":"Inv","kind":"gapless","order":"strict","next_value":"1",)"
            R"("committed_through":null})");
  audit.committed_through = 5;
  EXPECT_EQ(gapless_sequence_json("Inv", audit, 6).at("committed_through").as_string(), "5");
}

TEST(JsonCodecResponses, StatusAndSnowflakeParts) {
  EXPECT_EQ(text(status_json("ok")), R"({"status":"ok"})");
  SnowflakeParts parts{.unix_ms = 1767225600000, .worker = 3, .sequence = 9, .tick = 0};
  EXPECT_EQ(text(snowflake_parts_json(123, parts)),
            R"({"id":"123","unix_ms":1767225600000,"timestamp":"2026-01-01T00:00:00.000Z",)"
            R"("worker":3,"sequence":9})");
}

}  // namespace
}  // namespace ticketd::http
