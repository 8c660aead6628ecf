// HTTP responses whose engine call answers on the committer thread are built on the session's
// thread (net::Completion): the JSON, the metrics and the hand-over to the session all run there.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>
#include <thread>

#include "tests/support/step_queue.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::http::testing {
namespace {

using beast::http::status;
using beast::http::verb;

// Runs one request as HttpSession does and the posted steps on this thread until it answered.
std::optional<Response> call_on_session(HttpEngine& e, ticketd::testing::StepQueue& queue,
                                        const std::shared_ptr<net::Completion>& handoff,
                                        Request req, std::thread::id& answered_on) {
  std::optional<Response> answer;
  handle_request(
      e.deps, std::move(req),
      [&](Response r) {
        answer = std::move(r);
        answered_on = std::this_thread::get_id();
      },
      handoff);
  while (!answer) {
    if (!queue.run_one()) return std::nullopt;
  }
  return answer;
}

TEST(HttpEngineHandoff, ResponsesToCommittedCallsAreBuiltOnTheSessionsThread) {
  HttpEngine e;
  // cache 1: every ticket is a commit, answered by the committer thread.
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "Late", .cache = 1}));
  ticketd::testing::StepQueue queue;
  auto handoff = std::make_shared<net::Completion>(queue.post());
  const auto me = std::this_thread::get_id();
  for (int i = 1; i <= 10; ++i) {
    std::thread::id where;
    auto res = call_on_session(e, queue, handoff,
                               make_request(verb::post, "/v1/sequences/Late/next"), where);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->result(), status::ok);
    EXPECT_NE(res->body().find("\"ids\":[\"" + std::to_string(i) + "\"]"), std::string::npos)
        << res->body();
    EXPECT_EQ(where, me);
  }
  std::thread::id where;
  auto res = call_on_session(
      e, queue, handoff,
      make_request(verb::post, "/v1/sequences/Late/blocks", R"({"size":1000,"holder":"svc"})"),
      where);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), status::created) << res->body();
  EXPECT_EQ(where, me);
  res = call_on_session(e, queue, handoff, make_request(verb::get, "/v1/sequences/Late/blocks"),
                        where);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), status::ok) << res->body();
  EXPECT_EQ(where, me);
}

TEST(HttpEngineHandoff, AnAnswerAfterTheHandlerReturnedIsPostedToTheSession) {
  HttpEngine e;
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "Late", .cache = 1}));
  const int commits_before = static_cast<int>(e.store.commit_count());
  ticketd::testing::StepQueue queue;
  auto handoff = std::make_shared<net::Completion>(queue.post());
  std::optional<Response> answer;
  std::thread::id where;
  e.store.hold();  // the committer blocks in the store: the answer comes after the call returned
  handle_request(
      e.deps, make_request(verb::post, "/v1/sequences/Late/next"),
      [&](Response r) {
        answer = std::move(r);
        where = std::this_thread::get_id();
      },
      handoff);
  e.store.wait_entered(commits_before + 1);
  EXPECT_FALSE(answer);
  EXPECT_EQ(queue.size(), 0u);
  e.store.release();
  // The committer's answer is a step posted to the session, not a response built over there.
  ASSERT_TRUE(queue.run_one());
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result(), status::ok) << answer->body();
  EXPECT_EQ(where, std::this_thread::get_id());
}

// A `next` answer is written into the session's body buffer (Reply::json_into), cached or
// committed: the session gives it back after the write, so a kept-alive connection answers
// without allocating a body.
TEST(HttpEngineHandoff, NextAnswersAreWrittenIntoTheSessionsBodyBuffer) {
  HttpEngine e;
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "Cached", .cache = 1000}));
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "Late", .cache = 1}));
  ticketd::testing::StepQueue queue;
  auto handoff = std::make_shared<net::Completion>(queue.post());
  for (const std::string name : {"Cached", "Late"}) {
    for (int i = 1; i <= 3; ++i) {
      std::string buffer;
      buffer.reserve(256);
      buffer = "stale bytes of the previous answer";
      const char* const storage = buffer.data();
      std::optional<Response> answer;
      handle_request(
          e.deps, make_request(verb::post, "/v1/sequences/" + name + "/next"),
          [&](Response r) { answer = std::move(r); }, handoff, &buffer);
      while (!answer && queue.run_one()) {
      }
      ASSERT_TRUE(answer) << name;
      EXPECT_EQ(answer->result(), status::ok) << answer->body();
      EXPECT_EQ(answer->body(),
                R"({"sequence":")" + name + R"(","ids":[")" + std::to_string(i) + R"("]})");
      EXPECT_EQ(answer->body().data(), storage) << name << ": the answer has a body of its own";
    }
  }
}

// Without a handoff (no session strand), a late answer may be built on the committer thread:
// the caller's buffer is never touched there.
TEST(HttpEngineHandoff, WithoutAHandoffTheBodyBufferIsNotUsed) {
  HttpEngine e;
  ASSERT_TRUE(e.tickets.ensure_configured(SequenceSpec{.name = "Late", .cache = 1}));
  std::string buffer = "kept as it was, longer than the short-string buffer";
  std::promise<Response> promise;
  auto future = promise.get_future();
  handle_request(
      e.deps, make_request(verb::post, "/v1/sequences/Late/next"),
      [&](Response r) { promise.set_value(std::move(r)); }, nullptr, &buffer);
  const Response answer = future.get();
  EXPECT_EQ(answer.result(), status::ok) << answer.body();
  EXPECT_EQ(answer.body(), R"({"sequence":"Late","ids":["1"]})");
  EXPECT_EQ(buffer, "kept as it was, longer than the short-string buffer");
}

}  // namespace
}  // namespace ticketd::http::testing
