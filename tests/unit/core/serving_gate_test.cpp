#include "server/core/serving_gate.h"

#include <gtest/gtest.h>

#include "server/core/ticket_errc.h"
#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using testing::FakeClock;

constexpr std::int64_t kTtlMs = 2000;
constexpr std::int64_t kMarginMs = 500;

InstanceAddress self() { return {"10.0.0.1:3306", "10.0.0.1:8080"}; }

TEST(ServingGate, StandaloneAlwaysServes) {
  FakeClock clock;
  ServingGate gate(clock);
  EXPECT_TRUE(gate.serving());
  EXPECT_EQ(gate.serving_term(), 0);  // no election, no term
  clock.advance(1'000'000);
  EXPECT_TRUE(gate.serving());
}

TEST(ServingGate, FollowerNeverServesAndNamesTheLeader) {
  FakeClock clock;
  ServingGate gate(clock, self(), kTtlMs, kMarginMs);
  EXPECT_FALSE(gate.serving());
  EXPECT_NE(gate.not_serving_error(false).message.find("no leader elected yet"), std::string::npos);
  gate.follow({"10.0.0.2:3306", "10.0.0.2:8080"});
  EXPECT_FALSE(gate.serving());
  const auto mysql = gate.not_serving_error(false);
  EXPECT_EQ(mysql.code, TicketErrc::kNotLeader);
  EXPECT_NE(mysql.message.find("--read-only"), std::string::npos);
  EXPECT_NE(mysql.message.find("leader is at 10.0.0.2:3306"), std::string::npos);
  EXPECT_NE(gate.not_serving_error(true).message.find("leader is at 10.0.0.2:8080"),
            std::string::npos);
  EXPECT_EQ(gate.view().role, Role::kFollower);
  EXPECT_EQ(gate.view().revision, 0);  // the leader's term not known yet
  gate.follow({"10.0.0.2:3306", "10.0.0.2:8080"}, 42);
  EXPECT_EQ(gate.view().revision, 42);  // reported as the cluster's term
  EXPECT_FALSE(gate.serving());
}

TEST(ServingGate, LeaderStopsServingWhenTheLastRenewalIsOlderThanTtlMinusMargin) {
  FakeClock clock;
  ServingGate gate(clock, self(), kTtlMs, kMarginMs);
  EXPECT_EQ(gate.serving_term(), std::nullopt);
  gate.lead(42, clock.monotonic_ms());
  EXPECT_TRUE(gate.serving());
  EXPECT_EQ(gate.serving_term(), 42);
  EXPECT_EQ(gate.view().revision, 42);
  EXPECT_EQ(gate.view().leader, self());
  clock.advance(kTtlMs - kMarginMs - 1);
  EXPECT_TRUE(gate.serving());
  clock.advance(1);
  EXPECT_FALSE(gate.serving());  // stale: etcd may expire the lease soon
  EXPECT_EQ(gate.serving_term(), std::nullopt);
  EXPECT_NE(gate.not_serving_error(false).message.find("not renewed in time"), std::string::npos);
  gate.renewed(clock.monotonic_ms());
  EXPECT_TRUE(gate.serving());  // a renewal proves the lease alive: serving resumes
}

// The nemesis suite steps a leader's wall clock by 30 s: a step back must not let it serve past
// its lease (etcd's TTL runs on etcd's clock), nor a step forward stop it early.
TEST(ServingGate, AWallClockStepNeitherStretchesNorCutsTheLease) {
  FakeClock clock;
  ServingGate gate(clock, self(), kTtlMs, kMarginMs);
  gate.lead(42, clock.monotonic_ms());
  clock.jump(30'000);
  EXPECT_TRUE(gate.serving());
  clock.jump(-60'000);
  clock.advance(kTtlMs - kMarginMs - 1);
  EXPECT_TRUE(gate.serving());
  clock.advance(1);
  EXPECT_FALSE(gate.serving());
}

TEST(ServingGate, AnOlderRenewalNeverMovesFreshnessBack) {
  FakeClock clock;
  ServingGate gate(clock, self(), kTtlMs, kMarginMs);
  gate.lead(7, clock.monotonic_ms());
  gate.renewed(clock.monotonic_ms() - 10'000);
  EXPECT_TRUE(gate.serving());
}

TEST(ServingGate, DeposedNeverServesAgain) {
  FakeClock clock;
  ServingGate gate(clock, self(), kTtlMs, kMarginMs);
  gate.lead(7, clock.monotonic_ms());
  gate.depose();
  EXPECT_FALSE(gate.serving());
  gate.lead(9, clock.monotonic_ms());
  gate.renewed(clock.monotonic_ms());
  gate.follow({"a:1", "a:2"});
  EXPECT_FALSE(gate.serving());
  EXPECT_EQ(gate.view().role, Role::kDeposed);
}

}  // namespace
}  // namespace ticketd
