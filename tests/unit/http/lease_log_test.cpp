#include "server/core/lease_log.h"

#include <gtest/gtest.h>

#include <future>

#include "tests/support/scripted_store.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd {
namespace {

using http::testing::FakeClock;

DetailedResult<Lease> record_and_wait(LeaseLog& log, std::string_view seq, Block b,
                                      std::string holder) {
  std::promise<DetailedResult<Lease>> p;
  auto f = p.get_future();
  log.record(seq, b, std::move(holder),
             [&p](DetailedResult<Lease> r) { p.set_value(std::move(r)); });
  return f.get();
}

TEST(LeaseLog, EncodesAndDecodesWithAFreeTextHolder) {
  Lease l{"000001767225600000-0000000003", "S", Block{10, 2, 5}, "a b=c holder=x", 1767225600000};
  const auto key = lease_key(l.sequence, l.lease_id);
  EXPECT_EQ(key, "lease/S/000001767225600000-0000000003");
  EXPECT_EQ(encode_lease(l),
            "first=10 step=2 count=5 granted_at_ms=1767225600000 holder=a b=c holder=x");
  auto back = decode_lease(key, encode_lease(l));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, l);
  EXPECT_FALSE(decode_lease(key, "first=10 step=2"));
  EXPECT_FALSE(decode_lease("seq/S", encode_lease(l)));
  EXPECT_FALSE(decode_lease(key, "first=x step=2 count=5 granted_at_ms=1 holder="));
}

TEST(LeaseLog, RecordsDurablyAndListsNewestFirst) {
  testing::ScriptedStore store;
  FakeClock clock;
  GroupCommitter committer(store);
  LeaseLog log(store, committer, clock);
  for (std::uint64_t i = 0; i < 5; ++i) {
    if (i % 2 == 0) clock.advance(1);  // two leases within one millisecond keep their order
    auto r = record_and_wait(log, "S", Block{i * 10 + 1, 1, 10}, "h" + std::to_string(i));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->holder, "h" + std::to_string(i));
  }
  ASSERT_TRUE(record_and_wait(log, "S2", Block{1, 1, 1}, ""));
  auto recent = log.recent("S", 3);
  ASSERT_TRUE(recent);
  ASSERT_EQ(recent->size(), 3u);
  EXPECT_EQ((*recent)[0].holder, "h4");
  EXPECT_EQ((*recent)[1].holder, "h3");
  EXPECT_EQ((*recent)[2].holder, "h2");
  EXPECT_EQ((*recent)[0].block, (Block{41, 1, 10}));
  EXPECT_EQ(log.recent("S", 100)->size(), 5u);
  EXPECT_EQ(log.recent("S2", 100)->size(), 1u);
  EXPECT_EQ(log.recent("S3", 100)->size(), 0u);
  // A fresh log over the same store (a restart) still lists them.
  LeaseLog reopened(store, committer, clock);
  EXPECT_EQ(reopened.recent("S", 100)->size(), 5u);
  committer.stop();
}

TEST(LeaseLog, FailedCommitFailsTheRecord) {
  testing::ScriptedStore store;
  FakeClock clock;
  GroupCommitter committer(store);
  LeaseLog log(store, committer, clock);
  store.fail_next(1);
  auto r = record_and_wait(log, "S", Block{1, 1, 1}, "h");
  ASSERT_FALSE(r);
  EXPECT_EQ(log.recent("S", 10)->size(), 0u);
  committer.stop();
}

}  // namespace
}  // namespace ticketd
