// EtcdClient against a real etcd (Debian's etcd-server 3.4) started on loopback.
#include "storage/etcd/etcd_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "storage/etcd/etcd_watch.h"
#include "tests/support/etcd_process.h"

namespace ticketd::etcd {
namespace {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

class EtcdClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { etcd_ = new ticketd::testing::EtcdProcess(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  static std::unique_ptr<EtcdClient> client(std::vector<std::string> endpoints = {},
                                            milliseconds timeout = milliseconds(1000)) {
    if (endpoints.empty()) endpoints.push_back(etcd_->endpoint());
    auto c = EtcdClient::create(
        {.endpoints = std::move(endpoints), .timeout = timeout, .connect_timeout = timeout});
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    return std::move(*c);
  }
  // A unique key prefix per test.
  static std::string prefix() {
    return std::string("/test/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
           "/";
  }
  static ticketd::testing::EtcdProcess* etcd_;
};
ticketd::testing::EtcdProcess* EtcdClientTest::etcd_ = nullptr;

TEST_F(EtcdClientTest, GrantKeepAliveRevokeAndALeaseThatIsGone) {
  auto c = client();
  auto g = c->grant_lease(5);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_GT(g->id, 0);
  EXPECT_GE(g->ttl_s, 5);
  auto k = c->keepalive(g->id);
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_EQ(k->id, g->id);
  EXPECT_GE(k->ttl_s, 5);
  ASSERT_TRUE(c->revoke(g->id));
  auto gone = c->keepalive(g->id);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, EtcdErrc::kLeaseNotFound);
  auto again = c->revoke(g->id);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, EtcdErrc::kLeaseNotFound);
}

TEST_F(EtcdClientTest, PutAndGetPrefixInKeyOrderAndRevokingALeaseDeletesItsKeys) {
  auto c = client();
  const std::string p = prefix();
  auto lease = c->grant_lease(30);
  ASSERT_TRUE(lease);
  ASSERT_TRUE(c->put(p + "b", "2"));
  ASSERT_TRUE(c->put(p + "a", std::string("\x00\xff", 2)));
  auto put = c->put(p + "c", "leased", lease->id);
  ASSERT_TRUE(put);
  ASSERT_TRUE(c->put(p.substr(0, p.size() - 1) + "0", "outside the prefix"));
  auto all = c->get_prefix(p);
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->kvs.size(), 3u);
  EXPECT_EQ(all->kvs[0].key, p + "a");
  EXPECT_EQ(all->kvs[0].value, std::string("\x00\xff", 2));
  EXPECT_EQ(all->kvs[1].key, p + "b");
  EXPECT_EQ(all->kvs[2].lease, lease->id);
  EXPECT_EQ(all->kvs[2].create_revision, put->header.revision);
  EXPECT_EQ(all->header.revision, put->header.revision + 1);
  ASSERT_TRUE(c->revoke(lease->id));
  auto after = c->get_prefix(p);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->kvs.size(), 2u);
  auto missing = c->get(p + "c");
  ASSERT_TRUE(missing);
  EXPECT_TRUE(missing->kvs.empty());
}

TEST_F(EtcdClientTest, ADescendingLimitedRangeReturnsOnlyTheLastKeys) {
  // What EtcdCounterStore::scan_last sends (listing hi-lo leases): etcd sorts and limits, so
  // ticketd reads only the keys it returns however many the prefix holds.
  auto c = client();
  const std::string p = prefix();
  for (int i = 0; i < 50; ++i) {
    char key[16];  // room for any int: -O1 cannot prove i < 50
    std::snprintf(key, sizeof key, "%03d", i);
    ASSERT_TRUE(c->put(p + key, std::to_string(i)));
  }
  ASSERT_TRUE(c->put(p.substr(0, p.size() - 1) + "0", "outside the prefix"));
  RangeRequest last3{.key = p, .range_end = prefix_end(p), .limit = 3, .descending = true};
  auto r = c->range(last3);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->kvs.size(), 3u);
  EXPECT_EQ(r->kvs[0].key, p + "049");
  EXPECT_EQ(r->kvs[1].key, p + "048");
  EXPECT_EQ(r->kvs[2].key, p + "047");
  EXPECT_TRUE(r->more);     // the server left the rest out
  EXPECT_EQ(r->count, 50);  // of 50 in the range
}

TEST_F(EtcdClientTest, CreateIfAbsentTxnSucceedsOnceAndTheLoserSeesTheHolder) {
  auto c = client();
  const std::string key = prefix() + "owner";
  TxnRequest t;
  t.compare.push_back(Compare::absent(key));
  t.success.emplace_back(PutRequest{.key = key, .value = "first"});
  t.failure.emplace_back(RangeRequest{.key = key});
  auto first = c->txn(t);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->succeeded);
  ASSERT_EQ(first->responses.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<PutResponse>(first->responses[0]));
  std::get<PutRequest>(t.success[0]).value = "second";
  auto second = c->txn(t);
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->succeeded);
  const auto& seen = std::get<RangeResponse>(second->responses.at(0));
  ASSERT_EQ(seen.kvs.size(), 1u);
  EXPECT_EQ(seen.kvs[0].value, "first");
  EXPECT_EQ(seen.kvs[0].create_revision, first->header.revision);
}

TEST_F(EtcdClientTest, TxnComparesOnModRevisionValueAndVersion) {
  auto c = client();
  const std::string key = prefix() + "k";
  auto put = c->put(key, "v1");
  ASSERT_TRUE(put);
  auto run = [&](Compare cmp) {
    TxnRequest t;
    t.compare.push_back(std::move(cmp));
    t.success.emplace_back(RangeRequest{.key = key});
    auto r = c->txn(t);
    EXPECT_TRUE(r) << r.error().message;
    return r && r->succeeded;
  };
  EXPECT_TRUE(run(Compare::mod_revision(key, CompareResult::kEqual, put->header.revision)));
  EXPECT_FALSE(run(Compare::mod_revision(key, CompareResult::kGreater, put->header.revision)));
  EXPECT_TRUE(run(Compare::value_is(key, CompareResult::kEqual, "v1")));
  EXPECT_FALSE(run(Compare::value_is(key, CompareResult::kEqual, "v2")));
  EXPECT_TRUE(run(Compare::version(key, CompareResult::kEqual, 1)));
  EXPECT_TRUE(run(Compare::create_revision(key, CompareResult::kNotEqual, 0)));
  // A fenced delete: only while the value is what this writer put.
  TxnRequest del;
  del.compare.push_back(Compare::value_is(key, CompareResult::kEqual, "v1"));
  del.success.emplace_back(DeleteRangeRequest{.key = key, .prev_kv = true});
  auto d = c->txn(del);
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->succeeded);
  const auto& deleted = std::get<DeleteRangeResponse>(d->responses.at(0));
  EXPECT_EQ(deleted.deleted, 1);
  ASSERT_EQ(deleted.prev_kvs.size(), 1u);
  EXPECT_EQ(deleted.prev_kvs[0].value, "v1");
}

TEST_F(EtcdClientTest, EtcdRejectionsCarryItsMessage) {
  auto c = client();
  TxnRequest t;  // the same key twice in one txn is refused by etcd
  t.success.emplace_back(PutRequest{.key = prefix() + "dup", .value = "1"});
  t.success.emplace_back(PutRequest{.key = prefix() + "dup", .value = "2"});
  auto r = c->txn(t);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EtcdErrc::kRejected);
  EXPECT_NE(r.error().message.find("duplicate key"), std::string::npos) << r.error().message;
}

TEST_F(EtcdClientTest, FailsOverToTheNextEndpointWhenTheFirstRefusesConnections) {
  const std::string dead = "http://127.0.0.1:" + std::to_string(ticketd::testing::free_port());
  auto c = client({dead, etcd_->endpoint()});
  auto r = c->put(prefix() + "k", "v");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c->current_endpoint(), etcd_->endpoint());
  // It stays on the endpoint that worked.
  ASSERT_TRUE(c->get(prefix() + "k"));
  EXPECT_EQ(c->current_endpoint(), etcd_->endpoint());
}

TEST_F(EtcdClientTest, NoReachableEndpointIsUnavailable) {
  const std::string dead = "http://127.0.0.1:" + std::to_string(ticketd::testing::free_port());
  auto c = client({dead, dead});
  auto r = c->get("k");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EtcdErrc::kUnavailable);
  EXPECT_NE(r.error().message.find(dead), std::string::npos) << r.error().message;
}

TEST_F(EtcdClientTest, AServerThatNeverAnswersTimesOutAtTheDeadline) {
  // A socket that listens but never reads: the kernel accepts the connection and the request.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  auto c = client({"http://127.0.0.1:" + std::to_string(ntohs(a.sin_port))}, milliseconds(300));
  const auto start = steady::now();
  auto r = c->keepalive(1);
  const auto elapsed = steady::now() - start;
  ::close(fd);
  ASSERT_FALSE(r);
  // The request went out: a write's outcome would be unknown, not "nothing happened".
  EXPECT_EQ(r.error().code, EtcdErrc::kOutcomeUnknown) << r.error().message;
  EXPECT_GE(elapsed, milliseconds(300));
  EXPECT_LT(elapsed, milliseconds(1300));
}

TEST_F(EtcdClientTest, ReconnectsAfterEtcdRestarts) {
  auto c = client();
  ASSERT_TRUE(c->put(prefix() + "k", "v"));
  etcd_->kill();
  auto down = c->get(prefix() + "k");
  ASSERT_FALSE(down);
  EXPECT_TRUE(down.error().code == EtcdErrc::kUnavailable ||
              down.error().code == EtcdErrc::kTimeout ||
              down.error().code == EtcdErrc::kOutcomeUnknown)
      << down.error().message;
  etcd_->start();
  auto up = c->get(prefix() + "k");
  ASSERT_TRUE(up) << up.error().message;
  ASSERT_EQ(up->kvs.size(), 1u);
  EXPECT_EQ(up->kvs[0].value, "v");
}

TEST_F(EtcdClientTest, MeasuresCallLatencyOnLoopback) {
  auto c = client();
  auto lease = c->grant_lease(30);
  ASSERT_TRUE(lease);
  auto median_us = [](std::vector<std::int64_t> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<std::int64_t> keepalive_us;
  std::vector<std::int64_t> txn_us;
  for (int i = 0; i < 200; ++i) {
    auto t0 = steady::now();
    ASSERT_TRUE(c->keepalive(lease->id));
    auto t1 = steady::now();
    TxnRequest t;
    t.compare.push_back(Compare::absent(prefix() + "k" + std::to_string(i)));
    t.success.emplace_back(PutRequest{.key = prefix() + "k" + std::to_string(i), .value = "v"});
    ASSERT_TRUE(c->txn(t));
    auto t2 = steady::now();
    keepalive_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
    txn_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(t2 - t1).count());
  }
  std::cout << "etcd loopback latency: keepalive median " << median_us(keepalive_us)
            << " us, create-if-absent txn median " << median_us(txn_us) << " us\n";
  RecordProperty("keepalive_median_us", std::to_string(median_us(keepalive_us)));
  RecordProperty("txn_median_us", std::to_string(median_us(txn_us)));
  EXPECT_LT(median_us(keepalive_us), 500'000);
}

TEST_F(EtcdClientTest, TheFirstCallAfterAMemberRestartedDoesNotFailOnTheOldConnection) {
  auto c = client();
  ASSERT_TRUE(c->put(prefix() + "k", "v"));
  etcd_->kill();  // the kept-alive connection is now closed by the peer, unknown to the client
  etcd_->start();
  auto up = c->get(prefix() + "k");
  ASSERT_TRUE(up) << up.error().message;
  ASSERT_EQ(up->kvs.size(), 1u);
}

TEST_F(EtcdClientTest, AWatchStreamsPutsAndDeletesOfItsKeyAsTheyHappen) {
  auto c = client();
  const std::string key = prefix() + "leader";
  auto w = c->watch(WatchCreateRequest{.key = key});
  ASSERT_TRUE(w) << w.error().message;
  auto created = (*w)->next(milliseconds(2000));
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_TRUE(created->created);
  ASSERT_TRUE(c->put(key, "a"));  // the client's own connection works beside the watch
  ASSERT_TRUE(c->put(prefix() + "other", "not watched"));
  ASSERT_TRUE(c->delete_range(DeleteRangeRequest{.key = key}));
  auto put = (*w)->next(milliseconds(2000));
  ASSERT_TRUE(put) << put.error().message;
  ASSERT_EQ(put->events.size(), 1u);
  EXPECT_EQ(put->events[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(put->events[0].kv.value, "a");
  auto del = (*w)->next(milliseconds(2000));
  ASSERT_TRUE(del) << del.error().message;
  ASSERT_EQ(del->events.size(), 1u);
  EXPECT_EQ(del->events[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(del->events[0].kv.key, key);
}

TEST_F(EtcdClientTest, AWatchFromARevisionReplaysWhatHappenedSince) {
  auto c = client();
  const std::string key = prefix() + "k";
  auto first = c->put(key, "1");
  ASSERT_TRUE(first);
  ASSERT_TRUE(c->put(key, "2"));
  ASSERT_TRUE(c->delete_range(DeleteRangeRequest{.key = key}));
  auto w = c->watch(WatchCreateRequest{.key = key, .start_revision = first->header.revision + 1});
  ASSERT_TRUE(w) << w.error().message;
  std::vector<WatchEvent> events;
  while (events.size() < 2) {
    auto r = (*w)->next(milliseconds(2000));
    ASSERT_TRUE(r) << r.error().message;
    events.insert(events.end(), r->events.begin(), r->events.end());
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(events[0].kv.value, "2");
  EXPECT_EQ(events[1].type, WatchEvent::Type::kDelete);
}

TEST_F(EtcdClientTest, AQuietWatchTimesOutAtItsDeadlineAndCancelEndsAWaitAtOnce) {
  auto c = client();
  auto w = c->watch(WatchCreateRequest{.key = prefix() + "quiet"});
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_TRUE((*w)->next(milliseconds(2000)));  // created
  auto t0 = steady::now();
  auto quiet = (*w)->next(milliseconds(300));
  auto took = steady::now() - t0;
  ASSERT_FALSE(quiet);
  EXPECT_EQ(quiet.error().code, EtcdErrc::kTimeout) << quiet.error().message;
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(1500));

  auto w2 = c->watch(WatchCreateRequest{.key = prefix() + "quiet"});
  ASSERT_TRUE(w2) << w2.error().message;
  ASSERT_TRUE((*w2)->next(milliseconds(2000)));
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(200));
    (*w2)->cancel();
  });
  t0 = steady::now();
  auto cancelled = (*w2)->next(milliseconds(30000));
  took = steady::now() - t0;
  canceller.join();
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().code, EtcdErrc::kCancelled) << cancelled.error().message;
  EXPECT_LT(took, milliseconds(2000));
  EXPECT_FALSE((*w2)->next(milliseconds(10)));  // stays cancelled
}

TEST_F(EtcdClientTest, CheckAccessWritesNothing) {
  auto c = client();
  const std::string p = prefix();
  ASSERT_TRUE(c->check_access(p));
  auto all = c->get_prefix(p);
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->kvs.empty());
}

}  // namespace
}  // namespace ticketd::etcd
