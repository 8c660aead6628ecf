// Statements whose answer comes from the engine's committer thread are finished on the
// session's thread: the result, the session state it changes and the metrics hook all run
// where the session's handoff runs them (net::Completion), never on the committer.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "tests/support/step_queue.h"
#include "tests/unit/mysql/executor_fixture.h"

namespace ticketd::mysql::testing {
namespace {

class EngineHandoff : public ExecutorTest {
 protected:
  EngineHandoff() {
    // cache 1: every ticket is its own commit, so every answer comes from the committer.
    EXPECT_TRUE(service_.ensure_configured(SequenceSpec{.name = "Late", .cache = 1}));
    session_.completion = std::make_shared<net::Completion>(queue_.post());
  }

  // Runs `sql` as ServerConnection does (between the handoff's begin and end), then runs the
  // posted steps on this thread until the statement answered.
  QueryResult run_on_session(std::string_view sql) {
    std::optional<QueryResult> answer;
    session_.completion->begin();
    executor_.execute(session_, sql, [&](QueryResult r) {
      answer = std::move(r);
      answered_on_ = std::this_thread::get_id();
    });
    session_.completion->end();
    while (!answer) {
      if (!queue_.run_one()) {
        ADD_FAILURE() << sql << ": no answer";
        return ErrResult{};
      }
    }
    return std::move(*answer);
  }

  ::ticketd::testing::StepQueue queue_;
  std::thread::id answered_on_;
};

TEST_F(EngineHandoff, TicketsFromTheCommitterAreFinishedOnTheSessionsThread) {
  const auto me = std::this_thread::get_id();
  for (std::uint64_t i = 1; i <= 20; ++i) {
    auto r = run_on_session("REPLACE INTO Late (stub) VALUES ('a')");
    ASSERT_TRUE(std::holds_alternative<OkResult>(r));
    EXPECT_EQ(std::get<OkResult>(r).last_insert_id, i);
    EXPECT_EQ(session_.last_insert_id, i);
    EXPECT_EQ(answered_on_, me);
  }
  auto r = run_on_session("SELECT NEXTVAL(Late), NEXTVAL(Late), NEXT VALUE FOR Late");
  ASSERT_TRUE(std::holds_alternative<ResultSetResult>(r));
  const auto& row = std::get<ResultSetResult>(r).rows.at(0);
  EXPECT_EQ(row.at(0), "21");
  EXPECT_EQ(row.at(1), "22");
  EXPECT_EQ(row.at(2), "23");
  EXPECT_EQ(answered_on_, me);
  r = run_on_session("SELECT NEXT 5 VALUES FROM Late");
  ASSERT_TRUE(std::holds_alternative<ResultSetResult>(r));
  EXPECT_EQ(std::get<ResultSetResult>(r).rows.at(0).at(0), "24");
  // The metrics hook of every statement ran here too.
  ASSERT_EQ(log_.statement_threads.size(), 22u);
  for (auto t : log_.statement_threads) EXPECT_EQ(t, me);
}

TEST_F(EngineHandoff, AGaplessCommitOverSeveralSequencesIsFinishedOnTheSessionsThread) {
  add_gapless("InvoicesA");
  add_gapless("InvoicesB");
  const auto me = std::this_thread::get_id();
  ASSERT_TRUE(std::holds_alternative<OkResult>(run_on_session("BEGIN")));
  for (const char* t : {"InvoicesA", "InvoicesB", "InvoicesA"}) {
    auto r = run_on_session(std::string("REPLACE INTO ") + t + " (stub) VALUES ('a')");
    ASSERT_TRUE(std::holds_alternative<OkResult>(r)) << t;
    EXPECT_EQ(answered_on_, me);
  }
  EXPECT_EQ(session_.gapless_holds.size(), 3u);
  // COMMIT fans out into one commit per held number; the join finishes here.
  ASSERT_TRUE(std::holds_alternative<OkResult>(run_on_session("COMMIT")));
  EXPECT_EQ(answered_on_, me);
  EXPECT_TRUE(session_.gapless_holds.empty());
  EXPECT_FALSE(session_.in_transaction);
  auto next = run_on_session("SELECT NEXTVAL(InvoicesA)");
  ASSERT_TRUE(std::holds_alternative<ResultSetResult>(next));
  EXPECT_EQ(std::get<ResultSetResult>(next).rows.at(0).at(0), "3");
}

}  // namespace
}  // namespace ticketd::mysql::testing
