// The exact bytes of every record type the engine keeps in the store, as written before the
// shared record codec (server/base/record_codec.h) replaced each type's hand-written one: the
// strings below were printed by the previous encoders. Data already on disk must stay
// readable, so each encoder must still write these bytes and each decoder must read them.
#include <gtest/gtest.h>

#include <string_view>

#include "server/core/gapless_sequence.h"
#include "server/core/sequence_record.h"
#include "server/core/snowflake_generator.h"
#include "server/core/worker_pool_service.h"

namespace ticketd {
namespace {

struct SequenceCase {
  SequenceRecord record;
  std::string_view text;
};

const SequenceCase kSequenceCases[] = {
    {{SequenceSpec{"Tickets32", SequenceKind::kTicket, 5, 2, 1, 4294967295u, 7}, 41},
     "v=1 kind=ticket start=5 increment=2 offset=1 max_value=4294967295 cache=7 ceiling=41"},
    {{SequenceSpec{"Invoices", SequenceKind::kGapless, 1, 1, 0, 9223372036854775807u, 1}, 0},
     "v=1 kind=gapless start=1 increment=1 offset=0 max_value=9223372036854775807 cache=1 "
     "ceiling=0"},
    {{SequenceSpec{"Sf", SequenceKind::kSnowflake, 1, 1, 0, 9223372036854775807u, 1000},
      18446744073709551615u},
     "v=1 kind=snowflake start=1 increment=1 offset=0 max_value=9223372036854775807 cache=1000 "
     "ceiling=18446744073709551615"},
};

TEST(StoredRecordFormats, SequenceRecordsAreByteIdentical) {
  for (const auto& c : kSequenceCases) {
    EXPECT_EQ(encode_record(c.record), c.text) << c.record.spec.name;
    EXPECT_EQ(decode_record(c.record.spec.name, c.text), c.record) << c.record.spec.name;
  }
}

TEST(StoredRecordFormats, TombstonesAreByteIdentical) {
  EXPECT_EQ(encode_tombstone(123), "v=1 ceiling=123");
  EXPECT_EQ(encode_tombstone(0), "v=1 ceiling=0");
  EXPECT_EQ(decode_tombstone("v=1 ceiling=123"), 123u);
  EXPECT_EQ(decode_tombstone("v=1 ceiling=0"), 0u);
}

TEST(StoredRecordFormats, GaplessFrontiersAreByteIdentical) {
  const GaplessFrontier f{11, 1, 2};
  EXPECT_EQ(encode_frontier(f), "first_open=11 first=1 step=2");
  EXPECT_EQ(decode_frontier("first_open=11 first=1 step=2"), f);
}

TEST(StoredRecordFormats, GaplessReservationsAreByteIdentical) {
  struct Case {
    Reservation reservation;
    std::string_view text;
  };
  const Case cases[] = {
      {{"7-00ff00ff00ff00ff", 7, "mysql conn 12", 1767225630000},
       "id=7-00ff00ff00ff00ff expires_at_ms=1767225630000 holder=mysql conn 12"},
      {{"3-0000000000000001", 3, "", -1}, "id=3-0000000000000001 expires_at_ms=-1 holder="},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(encode_reservation(c.reservation), c.text);
    const auto back = decode_reservation(c.reservation.number, c.text);
    ASSERT_TRUE(back) << c.text;
    EXPECT_EQ(back->id, c.reservation.id);
    EXPECT_EQ(back->number, c.reservation.number);
    EXPECT_EQ(back->holder, c.reservation.holder);
    EXPECT_EQ(back->expires_at_unix_ms, c.reservation.expires_at_unix_ms);
  }
  // The id names its number; a record filed under another number is damage.
  EXPECT_FALSE(decode_reservation(8, cases[0].text));
}

TEST(StoredRecordFormats, WorkerSlotsAreByteIdentical) {
  struct Case {
    WorkerSlotRecord record;
    std::string_view text;
  };
  const Case cases[] = {
      {{.generation = 7,
        .released = true,
        .holder = "orders 7f9c=x",
        .granted_at_ms = -5,
        .ttl_ms = 10000,
        .expires_at_ms = 1767225610000,
        .not_before_ms = 1767225600000,
        .high_water_ms = 1767225605000,
        .released_at_ms = 1767225606000},
       "v=1 gen=7 state=released granted_at_ms=-5 ttl_ms=10000 expires_at_ms=1767225610000 "
       "not_before_ms=1767225600000 high_water_ms=1767225605000 released_at_ms=1767225606000 "
       "holder=orders 7f9c=x"},
      {{.generation = 1,
        .released = false,
        .holder = "",
        .granted_at_ms = 1767225600000,
        .ttl_ms = 1000,
        .expires_at_ms = 1767225601000},
       "v=1 gen=1 state=leased granted_at_ms=1767225600000 ttl_ms=1000 expires_at_ms=1767225601000 "
       "not_before_ms=0 high_water_ms=0 released_at_ms=0 holder="},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(encode_worker_slot(c.record), c.text);
    EXPECT_EQ(decode_worker_slot(c.text), c.record) << c.text;
  }
}

TEST(StoredRecordFormats, SnowflakeHighWaterMarksAreByteIdentical) {
  const SnowflakeHwmRecord a{1767225602000, 1767225600000};
  const SnowflakeHwmRecord b{-1, 0};
  EXPECT_EQ(encode_hwm(a), "v=1 hwm_unix_ms=1767225602000 written_at_unix_ms=1767225600000");
  EXPECT_EQ(encode_hwm(b), "v=1 hwm_unix_ms=-1 written_at_unix_ms=0");
  EXPECT_EQ(decode_hwm("v=1 hwm_unix_ms=1767225602000 written_at_unix_ms=1767225600000"), a);
  EXPECT_EQ(decode_hwm("v=1 hwm_unix_ms=-1 written_at_unix_ms=0"), b);
}

TEST(StoredRecordFormats, VersionedRecordsOfAnUnknownVersionAreRefused) {
  EXPECT_FALSE(decode_record("s",
                             "v=2 kind=ticket start=1 increment=1 offset=0 max_value=9 "
                             "cache=1 ceiling=0"));
  EXPECT_FALSE(decode_tombstone("v=2 ceiling=5"));
  EXPECT_FALSE(decode_hwm("v=2 hwm_unix_ms=1 written_at_unix_ms=1"));
  EXPECT_FALSE(decode_worker_slot(
      "v=2 gen=1 state=leased granted_at_ms=0 ttl_ms=1 expires_at_ms=1 not_before_ms=0 "
      "high_water_ms=0 released_at_ms=0 holder="));
}

}  // namespace
}  // namespace ticketd
