#include "server/core/timer_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;

constexpr std::int64_t kT0 = FakeClock::kDefaultStartUnixMs;

TEST(TimerQueue, OnAFakeClockRunsNothingUntilAStepReachesItsTime) {
  FakeClock clock;
  TimerQueue scheduler(clock);
  std::vector<std::string> ran;
  scheduler.after(milliseconds(3), [&] { ran.push_back("a"); });
  scheduler.at(kT0 + 5, [&] { ran.push_back("b"); });
  clock.advance(2);
  EXPECT_TRUE(ran.empty());
  clock.advance(1);  // kT0 + 3: "a" runs inside this step
  EXPECT_EQ(ran, (std::vector<std::string>{"a"}));
  clock.advance(1);
  EXPECT_EQ(ran, (std::vector<std::string>{"a"}));
  clock.advance_to(kT0 + 5);
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b"}));
}

TEST(TimerQueue, OneStepPastSeveralTimesRunsThemInTimeOrderThenSchedulingOrder) {
  FakeClock clock;
  TimerQueue scheduler(clock);
  std::vector<std::string> ran;
  scheduler.after(milliseconds(7), [&] { ran.push_back("7"); });
  scheduler.after(milliseconds(2), [&] { ran.push_back("2a"); });
  scheduler.at(kT0 + 2, [&] { ran.push_back("2b"); });
  scheduler.after(milliseconds(1), [&] { ran.push_back("1"); });
  clock.advance(10);
  EXPECT_EQ(ran, (std::vector<std::string>{"1", "2a", "2b", "7"}));
}

TEST(TimerQueue, AFakeClockSteppedBackDoesNotFireAndTheDelayCountsFromTheCall) {
  FakeClock clock;
  TimerQueue scheduler(clock);
  int ran = 0;
  scheduler.after(milliseconds(2), [&] { ++ran; });  // due at kT0 + 2
  clock.advance(-5);
  clock.advance(6);  // kT0 + 1
  EXPECT_EQ(ran, 0);
  clock.set(kT0 + 2);
  EXPECT_EQ(ran, 1);
}

TEST(TimerQueue, ATimeAlreadyReachedRunsAtTheNextStepNotOnTheCallersThread) {
  FakeClock clock;
  TimerQueue scheduler(clock);
  int ran = 0;
  scheduler.after(milliseconds(0), [&] { ++ran; });
  scheduler.at(kT0 - 100, [&] { ++ran; });
  EXPECT_EQ(ran, 0);
  clock.advance(0);
  EXPECT_EQ(ran, 2);
}

TEST(TimerQueue, AFunctionThatReschedulesItselfRunsOncePerStep) {
  FakeClock clock;
  TimerQueue scheduler(clock);
  std::vector<std::int64_t> ran_at;
  std::function<void()> again = [&] {
    ran_at.push_back(clock.now_unix_ms() - kT0);
    if (ran_at.size() < 3) scheduler.after(milliseconds(0), again);
  };
  scheduler.after(milliseconds(1), again);
  clock.advance(1);
  clock.advance(0);
  clock.advance(4);
  clock.advance(1);
  EXPECT_EQ(ran_at, (std::vector<std::int64_t>{1, 1, 5}));
}

TEST(TimerQueue, StopRunsWhatIsPendingInTimeOrderAndLaterCallsAtOnce) {
  FakeClock clock;
  TimerQueue scheduler(clock);
  std::vector<std::string> ran;
  scheduler.after(milliseconds(50), [&] { ran.push_back("50"); });
  scheduler.after(milliseconds(10), [&] { ran.push_back("10"); });
  scheduler.stop();
  EXPECT_EQ(ran, (std::vector<std::string>{"10", "50"}));
  scheduler.after(milliseconds(1000), [&] { ran.push_back("late"); });
  EXPECT_EQ(ran, (std::vector<std::string>{"10", "50", "late"}));
  clock.advance(2000);  // no longer observed: nothing runs twice
  EXPECT_EQ(ran.size(), 3u);
}

TEST(TimerQueue, SchedulersOnOneFakeClockFireIndependently) {
  FakeClock clock;
  std::vector<std::string> ran;
  TimerQueue a(clock);
  {
    TimerQueue b(clock);
    b.after(milliseconds(1), [&] { ran.push_back("b1"); });
    a.after(milliseconds(2), [&] { ran.push_back("a2"); });
    clock.advance(1);
    EXPECT_EQ(ran, (std::vector<std::string>{"b1"}));
    b.after(milliseconds(5), [&] { ran.push_back("b6"); });
  }  // b's destructor ran "b6"; the clock must not call b again
  EXPECT_EQ(ran, (std::vector<std::string>{"b1", "b6"}));
  clock.advance(10);
  EXPECT_EQ(ran, (std::vector<std::string>{"b1", "b6", "a2"}));
}

TEST(TimerQueue, OnTheSystemClockRunsOnItsOwnThread) {
  TimerQueue scheduler;  // SystemClock: waits out real time
  std::promise<std::thread::id> ran_on;
  scheduler.after(milliseconds(0), [&] { ran_on.set_value(std::this_thread::get_id()); });
  auto id = ran_on.get_future();
  ASSERT_EQ(id.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_NE(id.get(), std::this_thread::get_id());
}

TEST(TimerQueue, OnTheSystemClockStopRunsPendingFunctionsAtOnceInTimeOrder) {
  const SystemClock clock;
  TimerQueue scheduler(clock);
  std::vector<int> ran;  // written by the scheduler's thread, read after stop() joined it
  scheduler.after(std::chrono::hours(2), [&] { ran.push_back(2); });
  scheduler.at(clock.now_unix_ms() + 3'600'000, [&] { ran.push_back(1); });
  scheduler.stop();
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace ticketd
