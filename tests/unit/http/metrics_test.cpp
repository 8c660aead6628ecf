#include "server/metrics/metrics.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <memory>
#include <string>

#include "server/core/serving_gate.h"
#include "server/core/snowflake_generator.h"
#include "tests/support/fake_worker_lease.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::metrics {
namespace {

using http::testing::HttpEngine;

bool has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

// The value of the sample `series` (name and labels exactly as serialized), or -1 if absent.
double value(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + 1 + series.size() + 1, nullptr);
}

DetailedResult<void> wait_for(const std::function<void(GaplessDone)>& start) {
  std::promise<DetailedResult<void>> p;
  start([&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
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

TEST(Metrics, EveryCommitFeedsTheLatencyAndGroupSizeHistograms) {
  HttpEngine e;
  auto t = e.metrics.serialize();
  const auto commits = value(t, "ticketd_durable_write_duration_seconds_count");
  const auto in_twos = value(t, R"(ticketd_durable_write_group_size_bucket{le="2"})");
  const auto in_fours = value(t, R"(ticketd_durable_write_group_size_bucket{le="4"})");
  const auto requests = value(t, "ticketd_durable_write_group_size_sum");
  ASSERT_GE(commits, 0) << t;
  // One commit of one request, held while three more queue: they share the next commit.
  std::promise<void> done[4];
  auto submit = [&](int i) {
    std::vector<Mutation> m;
    m.push_back(Mutation{"k" + std::to_string(i), "v"});
    e.committer.submit(std::move(m),
                       [&done, i](const DetailedResult<void>&) { done[i].set_value(); });
  };
  // Every earlier commit (the fixture's) has completed: the next one to enter is submit(0)'s.
  const auto entered = static_cast<int>(e.store.commit_count());
  e.store.hold();
  submit(0);
  e.store.wait_entered(entered + 1);
  for (int i = 1; i < 4; ++i) submit(i);
  e.store.release();
  for (auto& d : done) d.get_future().wait();
  t = e.metrics.serialize();
  EXPECT_EQ(value(t, "ticketd_durable_write_duration_seconds_count"), commits + 2) << t;
  EXPECT_EQ(value(t, "ticketd_durable_write_group_size_sum"), requests + 4) << t;
  EXPECT_EQ(value(t, R"(ticketd_durable_write_group_size_bucket{le="2"})"), in_twos + 1) << t;
  EXPECT_EQ(value(t, R"(ticketd_durable_write_group_size_bucket{le="4"})"), in_fours + 2) << t;
  EXPECT_TRUE(has(t, "# TYPE ticketd_durable_write_duration_seconds histogram"));
  EXPECT_TRUE(has(t, R"(ticketd_durable_write_duration_seconds_bucket{le="5e-05"})")) << t;
}

TEST(Metrics, GaplessPendingReservationsAndOutcomes) {
  HttpEngine e;
  ASSERT_EQ(e.call(ticketd::http::testing::make_request(
                       boost::beast::http::verb::put, "/v1/sequences/Inv", R"({"kind":"gapless"})"))
                .result(),
            boost::beast::http::status::created);
  auto inv = e.tickets.find_gapless("Inv");
  ASSERT_TRUE(inv);
  std::promise<DetailedResult<Reservation>> p;
  inv->reserve("clerk", 0, [&p](DetailedResult<Reservation> r) { p.set_value(std::move(r)); });
  auto reservation = p.get_future().get();
  ASSERT_TRUE(reservation);
  auto t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_gapless_pending_reservations{sequence="Inv"})"), 1) << t;
  EXPECT_EQ(value(t, R"(ticketd_gapless_waiting_callers{sequence="Inv"})"), 0) << t;
  EXPECT_EQ(value(t, R"(ticketd_gapless_events_total{event="commit",sequence="Inv"})"), 0) << t;
  ASSERT_TRUE(wait_for([&](GaplessDone d) { inv->commit(reservation->id, std::move(d)); }));
  t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_gapless_pending_reservations{sequence="Inv"})"), 0) << t;
  EXPECT_EQ(value(t, R"(ticketd_gapless_events_total{event="commit",sequence="Inv"})"), 1) << t;
  // Dropped: the gauges go, the counters stay.
  std::promise<DetailedResult<void>> dropped;
  e.tickets.drop("Inv", [&](DetailedResult<void> r) { dropped.set_value(std::move(r)); });
  ASSERT_TRUE(dropped.get_future().get());
  t = e.metrics.serialize();
  EXPECT_FALSE(has(t, R"(ticketd_gapless_pending_reservations{sequence="Inv"})")) << t;
  EXPECT_TRUE(has(t, R"(ticketd_gapless_events_total{event="commit",sequence="Inv"} 1)")) << t;
}

TEST(Metrics, WorkerPoolLeasesCountOnlyLiveOnes) {
  HttpEngine e;
  EXPECT_FALSE(has(e.metrics.serialize(), "ticketd_worker_pool_leases{"));
  e.metrics.watch(&e.workers, nullptr);
  auto t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_worker_pool_leases{pool="orders"})"), 0) << t;
  EXPECT_EQ(value(t, R"(ticketd_worker_pool_size{pool="orders"})"), 4) << t;
  ASSERT_TRUE(acquire_and_wait(e.workers, "orders", "svc-a", std::nullopt));
  ASSERT_TRUE(acquire_and_wait(e.workers, "orders", "svc-b", 60000));
  EXPECT_EQ(value(e.metrics.serialize(), R"(ticketd_worker_pool_leases{pool="orders"})"), 2);
  e.clock.advance(10000);  // the default TTL: svc-a's lease expired exactly now
  EXPECT_EQ(value(e.metrics.serialize(), R"(ticketd_worker_pool_leases{pool="orders"})"), 1);
  EXPECT_FALSE(has(t, "ticketd_ha_serving "));  // no gate watched
}

TEST(Metrics, HaRoleTermAndServingFollowTheGate) {
  HttpEngine e;
  ServingGate gate(e.clock, InstanceAddress{}, 5000, 1000);
  e.metrics.watch(nullptr, &gate);
  auto t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_ha_role{role="follower"})"), 1) << t;
  EXPECT_EQ(value(t, R"(ticketd_ha_role{role="leader"})"), 0) << t;
  EXPECT_EQ(value(t, "ticketd_ha_term"), 0) << t;
  EXPECT_EQ(value(t, "ticketd_ha_serving"), 0) << t;
  gate.lead(7, e.clock.monotonic_ms());
  t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_ha_role{role="leader"})"), 1) << t;
  EXPECT_EQ(value(t, R"(ticketd_ha_role{role="follower"})"), 0) << t;
  EXPECT_EQ(value(t, "ticketd_ha_term"), 7) << t;
  EXPECT_EQ(value(t, "ticketd_ha_serving"), 1) << t;
  e.clock.advance(4000);  // TTL minus margin since the renewal: it stops serving on its own
  t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_ha_role{role="leader"})"), 1) << t;
  EXPECT_EQ(value(t, "ticketd_ha_serving"), 0) << t;
  gate.depose();
  EXPECT_EQ(value(e.metrics.serialize(), R"(ticketd_ha_role{role="deposed"})"), 1);
}

TEST(Metrics, SnowflakeWorkerLeaseValidityOnTheClock) {
  HttpEngine e;
  const auto now = e.clock.now_unix_ms();
  auto lease = std::make_shared<ticketd::testing::FakeWorkerLease>(
      WorkerLeaseState{.held = true,
                       .generation = 1,
                       .worker_id = 3,
                       .renewed_at_unix_ms = now,
                       .valid_until_unix_ms = now + 7500,
                       .issue_until_unix_ms = now + 10000});
  SnowflakeOptions o;
  o.name = "Sf";
  o.lease = lease;
  auto g = SnowflakeGenerator::open(o, e.store, e.committer, e.clock);
  ASSERT_TRUE(g);
  ASSERT_TRUE(e.tickets.add_snowflake(*g, e.reads, e.clock));
  auto t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_snowflake_worker_lease_valid{sequence="Sf"})"), 1) << t;
  e.clock.advance(7500);  // valid_until: the generator refuses from this instant
  t = e.metrics.serialize();
  EXPECT_EQ(value(t, R"(ticketd_snowflake_worker_lease_valid{sequence="Sf"})"), 0) << t;
  auto renewed = lease->state();
  renewed.renewed_at_unix_ms = e.clock.now_unix_ms();
  renewed.valid_until_unix_ms = renewed.renewed_at_unix_ms + 7500;
  lease->set(renewed);
  EXPECT_EQ(value(e.metrics.serialize(), R"(ticketd_snowflake_worker_lease_valid{sequence="Sf"})"),
            1);
  renewed.held = false;
  lease->set(renewed);
  EXPECT_EQ(value(e.metrics.serialize(), R"(ticketd_snowflake_worker_lease_valid{sequence="Sf"})"),
            0);
  // A configured worker ID has no lease, so no series.
  EXPECT_FALSE(has(t, R"(ticketd_snowflake_worker_lease_valid{sequence="Tickets64"})"));
}

}  // namespace
}  // namespace ticketd::metrics
