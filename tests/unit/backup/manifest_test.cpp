#include "server/backup/manifest.h"

#include <gtest/gtest.h>

#include <vector>

#include "server/core/gapless_sequence.h"
#include "server/core/issue_rate.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_record.h"
#include "storage/memory_counter_store.h"

namespace ticketd::backup {
namespace {

constexpr std::int64_t kNow = 1796169600000;  // 2026-12-02T00:00:00Z
constexpr std::int64_t kToday = kNow / IssueRateHistory::kDayMs;

const BackedUpSequence* find(const BackupManifest& m, std::string_view name) {
  for (const auto& s : m.sequences) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// A store as a server leaves it: a ticket sequence with a rate, a tombstone, a gapless
// sequence with committed, reserved and void numbers, a Snowflake mark, a run-time UUIDv7
// definition, a worker lease.
void populate(MemoryCounterStore& store) {
  SequenceRecord t{SequenceSpec{.name = "T", .start = 1, .increment = 2, .offset = 1, .cache = 500},
                   9001};
  IssueRateHistory rate;
  (void)rate.note(kToday - 3, 1200);
  (void)rate.note(kToday - 45, 999999);  // older than 30 days: not the peak
  SequenceDefinition uuid{SequenceSpec{.name = "U", .kind = SequenceKind::kUuidV7}, {}};
  std::vector<Mutation> m{
      {sequence_key("T"), encode_record(t)},
      {rate_key("T"), encode_rate_history(rate)},
      {tombstone_key("Old"), encode_tombstone(77)},
      {"gapless/G/f", encode_frontier(GaplessFrontier{4, 1, 1})},
      {"gapless/G/c/00000000000000000005", "x"},
      {"gapless/G/r/00000000000000000006", "id=6-0000000000000001 expires_at_ms=1 holder=h"},
      {"gapless/G/v/00000000000000000004", "reason=void"},
      {"snowflake/S/hwm", "v=1 tick=5"},
      {definition_key("U"), encode_definition(uuid)},
      {"worker/orders/lease/0001", "x"},
  };
  EXPECT_TRUE(store.commit(m));
}

TEST(BackupManifest, DescribesEveryKindTheStoreHolds) {
  MemoryCounterStore store;
  populate(store);
  auto m = describe_store(store, kNow);
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->sequences.size(), 5u);
  const auto* t = find(*m, "T");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, SequenceKind::kTicket);
  EXPECT_EQ(t->ceiling, 9001u);
  EXPECT_EQ(t->increment, 2u);
  EXPECT_EQ(t->cache, 500u);
  EXPECT_EQ(t->peak_per_minute, 1200u);
  const auto* old = find(*m, "Old");
  ASSERT_NE(old, nullptr);
  EXPECT_TRUE(old->tombstone);
  EXPECT_EQ(old->ceiling, 77u);
  const auto* g = find(*m, "G");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->kind, SequenceKind::kGapless);
  EXPECT_EQ(g->committed_below, 4u);
  EXPECT_EQ(g->highest_committed, 5u);
  EXPECT_EQ(g->highest_reserved, 6u);
  EXPECT_EQ(g->reserved, 1u);
  EXPECT_EQ(find(*m, "S")->kind, SequenceKind::kSnowflake);
  EXPECT_EQ(find(*m, "U")->kind, SequenceKind::kUuidV7);
  EXPECT_EQ(m->worker_records, 1u);
}

TEST(BackupManifest, AServedSequenceWithNothingStoredIsListedWithItsGrid) {
  MemoryCounterStore store;
  auto m = describe_store(
      store, kNow,
      {ServedSequence{SequenceSpec{
          .name = "Invoices", .kind = SequenceKind::kGapless, .start = 1000, .increment = 1}}});
  ASSERT_TRUE(m);
  ASSERT_EQ(m->sequences.size(), 1u);
  EXPECT_TRUE(m->sequences[0].grid_known);
  EXPECT_EQ(m->sequences[0].start, 1000u);
  EXPECT_FALSE(m->sequences[0].highest_committed);
}

TEST(BackupManifest, RoundTripsThroughItsJsonFile) {
  MemoryCounterStore store;
  populate(store);
  auto m = describe_store(store, kNow);
  ASSERT_TRUE(m);
  m->id = "backup-2026-12-02T000000.000Z";
  m->taken_at_ms = kNow;
  m->ticketd_version = "1.2.3";
  m->source = "/var/lib/ticketd";
  m->online = true;
  m->store_identity = "8d1c7a9e-0c4e-4c36-9a51-2b7c0e3f5d11";
  m->store_position = 4242;
  const std::string text = encode_manifest(*m);
  EXPECT_NE(text.find("\"store_position\": \"4242\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"checksum\": \"sha256:"), std::string::npos) << text;
  EXPECT_NE(text.find("\"taken_at\": \"2026-12-02T00:00:00.000Z\""), std::string::npos) << text;
  // Large integers travel as strings: no JSON reader rounds a ceiling.
  EXPECT_NE(text.find("\"ceiling\":\"9001\""), std::string::npos) << text;
  auto back = decode_manifest(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *m);
  // The HTTP answer is the same document with its path first.
  auto with_path = encode_manifest(*m, "/backups/x");
  EXPECT_EQ(with_path.find("\"path\": \"/backups/x\""), 4u) << with_path;
}

TEST(BackupManifest, AnEditedManifestFailsItsChecksum) {
  MemoryCounterStore store;
  populate(store);
  auto m = describe_store(store, kNow);
  ASSERT_TRUE(m);
  m->store_identity = "id";
  const std::string text = encode_manifest(*m);
  ASSERT_TRUE(decode_manifest(text));
  std::string edited = text;
  edited.replace(edited.find("\"ceiling\":\"9001\""), 16, "\"ceiling\":\"9000\"");
  auto refused = decode_manifest(edited);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("checksum"), std::string::npos) << refused.error().message;
  // A format 1 manifest (an earlier release) has none, and is read as it is.
  m->format = 1;
  auto old = decode_manifest(encode_manifest(*m));
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->format, 1);
}

// Issue 27.5: restore believes the checkpoint, and the manifest may only agree with it.
class Reconcile : public ::testing::Test {
 protected:
  void SetUp() override {
    populate(store_);
    auto d = describe_store(store_, kNow);
    ASSERT_TRUE(d);
    derived_ = *d;
    manifest_ = derived_;
    manifest_.id = "backup-x";
  }
  BackedUpSequence& in_manifest(std::string_view name) {
    for (auto& s : manifest_.sequences) {
      if (s.name == name) return s;
    }
    ADD_FAILURE() << name;
    return manifest_.sequences.front();
  }
  std::string refusal() {
    auto r = reconcile(manifest_, derived_);
    EXPECT_FALSE(r);
    return r ? std::string() : r.error().message;
  }
  MemoryCounterStore store_;
  BackupManifest derived_;
  BackupManifest manifest_;
};

TEST_F(Reconcile, AnAgreeingManifestIsTheCheckpointWithItsMetadata) {
  auto r = reconcile(manifest_, derived_);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->sequences, derived_.sequences);
  EXPECT_EQ(r->id, "backup-x");
}

TEST_F(Reconcile, ASequenceLeftOutIsRefused) {
  std::erase_if(manifest_.sequences, [](const auto& s) { return s.name == "G"; });
  EXPECT_NE(refusal().find("'G', which the manifest leaves out"), std::string::npos);
}

TEST_F(Reconcile, ARetypedGaplessSequenceIsRefused) {
  in_manifest("G").kind = SequenceKind::kTicket;
  EXPECT_NE(refusal().find("kind ticket, the checkpoint gapless"), std::string::npos);
}

TEST_F(Reconcile, ALoweredCommittedNumberIsRefused) {
  in_manifest("G").highest_committed = 1;
  EXPECT_NE(refusal().find("highest_committed 1, the checkpoint 5"), std::string::npos);
}

TEST_F(Reconcile, ALoweredTombstoneOrCeilingIsRefused) {
  in_manifest("Old").ceiling = 1;
  in_manifest("T").ceiling = 10;
  const auto message = refusal();
  EXPECT_NE(message.find("'Old': the manifest says ceiling 1, the checkpoint 77"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("'T': the manifest says ceiling 10, the checkpoint 9001"),
            std::string::npos)
      << message;
}

TEST_F(Reconcile, OnlySequencesWithNothingStoredMayBeListedBeyondTheCheckpoint) {
  manifest_.sequences.push_back(BackedUpSequence{.name = "Fresh",
                                                 .kind = SequenceKind::kGapless,
                                                 .start = 100,
                                                 .increment = 1,
                                                 .offset = 0,
                                                 .grid_known = true});
  auto r = reconcile(manifest_, derived_);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_NE(find(*r, "Fresh"), nullptr);
  manifest_.sequences.push_back(
      BackedUpSequence{.name = "Ghost", .kind = SequenceKind::kTicket, .ceiling = 5});
  EXPECT_NE(refusal().find("ticket sequence 'Ghost' with stored state"), std::string::npos);
}

TEST(BackupManifest, RefusesDocumentsItCannotTrust) {
  for (const char* bad : {
           "",
           "[]",
           "{\"format\":2,\"taken_at_ms\":1,\"sequences\":[]}",
           "{\"format\":3,\"taken_at_ms\":1,\"sequences\":[]}",
           "{\"format\":1,\"sequences\":[]}",
           "{\"format\":1,\"taken_at_ms\":1}",
           "{\"format\":1,\"taken_at_ms\":1,\"sequences\":[{\"kind\":\"ticket\"}]}",
           "{\"format\":1,\"taken_at_ms\":1,\"sequences\":[{\"name\":\"a\",\"kind\":\"ticket\"}]}",
           "{\"format\":1,\"taken_at_ms\":1,\"sequences\":[{\"name\":\"a\",\"kind\":\"x\"}]}",
           "{\"format\":1,\"taken_at_ms\":1,\"sequences\":[{\"name\":\"a\",\"kind\":\"ticket\","
           "\"ceiling\":\"-1\"}]}",
       }) {
    EXPECT_FALSE(decode_manifest(bad)) << bad;
  }
}

TEST(BackupManifest, AnUnreadableRecordFailsTheBackupInsteadOfSkippingIt) {
  MemoryCounterStore store;
  std::vector<Mutation> m{{sequence_key("T"), "garbage"}};
  ASSERT_TRUE(store.commit(m));
  auto r = describe_store(store, kNow);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, StorageErrc::kCorruption);
}

}  // namespace
}  // namespace ticketd::backup
