// EtcdWorkerLease against a real etcd started on loopback.
#include "server/etcd/etcd_worker_lease.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "server/core/snowflake_generator.h"
#include "storage/counter_store.h"
#include "tests/support/etcd_process.h"

namespace ticketd {
namespace {

using std::chrono::milliseconds;

class EtcdWorkerLeaseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { etcd_ = new testing::EtcdProcess(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    auto c = etcd::EtcdClient::create({.endpoints = {etcd_->endpoint()}});
    ASSERT_TRUE(c);
    client_ = std::move(*c);
  }
  EtcdWorkerLeaseOptions options(int worker_bits = 10) {
    EtcdWorkerLeaseOptions o;
    o.prefix = std::string("/test/") +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
    o.ttl_s = 10;
    o.margin_ms = 2500;
    o.renew_interval_ms = 3333;
    o.worker_bits = worker_bits;
    o.owner = "test";
    return o;
  }
  std::unique_ptr<EtcdWorkerLease> lease(EtcdWorkerLeaseOptions o) {
    return std::make_unique<EtcdWorkerLease>(*client_, std::move(o), clock_);
  }

  static testing::EtcdProcess* etcd_;
  SystemClock clock_;
  std::unique_ptr<etcd::EtcdClient> client_;
};
testing::EtcdProcess* EtcdWorkerLeaseTest::etcd_ = nullptr;

TEST_F(EtcdWorkerLeaseTest, ThreeHoldersClaimTheLowestFreeIdsAndAReleasedIdIsReused) {
  auto a = lease(options());
  auto b = lease(options());
  auto c = lease(options());
  ASSERT_TRUE(a->claim());
  ASSERT_TRUE(b->claim());
  ASSERT_TRUE(c->claim());
  EXPECT_EQ(a->state().worker_id, 0u);
  EXPECT_EQ(b->state().worker_id, 1u);
  EXPECT_EQ(c->state().worker_id, 2u);
  auto held = client_->get(a->worker_key(1));
  ASSERT_TRUE(held);
  ASSERT_EQ(held->kvs.size(), 1u);
  EXPECT_EQ(held->kvs[0].value, "test");
  EXPECT_NE(held->kvs[0].lease, 0);
  b->stop();  // revokes: worker 1 is free at once
  EXPECT_FALSE(b->state().held);
  auto d = lease(options());
  ASSERT_TRUE(d->claim());
  EXPECT_EQ(d->state().worker_id, 1u);
}

TEST_F(EtcdWorkerLeaseTest, TheNextHolderOfAnIdStartsAfterThePreviousHoldersMark) {
  auto a = lease(options());
  const std::int64_t before = clock_.now_unix_ms();
  ASSERT_TRUE(a->claim());
  const WorkerLeaseState first = a->state();
  EXPECT_TRUE(first.held);
  EXPECT_EQ(first.not_before_unix_ms, 0);  // nobody held worker 0 before
  EXPECT_GE(first.renewed_at_unix_ms, before);
  EXPECT_EQ(first.valid_until_unix_ms, first.renewed_at_unix_ms + 10'000 - 2'500);
  EXPECT_GE(first.issue_until_unix_ms, first.renewed_at_unix_ms + 10'000);
  // The mark is durable in etcd, bound to no lease.
  auto mark = client_->get(a->mark_key(0));
  ASSERT_TRUE(mark);
  ASSERT_EQ(mark->kvs.size(), 1u);
  EXPECT_EQ(mark->kvs[0].lease, 0);
  EXPECT_EQ(decode_hwm(mark->kvs[0].value)->hwm_unix_ms, first.issue_until_unix_ms);
  ASSERT_TRUE(a->renew());
  const WorkerLeaseState renewed = a->state();
  EXPECT_EQ(renewed.generation, first.generation);
  EXPECT_GE(renewed.issue_until_unix_ms, first.issue_until_unix_ms);
  a->stop();
  auto b = lease(options());
  ASSERT_TRUE(b->claim());
  EXPECT_EQ(b->state().worker_id, 0u);
  EXPECT_EQ(b->state().not_before_unix_ms, renewed.issue_until_unix_ms);
}

TEST_F(EtcdWorkerLeaseTest, AnExpiredLeaseIsDroppedOnRenewalAndReclaimed) {
  auto a = lease(options());
  ASSERT_TRUE(a->claim());
  const auto first = a->state();
  // What etcd does when the TTL passes without a keepalive: the lease and its key go.
  auto key = client_->get(a->worker_key(first.worker_id));
  ASSERT_TRUE(key);
  ASSERT_EQ(key->kvs.size(), 1u);
  ASSERT_TRUE(client_->revoke(key->kvs[0].lease));
  auto r = a->renew();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, etcd::EtcdErrc::kLeaseNotFound);
  EXPECT_FALSE(a->state().held);
  EXPECT_EQ(a->stats().losses, 1u);
  ASSERT_TRUE(a->claim());
  EXPECT_TRUE(a->state().held);
  EXPECT_EQ(a->state().generation, first.generation + 1);
  EXPECT_EQ(a->state().not_before_unix_ms, first.issue_until_unix_ms);
}

TEST_F(EtcdWorkerLeaseTest, AWorkerKeyTakenAwayFencesTheMarkAndDropsTheLease) {
  auto a = lease(options());
  ASSERT_TRUE(a->claim());
  const auto id = a->state().worker_id;
  // An operator deletes the key: the lease is alive but the ID is no longer ours.
  ASSERT_TRUE(client_->delete_range({.key = a->worker_key(id)}));
  auto r = a->renew();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, StorageErrc::kFenced);
  EXPECT_FALSE(a->state().held);
}

TEST_F(EtcdWorkerLeaseTest, WhenEveryIdIsTakenClaimingFails) {
  auto a = lease(options(1));
  auto b = lease(options(1));
  auto c = lease(options(1));
  ASSERT_TRUE(a->claim());
  ASSERT_TRUE(b->claim());
  auto r = c->claim();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, StorageErrc::kFenced);
  EXPECT_NE(r.error().message.find("all 2 worker IDs"), std::string::npos) << r.error().message;
  EXPECT_FALSE(c->state().held);
}

TEST_F(EtcdWorkerLeaseTest, TheBackgroundThreadReclaimsALostLease) {
  auto o = options();
  o.ttl_s = 2;
  o.margin_ms = 500;
  o.renew_interval_ms = 200;
  auto a = lease(o);
  ASSERT_TRUE(a->claim());
  const auto first = a->state();
  a->start();
  auto key = client_->get(a->worker_key(first.worker_id));
  ASSERT_TRUE(key);
  ASSERT_TRUE(client_->revoke(key->kvs.at(0).lease));
  // The thread notices on its next renewal and claims again (polling its published state).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (a->state().generation == first.generation && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(a->state().generation, first.generation + 1);
  EXPECT_TRUE(a->state().held);
  // The loss was seen by a failed renewal, and the second claim is what brought the lease back.
  const auto stats = a->stats();
  EXPECT_GE(stats.renewal_failures, 1u);
  EXPECT_EQ(stats.losses, 1u);
  EXPECT_EQ(stats.claims, 2u);
  a->stop();
}

}  // namespace
}  // namespace ticketd
