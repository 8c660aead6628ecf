#include "server/mysql/connection_memory.h"

#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

namespace ticketd::mysql {
namespace {

using Verdict = ConnectionMemory::Verdict;

TEST(ConnectionMemory, RefusesBeyondItsOwnLimitAndChargesNothing) {
  MemoryBudget global(1000);
  ConnectionMemory m(100, &global);
  EXPECT_EQ(m.try_charge(60), Verdict::kOk);
  EXPECT_EQ(m.try_charge(41), Verdict::kConnectionLimit);
  EXPECT_EQ(m.used(), 60u);
  EXPECT_EQ(global.used(), 60u);
  EXPECT_EQ(m.try_charge(40), Verdict::kOk);
  m.release(100);
  EXPECT_EQ(global.used(), 0u);
}

TEST(ConnectionMemory, RefusesBeyondTheGlobalBudget) {
  MemoryBudget global(100);
  ConnectionMemory a(80, &global);
  ConnectionMemory b(80, &global);
  EXPECT_EQ(a.try_charge(70), Verdict::kOk);
  EXPECT_EQ(b.try_charge(40), Verdict::kGlobalLimit);
  EXPECT_EQ(b.used(), 0u);
  EXPECT_EQ(b.try_charge(30), Verdict::kOk);
  EXPECT_EQ(global.used(), 100u);
}

TEST(ConnectionMemory, GivesEverythingBackWhenDestroyedOrReplaced) {
  MemoryBudget global(1000);
  {
    ConnectionMemory m(500, &global);
    ASSERT_EQ(m.try_charge(300), Verdict::kOk);
    ConnectionMemory moved(std::move(m));
    EXPECT_EQ(global.used(), 300u);
    moved = ConnectionMemory(500, &global);  // COM_RESET_CONNECTION
    EXPECT_EQ(global.used(), 0u);
    ASSERT_EQ(moved.try_charge(10), Verdict::kOk);
  }
  EXPECT_EQ(global.used(), 0u);
}

TEST(MemoryBudget, NeverPassesItsLimitUnderConcurrentCharges) {
  MemoryBudget global(10000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&global] {
      for (int i = 0; i < 100000; ++i) {
        if (global.try_reserve(7)) {
          EXPECT_LE(global.used(), 10000u);
          global.release(7);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(global.used(), 0u);
  EXPECT_FALSE(global.try_reserve(10001));
  EXPECT_TRUE(global.try_reserve(10000));
}

}  // namespace
}  // namespace ticketd::mysql
