#include "server/metrics/metrics.h"

#include <gtest/gtest.h>

#include "tests/unit/http/http_fixture.h"

namespace ticketd::metrics {
namespace {

using http::testing::HttpEngine;

bool has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(Metrics, FrontEndCountersAppearWithLabels) {
  HttpEngine e;
  auto& m = e.metrics;
  m.ids_issued("Tickets64", "mysql", 3);
  m.block_leased("Tickets64", "http", 1000);
  m.connection_opened("mysql");
  m.connection_opened("mysql");
  m.connection_closed("mysql");
  m.auth_failure("mysql");
  m.error("mysql", "1146");
  m.request_latency("http", "next", 0.0003);
  const auto t = m.serialize();
  EXPECT_TRUE(has(t, R"(ticketd_ids_issued_total{frontend="mysql",sequence="Tickets64"} 3)")) << t;
  EXPECT_TRUE(has(t, R"(ticketd_blocks_leased_total{frontend="http",sequence="Tickets64"} 1)"));
  EXPECT_TRUE(has(t, R"(ticketd_block_size_values_sum{sequence="Tickets64"} 1000)"));
  EXPECT_TRUE(has(t, R"(ticketd_open_connections{frontend="mysql"} 1)"));
  EXPECT_TRUE(has(t, R"(ticketd_connections_total{frontend="mysql"} 2)"));
  EXPECT_TRUE(has(t, R"(ticketd_auth_failures_total{frontend="mysql"} 1)"));
  EXPECT_TRUE(has(t, R"(ticketd_errors_total{code="1146",frontend="mysql"} 1)"));
  EXPECT_TRUE(has(
      t, R"(ticketd_request_duration_seconds_bucket{frontend="http",route="next",le="0.0005"} 1)"));
  EXPECT_TRUE(has(t, "# TYPE ticketd_ids_issued_total counter"));
}

TEST(Metrics, DurableWritesComeFromTheCommitter) {
  HttpEngine e;
  const auto before = e.committer.stats().commits;
  ASSERT_TRUE(next_and_wait(e.tickets, "Tickets64", 1));  // raises the ceiling: one commit
  const auto t = e.metrics.serialize();
  EXPECT_GE(e.committer.stats().commits, before + 1);
  EXPECT_TRUE(has(t, "ticketd_durable_writes_total "));
  EXPECT_FALSE(has(t, "ticketd_durable_writes_total 0\n")) << t;
  EXPECT_TRUE(has(t, R"(ticketd_values_reserved_total{sequence="Tickets64"} 1000)")) << t;
  EXPECT_TRUE(has(t, "ticketd_durable_write_seconds_total "));
}

TEST(Metrics, CapacityAndExhaustionEstimate) {
  HttpEngine e;
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "small", .max_value = 10000}));
  auto t = e.metrics.serialize();
  EXPECT_TRUE(has(t, R"(ticketd_sequence_remaining_values{sequence="small"} 10000)")) << t;
  EXPECT_TRUE(has(t, R"(ticketd_sequence_exhaustion_seconds{sequence="small"} +Inf)")) << t;
  // 1000 values in 10 s: 100/s, 9000 left: 90 s.
  ASSERT_TRUE(next_and_wait(e.tickets, "small", 1000));
  e.clock.advance(10000);
  t = e.metrics.serialize();
  EXPECT_TRUE(has(t, R"(ticketd_sequence_remaining_values{sequence="small"} 9000)")) << t;
  EXPECT_TRUE(has(t, R"(ticketd_sequence_exhaustion_seconds{sequence="small"} 90)")) << t;
}

TEST(Metrics, DroppedSequencesLoseTheirGauges) {
  HttpEngine e;
  ASSERT_TRUE(
      has(e.metrics.serialize(), R"(ticketd_sequence_remaining_values{sequence="Tickets32"})"));
  std::promise<DetailedResult<void>> p;
  e.tickets.drop("Tickets32", [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
  ASSERT_TRUE(p.get_future().get());
  EXPECT_FALSE(
      has(e.metrics.serialize(), R"(ticketd_sequence_remaining_values{sequence="Tickets32"})"));
}

}  // namespace
}  // namespace ticketd::metrics
