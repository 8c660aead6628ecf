#include "server/base/record_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ticketd {
namespace {

TEST(RecordWriter, WritesFieldsInOrderWithTheVersionFirst) {
  EXPECT_EQ(RecordWriter(1).add("ceiling", std::uint64_t{41}).finish(), "v=1 ceiling=41");
  EXPECT_EQ(RecordWriter(3).add("a", -5).add("b", "x").finish(), "v=3 a=-5 b=x");
  EXPECT_EQ(RecordWriter().add("first", 1).add("step", 2).finish(), "first=1 step=2");
  EXPECT_EQ(RecordWriter().finish(), "");
  EXPECT_EQ(RecordWriter().add("k", "").finish(), "k=");
}

TEST(RecordWriter, TheRestFieldHoldsAnyBytes) {
  EXPECT_EQ(RecordWriter(1).add("gen", 2).finish("holder", " a=b  c "),
            "v=1 gen=2 holder= a=b  c ");
  EXPECT_EQ(RecordWriter().finish("holder", ""), "holder=");
}

TEST(RecordWriter, RefusesValuesThatWouldNotReadBack) {
  EXPECT_THROW(RecordWriter().add("k", "a b"), std::invalid_argument);
  EXPECT_THROW(RecordWriter().add("", "x"), std::invalid_argument);
  EXPECT_THROW(RecordWriter().add("a=b", "x"), std::invalid_argument);
  EXPECT_THROW(RecordWriter().add("a b", "x"), std::invalid_argument);
  EXPECT_THROW((void)RecordWriter().finish("", "x"), std::invalid_argument);
}

TEST(RecordView, ReadsBackWhatTheWriterWrote) {
  const std::string text =
      RecordWriter(1).add("first", 7).add("at", -3).add("kind", "ticket").finish("holder", "h 1=2");
  const auto rec = RecordView::parse(text, "holder");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->version(), 1u);
  EXPECT_TRUE(rec->version_is(1));
  EXPECT_FALSE(rec->version_is(2));
  EXPECT_EQ(rec->get_u64("first"), 7u);
  EXPECT_EQ(rec->get_i64("at"), -3);
  EXPECT_EQ(rec->get_u64("at"), std::nullopt);  // negative: not an unsigned value
  EXPECT_EQ(rec->get("kind"), "ticket");
  EXPECT_EQ(rec->get("holder"), "h 1=2");
  EXPECT_FALSE(rec->has("missing"));
  ASSERT_EQ(rec->fields().size(), 5u);
  EXPECT_EQ(rec->fields()[0].first, "v");
  EXPECT_EQ(rec->fields()[4].first, "holder");
}

TEST(RecordView, AnUnversionedLineHasNoVersion) {
  const auto rec = RecordView::parse("first=1 step=2");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->version(), std::nullopt);
  EXPECT_FALSE(rec->version_is(1));
  EXPECT_TRUE(rec->version_is(1, /*missing_ok=*/true));
}

TEST(RecordView, AcceptsReorderedFieldsExtraSpacesAndUnknownKeys) {
  const auto rec = RecordView::parse("  step=2   first=1 added_in_v2=yes ");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->get_u64("first"), 1u);
  EXPECT_EQ(rec->get_u64("step"), 2u);
  EXPECT_EQ(rec->get("added_in_v2"), "yes");
  EXPECT_TRUE(RecordView::parse(""));
}

TEST(RecordView, ValuesMayContainEqualsSigns) {
  const auto rec = RecordView::parse("a=b=c");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->get("a"), "b=c");
}

TEST(RecordView, TheRestFieldEndsParsing) {
  const auto rec = RecordView::parse("id=1 holder=x y=z holder=again", "holder");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->get("holder"), "x y=z holder=again");
  EXPECT_FALSE(rec->has("y"));
  // Without naming it, the same line is fields like any other, and "holder" is given twice.
  EXPECT_FALSE(RecordView::parse("id=1 holder=x y=z holder=again"));
  // A key that merely starts with the rest key's name is an ordinary field.
  const auto longer = RecordView::parse("holders=2 holder=h", "holder");
  ASSERT_TRUE(longer);
  EXPECT_EQ(longer->get("holders"), "2");
  EXPECT_EQ(longer->get("holder"), "h");
}

TEST(RecordView, RefusesMalformedLines) {
  for (std::string_view bad :
       {"garbage", "a=1 b", "=1", "a=1 =2", "a=1 a=2", "v=x a=1", "v= a=1", "v=1 v=1", "v=-1"}) {
    EXPECT_FALSE(RecordView::parse(bad)) << bad;
  }
}

TEST(RecordView, NoStrictPrefixReadsAsTheWholeRecord) {
  const std::string text = RecordWriter(1).add("a", 1).add("bb", 22).finish("holder", "h h");
  auto whole = [](std::string_view t) {
    const auto rec = RecordView::parse(t, "holder");
    return rec && rec->version_is(1) && rec->get_u64("a") == 1u && rec->get_u64("bb") == 22u &&
           rec->get("holder") == "h h";
  };
  EXPECT_TRUE(whole(text));
  for (std::size_t n = 0; n < text.size(); ++n) {
    EXPECT_FALSE(whole(std::string_view(text).substr(0, n))) << n;
  }
}

}  // namespace
}  // namespace ticketd
