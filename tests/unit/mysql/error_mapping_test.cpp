#include "server/mysql/error_mapping.h"

#include <gtest/gtest.h>

#include "server/core/snowflake_generator.h"
#include "server/core/ticket_errc.h"
#include "storage/counter_store.h"

namespace ticketd::mysql {
namespace {

TEST(MySqlErrorMapping, EveryEngineErrorHasARow) {
  struct Case {
    ErrorCode code;
    std::uint16_t mysql_errno;
    const char* state;
  };
  const Case cases[] = {
      {TicketErrc::kUnknownSequence, 1146, "42S02"},
      {TicketErrc::kAlreadyExists, 1050, "42S01"},
      {TicketErrc::kExhausted, 4084, "HY000"},
      {TicketErrc::kInvalidArgument, 1210, "HY000"},
      {TicketErrc::kStorageFailed, 1105, "HY000"},
      {TicketErrc::kRetryLater, 1205, "HY000"},
      {TicketErrc::kShuttingDown, 1053, "08S01"},
      {TicketErrc::kWrongKind, 1235, "42000"},
      {TicketErrc::kReservationNotFound, 1180, "HY000"},
      {TicketErrc::kReservationEnded, 1180, "HY000"},
      {TicketErrc::kQueueTimeout, 1205, "HY000"},
      {TicketErrc::kNotLeader, 1290, "HY000"},
      {StorageErrc::kNoSpace, 1105, "HY000"},
      {SnowflakeErrc::kClockMovedBackwards, 1105, "HY000"},
      {SnowflakeErrc::kWorkerLeaseLost, 1290, "HY000"},
  };
  for (const auto& c : cases) {
    auto e = to_err(Error{c.code, "detail"}, "tickets.T");
    EXPECT_EQ(e.code, c.mysql_errno) << c.code.message();
    EXPECT_EQ(e.sql_state, c.state) << c.code.message();
  }
  EXPECT_EQ(to_err(Error{TicketErrc::kUnknownSequence, {}}, "tickets.T").message,
            "Table 'tickets.T' doesn't exist");
  EXPECT_EQ(to_err(Error{TicketErrc::kStorageFailed, "no space"}, "x").message, "no space");
  EXPECT_EQ(to_err(Error{SnowflakeErrc::kWorkerLeaseLost, "lease of worker 3 lost"}, "x").message,
            "lease of worker 3 lost");
}

}  // namespace
}  // namespace ticketd::mysql
