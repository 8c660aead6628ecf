// net::Completion: where the answer of an engine call runs, for each way it can arrive.
#include "server/net/completion.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <thread>
#include <vector>

#include "server/net/awaited_completion.h"
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

TEST(Completion, AnAnswerOnTheSessionsThreadDuringTheCallRunsAtOnce) {
  StepQueue queue;
  auto h = std::make_shared<Completion>(queue.post());
  Seen seen;
  h->begin();
  auto cb = h->resume<int>(recorder(seen));
  cb(7);  // the engine answered inline (a cached value)
  ASSERT_EQ(seen.values, std::vector<int>{7});
  h->end();
  EXPECT_EQ(seen.threads[0], std::this_thread::get_id());
  EXPECT_EQ(queue.size(), 0u);
}

TEST(Completion, AnAnswerFromAnotherThreadDuringTheCallIsKeptAndRunByEnd) {
  StepQueue queue;
  auto h = std::make_shared<Completion>(queue.post());
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

TEST(Completion, AnAnswerFromAnotherThreadAfterTheCallIsPostedToTheSession) {
  StepQueue queue;
  auto h = std::make_shared<Completion>(queue.post());
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

TEST(Completion, AStepRunOnTheSessionTakesItsOwnInlineAnswersAtOnce) {
  StepQueue queue;
  auto h = std::make_shared<Completion>(queue.post());
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

TEST(Completion, AFanOutKeepsTheFirstAnswerAndPostsTheOthers) {
  StepQueue queue;
  auto h = std::make_shared<Completion>(queue.post());
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

TEST(Completion, WithoutAnExecutorALateAnswerRunsWhereItArrives) {
  auto h = std::make_shared<Completion>();
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

TEST(Completion, AnAnswerAfterTheSessionEndedIsHarmless) {
  StepQueue queue;
  std::function<void(int)> cb;
  int ran = 0;
  {
    auto h = std::make_shared<Completion>(queue.post());
    h->begin();
    cb = h->resume<int>([&ran](int) { ++ran; });
    h->end();
  }  // the session let go of its completion; the engine still holds the callback
  std::thread engine([&cb] { cb(4); });
  engine.join();
  ASSERT_TRUE(queue.run_one());
  EXPECT_EQ(ran, 1);
}

// A session waiting for one request whose engine answer (through resume(), or straight to the
// completer) arrives later from another thread; `got` is what its wait returned.
struct AwaitingSession {
  asio::io_context ioc;
  std::shared_ptr<AwaitedCompletion<int>> completion =
      std::make_shared<AwaitedCompletion<int>>(ioc.get_executor());
  std::function<void(int)> engine_answer;  // resumes on the session, answers v + 1
  std::function<void(int)> completer;      // the request's completer itself
  int got = -1;

  AwaitingSession() {
    asio::co_spawn(
        ioc,
        [this]() -> asio::awaitable<void> {
          auto done = completion->start();
          completer = done;
          completion->begin();
          engine_answer = completion->resume<int>([done](int v) mutable { done(v + 1); });
          completion->end();
          got = co_await completion->wait();
        },
        asio::detached);
    ioc.poll();  // up to the wait
  }
};

TEST(AwaitedCompletion, AnAnswerBeforeTheWaitIsReturnedWithoutSuspending) {
  asio::io_context ioc;
  auto completion = std::make_shared<AwaitedCompletion<int>>(ioc.get_executor());
  int got = -1;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        auto done = completion->start();
        completion->begin();
        completion->resume<int>([done](int v) mutable { done(v); })(7);  // inline
        completion->end();
        got = co_await completion->wait();
      },
      asio::detached);
  EXPECT_EQ(ioc.run_one(), 1u);  // the coroutine's start, which runs it to its end
  EXPECT_EQ(got, 7);
}

TEST(AwaitedCompletion, ALateEngineAnswerWakesTheWaitFromItsOwnStep) {
  AwaitingSession session;
  ASSERT_EQ(session.got, -1) << "the wait returned before the answer";
  std::thread engine([&session] { session.engine_answer(41); });
  engine.join();
  // One step builds the answer on the session and cancels the session's timer; the timer's
  // handler resumes the wait. No second post for the wake.
  EXPECT_EQ(session.ioc.poll_one(), 1u);
  EXPECT_EQ(session.got, -1);
  EXPECT_EQ(session.ioc.poll_one(), 1u);
  EXPECT_EQ(session.got, 42);
  EXPECT_EQ(session.ioc.poll(), 0u);
}

TEST(AwaitedCompletion, ACompleterCalledOnAnotherThreadPostsTheWake) {
  AwaitingSession session;
  std::thread engine([&session] { session.completer(5); });
  engine.join();
  EXPECT_EQ(session.ioc.poll_one(), 1u);  // the posted cancel
  EXPECT_EQ(session.got, -1);
  EXPECT_EQ(session.ioc.poll_one(), 1u);  // the timer's handler resumes the wait
  EXPECT_EQ(session.got, 5);
}

TEST(CallLoop, AnInlineAnswerLetsTheLoopGoOnAndALateOneContinuesTheRun) {
  CallLoop loop;
  loop.calling();
  EXPECT_TRUE(loop.answered_inline());  // in the call: the loop goes on
  EXPECT_FALSE(loop.answers_later());

  loop.calling();
  EXPECT_TRUE(loop.answers_later());     // the call returned first: the loop returns
  EXPECT_FALSE(loop.answered_inline());  // so the answer continues the run
}

}  // namespace
}  // namespace ticketd::net
