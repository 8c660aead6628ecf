#include "server/app/fd_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace ticketd {
namespace {

TEST(FdLimit, TheConnectionCapsAndTheReserveMustFitUnderTheLimit) {
  EXPECT_EQ(fd_budget_problem(1024, 500, 268), "");  // exactly 1024
  const std::string p = fd_budget_problem(1024, 500, 269);
  EXPECT_NE(p.find("mysql.max_connections (500) + http.max_connections (269) + 256"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("= 1025 exceeds the open-file limit of 1024"), std::string::npos) << p;
  EXPECT_EQ(fd_budget_problem(UINT64_MAX, 1000000, 1000000), "");
  EXPECT_NE(fd_budget_problem(256, 1, 1), "");  // the reserve alone fills 256
}

TEST(FdLimit, RaiseLeavesTheSoftLimitAtTheHardLimitWherePossible) {
  const FdLimit l = raise_fd_limit();
  rlimit r{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
  EXPECT_EQ(l.soft, r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : r.rlim_cur);
  EXPECT_LE(l.soft, l.hard);
  if (r.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(r.rlim_cur, r.rlim_max);
  }
}

}  // namespace
}  // namespace ticketd
