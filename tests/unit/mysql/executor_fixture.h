// A QueryExecutor over a real TicketService on the in-memory store, with a FakeClock: the
// executor's unit tests run statements and read QueryResults, no sockets, no packets.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "server/core/gapless_sequence.h"
#include "server/core/group_committer.h"
#include "server/core/serving_gate.h"
#include "server/core/ticket_service.h"
#include "server/mysql/query_executor.h"
#include "storage/memory_counter_store.h"
#include "tests/support/fake_clock.h"

namespace ticketd::mysql::testing {

/// What the hooks saw.
struct HookLog {
  std::vector<std::pair<std::string, std::uint64_t>> issued;
  std::vector<std::pair<std::string, std::uint64_t>> blocks;
  std::vector<std::string> statements;             // kinds, in completion order
  std::vector<std::thread::id> statement_threads;  // where each statement's hook ran
};

class ExecutorTest : public ::testing::Test {
 protected:
  /// A `standby` executor has a closed serving gate: it follows a leader at 10.0.0.9.
  explicit ExecutorTest(ServerSettings settings = {}, bool standby = false)
      : committer_(store_),
        service_(store_, committer_),
        settings_(std::move(settings)),
        gate_(standby ? std::make_unique<ServingGate>(clock_, InstanceAddress{}, 10000, 2500)
                      : nullptr),
        executor_(service_, settings_, clock_, hooks(), nullptr, gate_.get()) {
    if (gate_) gate_->follow(InstanceAddress{"10.0.0.9:3306", "10.0.0.9:8080"});
    EXPECT_TRUE(service_.ensure_configured(SequenceSpec{.name = "Tickets64", .cache = 10}));
    session_.connection_id = 7;
    session_.user = "app";
    session_.host = "127.0.0.1";
    session_.database = "tickets";
    session_.memory = executor_.connection_memory();
  }
  ~ExecutorTest() override { executor_.end_session(session_); }

  /// Runs one statement and waits for its answer (inline, or from the committer thread).
  QueryResult run(std::string_view sql) {
    std::promise<QueryResult> answer;
    executor_.execute(session_, sql, [&answer](QueryResult r) { answer.set_value(std::move(r)); });
    return answer.get_future().get();
  }

  OkResult ok(std::string_view sql) {
    auto r = run(sql);
    if (const auto* e = std::get_if<ErrResult>(&r)) ADD_FAILURE() << sql << ": " << e->message;
    EXPECT_TRUE(std::holds_alternative<OkResult>(r)) << sql;
    return std::holds_alternative<OkResult>(r) ? std::get<OkResult>(r) : OkResult{};
  }
  ResultSetResult rows(std::string_view sql) {
    auto r = run(sql);
    if (const auto* e = std::get_if<ErrResult>(&r)) ADD_FAILURE() << sql << ": " << e->message;
    EXPECT_TRUE(std::holds_alternative<ResultSetResult>(r)) << sql;
    return std::holds_alternative<ResultSetResult>(r) ? std::get<ResultSetResult>(r)
                                                      : ResultSetResult{};
  }
  ErrResult err(std::string_view sql) {
    auto r = run(sql);
    EXPECT_TRUE(std::holds_alternative<ErrResult>(r)) << sql << " did not fail";
    return std::holds_alternative<ErrResult>(r) ? std::get<ErrResult>(r) : ErrResult{};
  }
  /// The single value of a one-row, one-column result.
  std::optional<std::string> value(std::string_view sql) {
    auto r = rows(sql);
    if (r.rows.size() != 1 || r.rows[0].size() != 1) {
      ADD_FAILURE() << sql << ": not one value";
      return std::nullopt;
    }
    return r.rows[0][0];
  }

  std::shared_ptr<GaplessSequence> add_gapless(std::string name) {
    auto g =
        GaplessSequence::open(SequenceSpec{.name = std::move(name), .kind = SequenceKind::kGapless},
                              GaplessOptions{}, store_, committer_, clock_);
    EXPECT_TRUE(g);
    if (!g) return nullptr;
    EXPECT_TRUE(service_.add_gapless(*g));
    return *g;
  }

  ExecutorHooks hooks() {
    ExecutorHooks h;
    h.on_issued = [this](std::string_view s, std::uint64_t n) {
      log_.issued.emplace_back(std::string(s), n);
    };
    h.on_block_leased = [this](std::string_view s, std::uint64_t n) {
      log_.blocks.emplace_back(std::string(s), n);
    };
    h.on_statement = [this](std::string_view kind, double seconds) {
      EXPECT_GE(seconds, 0.0);
      log_.statements.emplace_back(kind);
      log_.statement_threads.push_back(std::this_thread::get_id());
    };
    return h;
  }

  ticketd::testing::FakeClock clock_;
  MemoryCounterStore store_;
  GroupCommitter committer_;
  TicketService service_;
  ServerSettings settings_;
  HookLog log_;
  std::unique_ptr<ServingGate> gate_;
  QueryExecutor executor_;
  SessionState session_;
};

}  // namespace ticketd::mysql::testing
