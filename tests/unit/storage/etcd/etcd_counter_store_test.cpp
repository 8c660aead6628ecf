#include "storage/etcd/etcd_counter_store.h"

#include <gtest/gtest.h>

#include <variant>

namespace ticketd::etcd {
namespace {

const EtcdLayout kLayout{"/ticketd/prod/"};

TEST(EtcdLayout, KeysLiveUnderThePrefix) {
  EXPECT_EQ(kLayout.leader_key(), "/ticketd/prod/leader");
  EXPECT_EQ(kLayout.data_prefix(), "/ticketd/prod/data/");
}

TEST(FencedCommit, ComparesTheLeaderKeysCreateRevisionAndAppliesEveryMutation) {
  const std::vector<Mutation> m = {{"seq/A", "10"}, {"tomb/B", std::nullopt}};
  const TxnRequest txn = make_fenced_commit(kLayout, 1234, m);
  ASSERT_EQ(txn.compare.size(), 1u);
  EXPECT_EQ(txn.compare[0].key, "/ticketd/prod/leader");
  EXPECT_EQ(txn.compare[0].target, CompareTarget::kCreateRevision);
  EXPECT_EQ(txn.compare[0].result, CompareResult::kEqual);
  EXPECT_EQ(txn.compare[0].number, 1234);
  ASSERT_EQ(txn.success.size(), 2u);
  const auto* put = std::get_if<PutRequest>(&txn.success[0]);
  ASSERT_NE(put, nullptr);
  EXPECT_EQ(put->key, "/ticketd/prod/data/seq/A");
  EXPECT_EQ(put->value, "10");
  EXPECT_EQ(put->lease, 0);  // data outlives the leader's lease
  const auto* del = std::get_if<DeleteRangeRequest>(&txn.success[1]);
  ASSERT_NE(del, nullptr);
  EXPECT_EQ(del->key, "/ticketd/prod/data/tomb/B");
  EXPECT_TRUE(del->range_end.empty());  // one key, never a range
  EXPECT_TRUE(txn.failure.empty());     // a lost compare changes nothing
}

TEST(FencedCommit, KeepsOnlyTheLastWriteOfEachKeyInOrder) {
  const std::vector<Mutation> m = {
      {"a", "1"}, {"b", "1"}, {"a", "2"}, {"c", std::nullopt}, {"b", std::nullopt}};
  const auto out = last_write_per_key(m);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].key, "a");
  EXPECT_EQ(out[0].value, "2");
  EXPECT_EQ(out[1].key, "c");
  EXPECT_EQ(out[2].key, "b");
  EXPECT_FALSE(out[2].value);
  EXPECT_EQ(make_fenced_commit(kLayout, 1, m).success.size(), 3u);
}

TEST(FencedCommit, EncodesAsTheGatewayExpects) {
  const std::vector<Mutation> m = {{"k", "v"}};
  const std::string json = encode(make_fenced_commit(kLayout, 77, m));
  EXPECT_NE(json.find(R"("target":"CREATE")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("create_revision":"77")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("request_put")"), std::string::npos) << json;
}

}  // namespace
}  // namespace ticketd::etcd
