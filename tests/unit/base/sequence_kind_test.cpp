#include "server/base/sequence_kind.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

namespace ticketd {
namespace {

TEST(SequenceKindRows, EveryRowNamesItsKindAndParsesBack) {
  for (const auto& row : kSequenceKindRows) {
    EXPECT_EQ(&kind_row(row.kind), &row);
    EXPECT_EQ(parse_kind(row.name), row.kind) << row.name;
  }
  EXPECT_FALSE(parse_kind("Ticket"));  // names are exact
  EXPECT_FALSE(parse_kind(""));
  EXPECT_EQ(kind_names_text(), "ticket, gapless, snowflake, uuidv7 or ulid");
}

TEST(SequenceKindRows, KeysAreTheKindsOwn) {
  EXPECT_TRUE(kind_takes(SequenceKind::kTicket, kind_key::kCache));
  EXPECT_TRUE(kind_takes(SequenceKind::kTicket, kind_key::kMaxRate));
  EXPECT_FALSE(kind_takes(SequenceKind::kTicket, kind_key::kOrder));
  EXPECT_TRUE(kind_takes(SequenceKind::kGapless, kind_key::kOrder));
  EXPECT_FALSE(kind_takes(SequenceKind::kGapless, kind_key::kCache));
  for (const auto key : kAllKindKeys) {
    EXPECT_FALSE(kind_takes(SequenceKind::kSnowflake, key)) << key;
    EXPECT_FALSE(kind_takes(SequenceKind::kUuidV7, key)) << key;
    EXPECT_FALSE(kind_takes(SequenceKind::kUlid, key)) << key;
  }
  // Every key a row names is one the config loader and the HTTP body reader know.
  for (const auto& row : kSequenceKindRows) {
    for (const auto key : row.keys) {
      EXPECT_NE(std::find(std::begin(kAllKindKeys), std::end(kAllKindKeys), key),
                std::end(kAllKindKeys))
          << key;
    }
  }
}

TEST(SequenceKindRows, OnlyTicketSequencesHandOutBlocks) {
  for (const auto& row : kSequenceKindRows) {
    EXPECT_EQ(row.blocks, row.kind == SequenceKind::kTicket) << row.name;
  }
  EXPECT_FALSE(kind_row(SequenceKind::kUuidV7).integer_ids);
  EXPECT_FALSE(kind_row(SequenceKind::kUlid).integer_ids);
  EXPECT_EQ(kind_row(SequenceKind::kUlid).text_id_length, 26u);
}

}  // namespace
}  // namespace ticketd
