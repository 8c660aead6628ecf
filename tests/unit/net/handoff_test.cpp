// net::Handoff: where the answer of an engine call runs, for each way it can arrive.
#include "server/net/handoff.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "tests/support/step_queue.h"

namespace ticketd::net {
namespace {

using ticketd::testing::StepQueue;

struct Seen {
  std::vector<int> values;
  std::vector<std::thread::id> threads;
};

auto recorder(Seen& seen) {
  return [&seen](int v) {
    seen.values.push_back(v);
    seen.threads.push_back(std::this_thread::get_id());
  };
}

TEST(Handoff, AnAnswerOnTheSessionsThreadDuringTheCallRunsAtOnce) {
  StepQueue queue;
  auto h = std::make_shared<Handoff>(queue.post());
  Seen seen;
  h->begin();
  auto cb = h->resume<int>(recorder(seen));
  cb(7);  // the engine answered inline (a cached value)
  ASSERT_EQ(seen.values, std::vector<int>{7});
  h->end();
  EXPECT_EQ(seen.threads[0], std::this_thread::get_id());
  EXPECT_EQ(queue.size(), 0u);
}

TEST(Handoff, AnAnswerFromAnotherThreadDuringTheCallIsKeptAndRunByEnd) {
  StepQueue queue;
  auto h = std::make_shared<Handoff>(queue.post());
  Seen seen;
  h->begin();
  std::thread engine([cb = h->resume<int>(recorder(seen))]() mutable { cb(8); });
  engine.join();
  EXPECT_TRUE(seen.values.empty()) << "ran on the engine's thread";
  h->end();
  ASSERT_EQ(seen.values, std::vector<int>{8});
  EXPECT_EQ(seen.threads[0], std::this_thread::get_id());
  EXPECT_EQ(queue.size(), 0u);
}

TEST(Handoff, AnAnswerFromAnotherThreadAfterTheCallIsPostedToTheSession) {
  StepQueue queue;
  auto h = std::make_shared<Handoff>(queue.post());
  Seen seen;
  h->begin();
  auto cb = h->resume<int>(recorder(seen));
  h->end();
  std::thread engine([&cb] { cb(9); });
  engine.join();
  EXPECT_TRUE(seen.values.empty()) << "ran on the engine's thread";
  ASSERT_TRUE(queue.run_one());
  ASSERT_EQ(seen.values, std::vector<int>{9});
  EXPECT_EQ(seen.threads[0], std::this_thread::get_id());
}

TEST(Handoff, AStepRunOnTheSessionTakesItsOwnInlineAnswersAtOnce) {
  StepQueue queue;
  auto h = std::make_shared<Handoff>(queue.post());
  Seen seen;
  h->begin();
  auto first = h->resume<int>([&](int v) {
    seen.values.push_back(v);
    // The resumed step makes the next engine call, which answers inline: no second post.
    h->resume<int>(recorder(seen))(v + 1);
  });
  h->end();
  std::thread engine([&first] { first(1); });
  engine.join();
  ASSERT_TRUE(queue.run_one());
  EXPECT_EQ(seen.values, (std::vector<int>{1, 2}));
  EXPECT_EQ(queue.size(), 0u);
}

TEST(Handoff, AFanOutKeepsTheFirstAnswerAndPostsTheOthers) {
  StepQueue queue;
  auto h = std::make_shared<Handoff>(queue.post());
  Seen seen;
  h->begin();
  auto a = h->resume<int>(recorder(seen));
  auto b = h->resume<int>(recorder(seen));
  std::thread engine([&] {
    a(1);
    b(2);
  });
  engine.join();
  EXPECT_EQ(queue.size(), 1u);
  h->end();
  ASSERT_EQ(seen.values, std::vector<int>{1});
  ASSERT_TRUE(queue.run_one());
  EXPECT_EQ(seen.values, (std::vector<int>{1, 2}));
  for (auto t : seen.threads) EXPECT_EQ(t, std::this_thread::get_id());
}

TEST(Handoff, WithoutAnExecutorALateAnswerRunsWhereItArrives) {
  auto h = std::make_shared<Handoff>();
  Seen seen;
  h->begin();
  auto cb = h->resume<int>(recorder(seen));
  h->end();
  std::thread::id engine_id;
  std::thread engine([&] {
    engine_id = std::this_thread::get_id();
    cb(3);
  });
  engine.join();
  ASSERT_EQ(seen.values, std::vector<int>{3});
  EXPECT_EQ(seen.threads[0], engine_id);
}

TEST(Handoff, AnAnswerAfterTheSessionEndedIsHarmless) {
  StepQueue queue;
  std::function<void(int)> cb;
  int ran = 0;
  {
    auto h = std::make_shared<Handoff>(queue.post());
    h->begin();
    cb = h->resume<int>([&ran](int) { ++ran; });
    h->end();
  }  // the session let go of its handoff; the engine still holds the callback
  std::thread engine([&cb] { cb(4); });
  engine.join();
  ASSERT_TRUE(queue.run_one());
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace ticketd::net
