// AuthOutcomes: what both front ends do with a credential check, apart from the sessions.
#include "server/core/auth_outcomes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using testing::FakeClock;

struct Audited {
  std::string event, detail, client;
};

struct Fixture {
  FakeClock clock;
  AuthThrottle throttle{
      clock,
      AuthThrottleOptions{
          .free_failures = 2, .min_delay_ms = 100, .max_delay_ms = 1000, .max_in_flight = 1}};
  std::vector<Audited> audited;
  AuditSink sink() {
    return [this](std::string_view event, std::string_view detail, log::Fields fields) {
      std::string client;
      for (const auto& f : fields) {
        if (f.key() == "client") client = std::string(f.text());
      }
      audited.push_back({std::string(event), std::string(detail), client});
    };
  }
};

const AuthRefusal kLogin{"10.0.0.7",   "app",          "mysql login",
                         "user 'app'", "login_failed", "mysql user 'app' from 10.0.0.7"};

TEST(AuthOutcomes, ARefusalIsAuditedAndItsAnswerWaitsOnceTheFreeFailuresAreUsed) {
  Fixture f;
  const AuthOutcomes auth(&f.throttle, f.sink());
  std::vector<std::int64_t> delays;
  for (int i = 0; i < 4; ++i) {
    AuthThrottle::Slot slot;
    ASSERT_TRUE(auth.admit("10.0.0.7", "app", slot));
    delays.push_back(auth.refused(slot, kLogin, {{"client", "10.0.0.7"}}));
  }
  EXPECT_EQ(delays, (std::vector<std::int64_t>{0, 0, 100, 200}));
  ASSERT_EQ(f.audited.size(), 4u);
  EXPECT_EQ(f.audited[0].event, "login_failed");
  EXPECT_EQ(f.audited[0].detail, "mysql user 'app' from 10.0.0.7");
  EXPECT_EQ(f.audited[0].client, "10.0.0.7");
}

TEST(AuthOutcomes, AThrottledPairsFurtherCheckIsRefusedUncheckedWhileOneIsAnswered) {
  Fixture f;
  const AuthOutcomes auth(&f.throttle, f.sink());
  for (int i = 0; i < 2; ++i) {
    AuthThrottle::Slot slot;
    ASSERT_TRUE(auth.admit("10.0.0.7", "app", slot));
    (void)auth.refused(slot, kLogin, {});
  }
  AuthThrottle::Slot held;  // a failure being answered slowly holds its place
  ASSERT_TRUE(auth.admit("10.0.0.7", "app", held));
  EXPECT_GT(auth.refused(held, kLogin, {}), 0);
  AuthThrottle::Slot second;
  EXPECT_FALSE(auth.admit("10.0.0.7", "app", second));
  held.release();  // its answer is out
  EXPECT_TRUE(auth.admit("10.0.0.7", "app", second));
}

TEST(AuthOutcomes, AFailureFoundWithoutACheckTakesAPlaceAndCounts) {
  Fixture f;
  const AuthOutcomes auth(&f.throttle, f.sink());
  AuthThrottle::Slot slot;  // never admitted (a client that cannot switch plugins)
  EXPECT_EQ(auth.refused(slot, kLogin, {}), 0);
  EXPECT_TRUE(slot.admitted());
  EXPECT_EQ(f.audited.size(), 1u);
}

TEST(AuthOutcomes, WithoutAThrottleEveryCheckIsAdmittedAndAnsweredAtOnce) {
  Fixture f;
  const AuthOutcomes auth(nullptr, f.sink());
  for (int i = 0; i < 10; ++i) {
    AuthThrottle::Slot slot;
    ASSERT_TRUE(auth.admit("10.0.0.7", "app", slot));
    EXPECT_EQ(auth.refused(slot, kLogin, {}), 0);
  }
  EXPECT_EQ(f.audited.size(), 10u);
  const AuthOutcomes silent;
  AuthThrottle::Slot slot;
  EXPECT_TRUE(silent.admit("10.0.0.7", "", slot));
  EXPECT_EQ(silent.refused(slot, kLogin, {}), 0);
}

}  // namespace
}  // namespace ticketd
