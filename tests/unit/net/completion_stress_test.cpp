// The front ends' one way to wait for the engine under real threads (issue 28.2):
// net::Completion (how a statement's or a route's engine answers get back to its session) and
// net::AwaitedCompletion (how the session coroutine awaits one request's answer), apart and
// together as a session uses them. Engine answers arrive inline, from an engine thread
// during the call, after it, or racing with its end, on several sessions at once; some
// sessions disconnect with an answer in flight. Every answer must run exactly once, in order,
// on its session's strand; an answer after its session is gone must be harmless. Under ASan and
// UBSan (scripts/test's second pass) a lifetime error fails the run. Nothing is timed: the
// deadlines only turn a hang into a failure.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/net/awaited_completion.h"
#include "server/net/completion.h"

namespace ticketd::net {
namespace {

using Strand = asio::strand<asio::io_context::executor_type>;
constexpr auto kDeadline = std::chrono::seconds(120);
constexpr int kSessions = 8;
constexpr int kCalls = 3000;

// The engine: threads that run the answers given to them, in no order across threads.
class FakeEngine {
 public:
  explicit FakeEngine(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  // Runs what was given before it returns.
  ~FakeEngine() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void()> answer) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(answer));
    }
    ready_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> answer;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        answer = std::move(queue_.front());
        queue_.pop_front();
      }
      answer();
    }
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// What the sessions found wrong, and how many have finished.
struct Outcome {
  std::mutex mutex;
  std::vector<std::string> errors;
  std::atomic<int> finished{0};
  void error(std::string e) {
    std::lock_guard lock(mutex);
    if (errors.size() < 20) errors.push_back(std::move(e));
  }
};

// Until `flag` is set (an engine thread ran the answer), or fails the test at the deadline.
void await_flag(const std::atomic<bool>& flag) {
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (!flag.load(std::memory_order_acquire)) {
    ASSERT_LT(std::chrono::steady_clock::now(), end) << "the engine never answered";
    std::this_thread::yield();
  }
}

// Runs `ioc` on two threads until every session finished and every answer ran.
void run_until_finished(asio::io_context& ioc, std::unique_ptr<FakeEngine>& engine,
                        Outcome& outcome, int sessions) {
  auto work = asio::make_work_guard(ioc);
  std::vector<std::thread> io;
  for (int i = 0; i < 2; ++i) io.emplace_back([&ioc] { ioc.run(); });
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (outcome.finished.load() < sessions && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  engine.reset();  // every answer given to it has run, so every late step is posted
  work.reset();    // the io threads return once those steps ran
  for (auto& t : io) t.join();
  EXPECT_EQ(outcome.finished.load(), sessions) << "sessions still waiting at the deadline";
}

enum class Arrival { kInline, kDuring, kRacing, kAfter };

// Answers an engine call as `arrival` says while the call is in progress: inline, from an engine
// thread while the session waits for it, or from an engine thread racing the call's end.
// kAfter: nothing yet; the caller submits the answer after end().
template <class Answer>
void answer_in_call(FakeEngine& engine, Arrival arrival, Answer answer, int value) {
  switch (arrival) {
    case Arrival::kInline:
      answer(value);
      break;
    case Arrival::kDuring: {
      auto ran = std::make_shared<std::atomic<bool>>(false);
      engine.submit([answer, value, ran]() mutable {
        answer(value);
        ran->store(true, std::memory_order_release);
      });
      await_flag(*ran);
      break;
    }
    case Arrival::kRacing:
      engine.submit([answer, value]() mutable { answer(value); });
      break;
    case Arrival::kAfter:
      break;
  }
}

// One MySQL-like session: `calls` engine calls in turn through a Completion, each answered by
// `arrival`; at `disconnect_at` it ends with that call's answer still in flight.
class CallbackSession : public std::enable_shared_from_this<CallbackSession> {
 public:
  CallbackSession(asio::io_context& ioc, FakeEngine& engine, Outcome& outcome, unsigned seed,
                  int calls, int disconnect_at)
      : strand_(asio::make_strand(ioc)),
        engine_(engine),
        outcome_(outcome),
        rng_(seed),
        calls_(calls),
        disconnect_at_(disconnect_at) {
    completion_ = std::make_shared<Completion>(
        [strand = strand_](Completion::Step step) { asio::post(strand, std::move(step)); });
  }

  void start() {
    self_ = shared_from_this();
    asio::post(strand_, [self = self_] { self->call(); });
  }

 private:
  // A step on the strand: one engine call.
  void call() {
    if (gone_) return;
    if (next_ == calls_) return finish();
    const int value = next_;
    const auto arrival = static_cast<Arrival>(rng_() % 4);
    completion_->begin();
    // The answer holds the session weakly, as a connection's callbacks outlive nothing.
    auto answer = completion_->resume<int>([weak = weak_from_this()](int v) {
      if (auto self = weak.lock()) self->answered(v);
    });
    answer_in_call(engine_, arrival, answer, value);
    completion_->end();
    if (arrival == Arrival::kAfter) {
      engine_.submit([answer = std::move(answer), value]() mutable { answer(value); });
    }
    if (disconnect_at_ >= 0 && value >= disconnect_at_ &&
        (arrival == Arrival::kRacing || arrival == Arrival::kAfter)) {
      // The client went away with this answer in flight: it must find nothing to resume.
      finish();
    }
  }

  // The engine's answer, wherever it arrived: must run on the strand, in order, once.
  void answered(int v) {
    if (gone_) return;
    if (!strand_.running_in_this_thread()) outcome_.error("an answer ran off the strand");
    if (v != next_) {
      outcome_.error("answer " + std::to_string(v) + " where " + std::to_string(next_) +
                     " was due");
    }
    ++next_;
    asio::post(strand_, [self = shared_from_this()] { self->call(); });
  }

  void finish() {
    if (gone_) return;
    gone_ = true;
    ++outcome_.finished;
    self_.reset();  // destroyed once the steps that hold it returned
  }

  Strand strand_;
  FakeEngine& engine_;
  Outcome& outcome_;
  std::mt19937 rng_;
  const int calls_;
  const int disconnect_at_;
  std::shared_ptr<Completion> completion_;
  std::shared_ptr<CallbackSession> self_;
  int next_ = 0;  // the value the next answer must carry
  bool gone_ = false;
};

TEST(CompletionStress, EngineAnswersRunOnceInOrderOnTheirSessionWhereverTheyArrive) {
  asio::io_context ioc;
  auto engine = std::make_unique<FakeEngine>(2);
  Outcome outcome;
  for (int s = 0; s < kSessions; ++s) {
    // Every other session disconnects halfway, with an answer in flight.
    const int disconnect_at = s % 2 == 0 ? kCalls / 2 : -1;
    std::make_shared<CallbackSession>(ioc, *engine, outcome, 1000u + static_cast<unsigned>(s),
                                      kCalls, disconnect_at)
        ->start();
  }
  run_until_finished(ioc, engine, outcome, kSessions);
  EXPECT_TRUE(outcome.errors.empty()) << outcome.errors.front();
}

// Runs kSessions coroutines, each `session(strand, engine, outcome, seed)` on a strand of its
// own, until every one finished.
template <class Session>
void run_session_coroutines(unsigned seed_base, Session session) {
  asio::io_context ioc;
  auto engine = std::make_unique<FakeEngine>(2);
  Outcome outcome;
  for (int s = 0; s < kSessions; ++s) {
    Strand strand = asio::make_strand(ioc);
    asio::co_spawn(strand, session(strand, *engine, outcome, seed_base + static_cast<unsigned>(s)),
                   asio::detached);
  }
  run_until_finished(ioc, engine, outcome, kSessions);
  EXPECT_TRUE(outcome.errors.empty()) << outcome.errors.front();
}

// A session coroutine: `calls` requests in turn, each awaited through one AwaitedCompletion
// whose completer is called directly, inline, by an engine thread before the wait, or at any
// time (an answer that does not come through resume()).
asio::awaitable<void> pending_session(FakeEngine& engine, Outcome& outcome, unsigned seed,
                                      int calls) {
  auto ex = co_await asio::this_coro::executor;
  auto pending = std::make_shared<AwaitedCompletion<int>>(ex);
  std::mt19937 rng(seed);
  for (int i = 0; i < calls; ++i) {
    auto complete = pending->start();
    switch (rng() % 3) {
      case 0:
        complete(i);
        break;
      case 1: {
        auto ran = std::make_shared<std::atomic<bool>>(false);
        engine.submit([complete, i, ran]() mutable {
          complete(i);
          ran->store(true, std::memory_order_release);
        });
        await_flag(*ran);
        break;
      }
      default:
        engine.submit([complete, i]() mutable { complete(i); });
        break;
    }
    const int v = co_await pending->wait();
    if (v != i) outcome.error("waited for " + std::to_string(i) + ", got " + std::to_string(v));
  }
  ++outcome.finished;
}

TEST(CompletionStress, AnAwaitedAnswerReturnsOnceInOrderWhenItArrives) {
  run_session_coroutines(2000, [](Strand, FakeEngine& engine, Outcome& outcome, unsigned seed) {
    return pending_session(engine, outcome, seed, kCalls);
  });
}

// A session coroutine as the front ends run one: each request is start(), then begin(), an
// engine call whose answer comes through resume() (inline, from an engine thread during the
// call, racing its end, or after it) and builds the response on the session, end(), wait().
// A late answer's step runs on the strand and wakes the wait from there.
asio::awaitable<void> request_session(Strand strand, FakeEngine& engine, Outcome& outcome,
                                      unsigned seed, int calls) {
  auto completion = std::make_shared<AwaitedCompletion<int>>(strand);
  std::mt19937 rng(seed);
  for (int i = 0; i < calls; ++i) {
    auto done = completion->start();
    const auto arrival = static_cast<Arrival>(rng() % 4);
    completion->begin();
    auto answer = completion->resume<int>([done, &outcome, strand](int v) mutable {
      if (!strand.running_in_this_thread()) outcome.error("a response was built off the strand");
      done(v * 2);  // the response, built from the engine's answer
    });
    answer_in_call(engine, arrival, answer, i);
    completion->end();
    if (arrival == Arrival::kAfter) {
      engine.submit([answer = std::move(answer), i]() mutable { answer(i); });
    }
    const int v = co_await completion->wait();
    if (!strand.running_in_this_thread()) outcome.error("a wait resumed off the strand");
    if (v != i * 2) {
      outcome.error("request " + std::to_string(i) + " answered " + std::to_string(v));
    }
  }
  ++outcome.finished;
}

TEST(CompletionStress, ASessionsRequestsAreAnsweredOnceInOrderOnItsStrand) {
  run_session_coroutines(3000,
                         [](Strand strand, FakeEngine& engine, Outcome& outcome, unsigned seed) {
                           return request_session(strand, engine, outcome, seed, kCalls);
                         });
}

}  // namespace
}  // namespace ticketd::net
