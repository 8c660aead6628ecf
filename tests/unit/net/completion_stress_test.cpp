// The front ends' ways to wait for the engine under real threads (issue 28.2): net::Handoff
// (how a MySQL statement's engine answers get back to its session) and net::PendingResult (how
// a session coroutine awaits one call). Engine answers arrive inline, from an engine thread
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

#include "server/net/handoff.h"
#include "server/net/pending_result.h"

namespace ticketd::net {
namespace {

using Strand = asio::strand<asio::io_context::executor_type>;
constexpr auto kDeadline = std::chrono::seconds(120);

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

// One MySQL-like session: `calls` engine calls in turn through a Handoff, each answered by
// `arrival`; at `disconnect_at` it ends with that call's answer still in flight.
class HandoffSession : public std::enable_shared_from_this<HandoffSession> {
 public:
  HandoffSession(asio::io_context& ioc, FakeEngine& engine, Outcome& outcome, unsigned seed,
                 int calls, int disconnect_at)
      : strand_(asio::make_strand(ioc)),
        engine_(engine),
        outcome_(outcome),
        rng_(seed),
        calls_(calls),
        disconnect_at_(disconnect_at) {
    handoff_ = std::make_shared<Handoff>(
        [strand = strand_](Handoff::Step step) { asio::post(strand, std::move(step)); });
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
    handoff_->begin();
    // The answer holds the session weakly, as a connection's callbacks outlive nothing.
    auto answer = handoff_->resume<int>([weak = weak_from_this()](int v) {
      if (auto self = weak.lock()) self->answered(v);
    });
    switch (arrival) {
      case Arrival::kInline:
        answer(value);
        break;
      case Arrival::kDuring: {
        auto ran = std::make_shared<std::atomic<bool>>(false);
        engine_.submit([answer, value, ran]() mutable {
          answer(value);
          ran->store(true, std::memory_order_release);
        });
        await_flag(*ran);
        break;
      }
      case Arrival::kRacing:
        engine_.submit([answer, value]() mutable { answer(value); });
        break;
      case Arrival::kAfter:
        break;
    }
    handoff_->end();
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
  std::shared_ptr<Handoff> handoff_;
  std::shared_ptr<HandoffSession> self_;
  int next_ = 0;  // the value the next answer must carry
  bool gone_ = false;
};

TEST(CompletionStress, HandoffAnswersRunOnceInOrderOnTheirSessionWhereverTheyArrive) {
  constexpr int kSessions = 8;
  constexpr int kCalls = 3000;
  asio::io_context ioc;
  auto engine = std::make_unique<FakeEngine>(2);
  Outcome outcome;
  for (int s = 0; s < kSessions; ++s) {
    // Every other session disconnects halfway, with an answer in flight.
    const int disconnect_at = s % 2 == 0 ? kCalls / 2 : -1;
    std::make_shared<HandoffSession>(ioc, *engine, outcome, 1000u + static_cast<unsigned>(s),
                                     kCalls, disconnect_at)
        ->start();
  }
  run_until_finished(ioc, engine, outcome, kSessions);
  EXPECT_TRUE(outcome.errors.empty()) << outcome.errors.front();
}

// One HTTP-like session coroutine: `calls` calls in turn, each awaited through one
// PendingResult, the completer called inline, by an engine thread before the wait, or at any
// time.
asio::awaitable<void> pending_session(FakeEngine& engine, Outcome& outcome, unsigned seed,
                                      int calls) {
  auto ex = co_await asio::this_coro::executor;
  auto pending = std::make_shared<PendingResult<int>>(ex);
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

TEST(CompletionStress, APendingResultReturnsEachAnswerOnceInOrderWhenItArrives) {
  constexpr int kSessions = 8;
  constexpr int kCalls = 3000;
  asio::io_context ioc;
  auto engine = std::make_unique<FakeEngine>(2);
  Outcome outcome;
  for (int s = 0; s < kSessions; ++s) {
    asio::co_spawn(asio::make_strand(ioc),
                   pending_session(*engine, outcome, 2000u + static_cast<unsigned>(s), kCalls),
                   asio::detached);
  }
  run_until_finished(ioc, engine, outcome, kSessions);
  EXPECT_TRUE(outcome.errors.empty()) << outcome.errors.front();
}

}  // namespace
}  // namespace ticketd::net
