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

TEST(MySqlErrorMapping, EveryFrontEndLimitHasARow) {
  struct Case {
    LimitErrc code;
    std::uint16_t mysql_errno;
    const char* state;
  };
  const Case cases[] = {
      {LimitErrc::kTooManyStatements, 1105, "HY000"}, {LimitErrc::kNestedTooDeep, 1064, "42000"},
      {LimitErrc::kValueTooLarge, 1301, "HY000"},     {LimitErrc::kTooManyVariables, 1105, "HY000"},
      {LimitErrc::kLongDataTooLarge, 1105, "HY000"},  {LimitErrc::kConnectionMemory, 4082, "HY000"},
      {LimitErrc::kGlobalMemory, 4081, "HY000"},
  };
  for (const auto& c : cases) {
    auto e = to_err(c.code, "detail");
    EXPECT_EQ(e.code, c.mysql_errno) << static_cast<int>(c.code);
    EXPECT_EQ(e.sql_state, c.state) << static_cast<int>(c.code);
    EXPECT_EQ(e.message, "detail");
  }
}

TEST(MySqlErrorMapping, MemoryVerdictsNameTheLimitAndTheUse) {
  MemoryBudget global(1000);
  ConnectionMemory memory(600, &global);
  ASSERT_EQ(memory.try_charge(500), ConnectionMemory::Verdict::kOk);
  EXPECT_EQ(to_err(ConnectionMemory::Verdict::kConnectionLimit, memory).message,
            "Connection memory limit 600 bytes exceeded. Consumed 500 bytes.");
  auto g = to_err(ConnectionMemory::Verdict::kGlobalLimit, memory);
  EXPECT_EQ(g.code, 4081);
  EXPECT_EQ(g.message, "Global connection memory limit 1000 bytes exceeded. Consumed 500 bytes.");
}

TEST(MySqlErrorMapping, ClipsNamesWithoutSplittingACharacter) {
  EXPECT_EQ(clip_for_message("short"), "short");
  EXPECT_EQ(clip_for_message(std::string(100, 'n')), std::string(64, 'n'));
  // 63 ASCII bytes and a 2-byte character across the cut: the character goes whole.
  EXPECT_EQ(clip_for_message(std::string(63, 'a') + "\xc3\xa9tail"), std::string(63, 'a'));
  EXPECT_EQ(clip_utf8("\xe2\x82\xac\xe2\x82\xac", 4), "\xe2\x82\xac");
}

}  // namespace
}  // namespace ticketd::mysql
