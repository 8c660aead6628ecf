#include "server/base/error_category.h"

#include <gtest/gtest.h>

#include <boost/system/error_code.hpp>

#include "server/core/ticket_errc.h"
#include "server/http/http_errc.h"
#include "storage/counter_store.h"

namespace ticketd {
namespace {

enum class Sample { kOne = 1, kTwo };

const char* describe_sample(Sample s) noexcept {
  switch (s) {
    case Sample::kOne:
      return "one";
    case Sample::kTwo:
      return "two";
  }
  return nullptr;
}

TEST(EnumCategory, NamesEachEnumeratorAndFallsBackForOthers) {
  const EnumCategory<Sample> category("ticketd.sample", describe_sample, "unknown sample");
  EXPECT_STREQ(category.name(), "ticketd.sample");
  EXPECT_EQ(category.message(1), "one");
  EXPECT_EQ(category.message(2), "two");
  EXPECT_EQ(category.message(0), "unknown sample");
  EXPECT_EQ(category.message(99), "unknown sample");
  const boost::system::error_code code(2, category);
  EXPECT_EQ(code.message(), "two");
}

// The project's categories are built on it: names and messages as before.
TEST(EnumCategory, TheProjectCategoriesKeepTheirNamesAndMessages) {
  const boost::system::error_code ticket = make_error_code(TicketErrc::kExhausted);
  EXPECT_STREQ(ticket.category().name(), "ticketd.ticket");
  EXPECT_EQ(ticket.message(), "sequence exhausted: the next value would pass max_value");
  EXPECT_EQ(boost::system::error_code(999, ticket_category()).message(), "unknown ticket error");
  const boost::system::error_code http = http::make_error_code(http::HttpErrc::kNoRoute);
  EXPECT_STREQ(http.category().name(), "ticketd.http");
  EXPECT_EQ(http.message(), "no such route");
  EXPECT_STREQ(storage_category().name(), "ticketd.storage");
}

}  // namespace
}  // namespace ticketd
