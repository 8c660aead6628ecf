// SequenceRegistry's claims: a create or drop holds its name from its first check to the step
// that publishes its result, so two DDLs on one name never interleave and no lookup sees a
// half-done one.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/core/sequence_registry.h"
#include "server/core/ticket_errc.h"
#include "server/core/uuidv7_generator.h"
#include "tests/support/fake_clock.h"

namespace ticketd {
namespace {

using Claim = SequenceRegistry::Claim;

SequenceHandle a_sequence() {
  static const testing::FakeClock clock;
  return std::make_shared<UuidV7Generator>(clock, 1);
}

TEST(SequenceClaims, ACreateHoldsItsNameUntilItsResultIsPublished) {
  SequenceRegistry r;
  ASSERT_EQ(r.claim_new("A"), Claim::kClaimed);
  // Claimed, not served: lookups miss it, and every other DDL of the name is refused.
  EXPECT_FALSE(r.find("A"));
  EXPECT_EQ(r.claim_new("A"), Claim::kBusy);
  auto drop = r.claim_for_drop("A");
  ASSERT_FALSE(drop);
  EXPECT_EQ(drop.error().code, TicketErrc::kUnknownSequence);
  // Other names are free meanwhile.
  EXPECT_EQ(r.claim_new("B"), Claim::kClaimed);

  r.release("A", a_sequence());
  EXPECT_EQ(r.kind_of("A"), SequenceKind::kUuidV7);
  EXPECT_EQ(r.claim_new("A"), Claim::kServed);
}

TEST(SequenceClaims, AFailedCreateLeavesTheNameFree) {
  SequenceRegistry r;
  ASSERT_EQ(r.claim_new("A"), Claim::kClaimed);
  r.release("A");
  EXPECT_FALSE(r.find("A"));
  EXPECT_EQ(r.claim_new("A"), Claim::kClaimed);
}

TEST(SequenceClaims, ADropStopsServingAtOnceAndHoldsTheNameUntilItLands) {
  SequenceRegistry r;
  r.put("A", a_sequence());
  auto taken = r.claim_for_drop("A");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_EQ(kind_of_handle(*taken), SequenceKind::kUuidV7);
  EXPECT_FALSE(r.find("A"));
  // A create of the name waits for the drop's outcome.
  auto busy = r.claim_new("A");
  EXPECT_EQ(busy, Claim::kBusy);
  EXPECT_EQ(SequenceRegistry::busy("A").code, TicketErrc::kRetryLater);

  r.release("A");  // the drop landed
  EXPECT_FALSE(r.find("A"));
  EXPECT_EQ(r.claim_new("A"), Claim::kClaimed);
}

TEST(SequenceClaims, ADropThatDidNotLandServesTheSequenceAgainInTheSameStep) {
  SequenceRegistry r;
  r.put("A", a_sequence());
  auto taken = r.claim_for_drop("A");
  ASSERT_TRUE(taken);
  r.release("A", *taken);
  EXPECT_EQ(r.kind_of("A"), SequenceKind::kUuidV7);
  EXPECT_TRUE(r.claim_for_drop("A"));  // and the name is not left claimed
}

TEST(SequenceClaims, ListsServedSequencesByNameAndKind) {
  SequenceRegistry r;
  r.put("b", a_sequence());
  r.put("a", a_sequence());
  ASSERT_EQ(r.claim_new("c"), Claim::kClaimed);  // claimed names are not listed
  const auto all = r.handles();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].first, "a");
  EXPECT_EQ(all[1].first, "b");
  EXPECT_EQ(r.all_of<UuidV7Generator>().size(), 2u);
  EXPECT_TRUE(r.all_of<TicketSequence>().empty());
  EXPECT_TRUE(r.with_deadlines().empty());  // UUIDv7 keeps no deadlines
  EXPECT_TRUE(r.find_as<UuidV7Generator>("a"));
  EXPECT_FALSE(r.find_as<TicketSequence>("a"));
}

}  // namespace
}  // namespace ticketd
