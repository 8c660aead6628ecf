#include "server/restride/restride_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ticketd::restride {
namespace {

ServerState server(std::string name, std::uint64_t inc, std::uint64_t off, std::uint64_t ceiling,
                   std::uint64_t fence = 0, bool restrided = false) {
  return ServerState{.server = std::move(name),
                     .exists = true,
                     .increment = inc,
                     .offset = off,
                     .durable_ceiling = ceiling,
                     .fence = fence,
                     .max_value = 1000000,
                     .cache = 100,
                     .next_value = ceiling + 1,
                     .restrided = restrided};
}

TEST(RestridePlan, GridsAreIncrementNWithOffsetsInOrder) {
  EXPECT_EQ(grid_of(0, 3).increment, 3u);
  EXPECT_EQ(grid_of(0, 3).offset, 1u);
  EXPECT_EQ(grid_of(2, 3).offset, 3u);
}

TEST(RestridePlan, FirstValueIsOnTheGridStrictlyAboveTheFloor) {
  EXPECT_EQ(first_above(100, Grid{3, 1}), 103u);
  EXPECT_EQ(first_above(100, Grid{3, 2}), 101u);
  EXPECT_EQ(first_above(100, Grid{3, 3}), 102u);
  EXPECT_EQ(first_above(101, Grid{3, 2}), 104u);  // never the floor itself
}

TEST(RestridePlan, FloorIsAboveEveryCeilingAndFencePlusTheMargin) {
  std::vector<ServerState> s{server("a", 2, 1, 5001), server("b", 2, 2, 7000),
                             ServerState{.server = "c"}};
  auto f = floor_above(s, 1000);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, 8000u);
  s[0].fence = 9000;  // an earlier, interrupted run
  f = floor_above(s, 1000);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, 10000u);
}

TEST(RestridePlan, FloorIsRefusedNearMaxValueOrWithoutAnyServer) {
  std::vector<ServerState> s{server("a", 2, 1, 999000), server("b", 2, 2, 10)};
  EXPECT_FALSE(floor_above(s, 1000));  // 999000 + 1000 leaves nothing for offset 2 of 2
  EXPECT_FALSE(floor_above(s, 5000));
  EXPECT_TRUE(floor_above(s, 100));
  EXPECT_FALSE(floor_above({ServerState{.server = "new"}}, 10));
}

TEST(RestridePlan, AlreadyOnGridOnlyWhenEveryServerIsRestridedUnfencedOnItsOwnGrid) {
  std::vector<ServerState> s{server("a", 3, 1, 10, 0, true), server("b", 3, 2, 10, 0, true),
                             server("c", 3, 3, 10, 0, true)};
  EXPECT_TRUE(already_on_grid(s));
  s[1].fence = 50;
  EXPECT_FALSE(already_on_grid(s));
  s[1].fence = 0;
  s[2].restrided = false;
  EXPECT_FALSE(already_on_grid(s));
  s[2].restrided = true;
  s.push_back(ServerState{.server = "d"});
  EXPECT_FALSE(already_on_grid(s));
}

TEST(RestridePlan, CheckAfterNamesEveryServerOffItsGrid) {
  std::vector<ServerState> s{server("a", 3, 1, 2000, 0, true), server("b", 2, 2, 2000, 0, true),
                             server("c", 3, 3, 500, 0, true)};
  const auto problems = check_after(s, 1000);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "b: grid 2/2, expected 3/2");
  EXPECT_EQ(problems[1], "c: next value 501 is not above the floor 1000");
  s[1].increment = 3;
  s[2].next_value = 1002;
  EXPECT_TRUE(check_after(s, 1000).empty());
}

}  // namespace
}  // namespace ticketd::restride
