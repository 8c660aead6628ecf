#include "server/core/group_committer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/core/ticket_errc.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::ScriptedStore;

std::vector<Mutation> put(std::string k, std::string v) {
  std::vector<Mutation> m;
  m.push_back(Mutation{std::move(k), std::move(v)});
  return m;
}

TEST(GroupCommitter, RequestsQueuedDuringACommitShareTheNextOne) {
  ScriptedStore store;
  GroupCommitter committer(store);
  store.hold();
  std::atomic<int> ok{0};
  committer.submit(put("a", "1"), [&](const DetailedResult<void>& r) { ok += r ? 1 : 0; });
  store.wait_entered(1);
  for (int i = 0; i < 100; ++i) {
    std::string key = "k";
    key += std::to_string(i);
    committer.submit(put(std::move(key), "v"),
                     [&](const DetailedResult<void>& r) { ok += r ? 1 : 0; });
  }
  store.release();
  committer.stop();
  EXPECT_EQ(ok.load(), 101);
  EXPECT_EQ(store.commit_count(), 2u);
  auto stats = committer.stats();
  EXPECT_EQ(stats.commits, 2u);
  EXPECT_EQ(stats.requests, 101u);
}

TEST(GroupCommitter, ACapSplitsABatchInSubmissionOrder) {
  ScriptedStore store;
  GroupCommitter committer(store, 10);
  store.hold();
  std::atomic<int> ok{0};
  committer.submit(put("first", "1"), [&](const DetailedResult<void>& r) { ok += r ? 1 : 0; });
  store.wait_entered(1);
  // 25 single-key requests behind the held commit: at most 10 keys per commit, in order.
  for (int i = 0; i < 25; ++i) {
    committer.submit(put("k" + std::to_string(i), "v"),
                     [&](const DetailedResult<void>& r) { ok += r ? 1 : 0; });
  }
  // One request larger than the cap still goes (alone).
  std::vector<Mutation> big;
  for (int i = 0; i < 15; ++i) big.push_back(Mutation{"big" + std::to_string(i), "v"});
  committer.submit(std::move(big), [&](const DetailedResult<void>& r) { ok += r ? 1 : 0; });
  store.release();
  committer.stop();
  EXPECT_EQ(ok.load(), 27);
  // held commit, then 10 + 10 + 5 keys, then the big one alone.
  EXPECT_EQ(store.commit_count(), 5u);
  EXPECT_EQ(store.inner().get("k24").value(), std::optional<std::string>("v"));
  EXPECT_EQ(store.inner().get("big14").value(), std::optional<std::string>("v"));
}

TEST(GroupCommitter, AFailedCommitFailsEveryRequestInIt) {
  ScriptedStore store;
  GroupCommitter committer(store);
  store.hold();
  std::atomic<int> failed{0};
  committer.submit(put("a", "1"), [](const DetailedResult<void>&) {});
  store.wait_entered(1);
  store.fail_next(2);  // the held commit and the next (batched) one fail
  for (int i = 0; i < 10; ++i) {
    committer.submit(put("b", "2"), [&](const DetailedResult<void>& r) {
      if (!r) {
        EXPECT_EQ(r.error().code, StorageErrc::kNoSpace);
        ++failed;
      }
    });
  }
  store.release();
  committer.stop();
  EXPECT_EQ(failed.load(), 10);
  auto b = store.get("b");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->has_value());
}

TEST(GroupCommitter, LaterMutationOfAKeyWinsInsideABatch) {
  ScriptedStore store;
  GroupCommitter committer(store);
  store.hold();
  committer.submit(put("x", "0"), [](const DetailedResult<void>&) {});
  store.wait_entered(1);
  committer.submit(put("k", "first"), [](const DetailedResult<void>&) {});
  committer.submit(put("k", "second"), [](const DetailedResult<void>&) {});
  store.release();
  committer.stop();
  auto k = store.get("k");
  ASSERT_TRUE(k && *k);
  EXPECT_EQ(**k, "second");
}

TEST(GroupCommitter, TheObserverSeesEachCommitWithItsGroupSize) {
  ScriptedStore store;
  GroupCommitter committer(store);
  std::mutex mutex;
  std::vector<GroupCommitter::CommitSample> seen;
  committer.set_observer([&](const GroupCommitter::CommitSample& c) {
    std::lock_guard lock(mutex);
    seen.push_back(c);
  });
  store.hold();
  committer.submit(put("a", "1"), [](const DetailedResult<void>&) {});
  store.wait_entered(1);
  store.fail_next(1);  // the held commit fails; the batched one succeeds
  for (int i = 0; i < 3; ++i) {
    std::vector<Mutation> two = put("b" + std::to_string(i), "v");
    two.push_back(Mutation{"c" + std::to_string(i), "v"});
    committer.submit(std::move(two), [](const DetailedResult<void>&) {});
  }
  store.release();
  committer.stop();
  std::lock_guard lock(mutex);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].requests, 1u);
  EXPECT_EQ(seen[0].mutations, 1u);
  EXPECT_FALSE(seen[0].ok);
  EXPECT_EQ(seen[1].requests, 3u);
  EXPECT_EQ(seen[1].mutations, 6u);
  EXPECT_TRUE(seen[1].ok);
  EXPECT_EQ(committer.stats().total_latency_ns, seen[0].latency_ns + seen[1].latency_ns);
}

TEST(GroupCommitter, ARemovedObserverIsNotCalledAgain) {
  ScriptedStore store;
  GroupCommitter committer(store);
  std::atomic<int> calls{0};
  committer.set_observer([&](const GroupCommitter::CommitSample&) { ++calls; });
  ASSERT_TRUE(commit_and_wait(committer, put("a", "1")));
  committer.set_observer({});
  ASSERT_TRUE(commit_and_wait(committer, put("b", "1")));
  EXPECT_EQ(calls.load(), 1);
}

TEST(GroupCommitter, SubmitAfterStopFailsWithShuttingDown) {
  ScriptedStore store;
  GroupCommitter committer(store);
  committer.stop();
  auto r = commit_and_wait(committer, put("a", "1"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kShuttingDown);
}

}  // namespace
}  // namespace ticketd
