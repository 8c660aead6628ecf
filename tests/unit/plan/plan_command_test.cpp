#include "server/plan/plan_command.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

namespace ticketd {
namespace {

struct Ran {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  return text;
}

// `ticketd plan WORDS...`, its exit status and what it printed.
Ran plan(std::initializer_list<std::string> words) {
  std::vector<std::string> args = {"ticketd", "plan"};
  args.insert(args.end(), words);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  Ran run;
  run.status = plan_command(static_cast<int>(argv.size()), argv.data(), out, err);
  run.out = read_all(out);
  run.err = read_all(err);
  return run;
}

std::string refusal(const std::string& why) {
  return "ticketd plan: " + why + " (see ticketd plan --help)\n";
}

TEST(PlanCommand, HelpNamesEveryKindAndEveryFlag) {
  const Ran r = plan({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("ticket, gapless, snowflake, uuidv7 or ulid"), std::string::npos);
  for (const char* flag :
       {"--kind", "--ids-per-second", "--years", "--front-end", "--engine", "--cores", "--servers",
        "--cache", "--start", "--max-value", "--external-mark", "--layout", "--epoch",
        "--time-bits", "--worker-bits", "--sequence-bits", "--time-unit-ms", "--figures"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(r.err, "");
}

TEST(PlanCommand, ATargetThatFitsExitsZeroAndOneThatDoesNotExitsOne) {
  Ran r = plan({"--kind", "ticket", "--ids-per-second", "100000"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.out.starts_with("kind: ticket\nfront_end: mysql\nengine: rocksdb\n"));
  EXPECT_TRUE(r.out.ends_with("\nfits: yes\n")) << r.out;
  r = plan({"--kind", "snowflake", "--layout", "instagram", "--years", "40"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.ends_with(
      "\nfits: no: the time range ends after 34.84 years, before the 40 asked for\n"))
      << r.out;
  r = plan({"--kind", "snowflake"});  // no target: answers only
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.find("fits:"), std::string::npos);
}

TEST(PlanCommand, TheLayoutFlagsChangeThePresetInAnyOrder) {
  const Ran r = plan({"--worker-bits", "10", "--kind", "snowflake", "--sequence-bits", "11",
                      "--layout", "discord", "--epoch", "2026-01-01T00:00:00Z"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("layout: 42/10/11 bits (time/worker/sequence), 1 ms ticks (discord, "
                       "changed)\nepoch: 2026-01-01T00:00:00.000Z\n"),
            std::string::npos)
      << r.out;
}

TEST(PlanCommand, FiguresListEveryRow) {
  const Ran r = plan({"--figures"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.out.starts_with("ticket/mysql/rocksdb: 62901 IDs/s on 2 cores")) << r.out;
  EXPECT_NE(r.out.find("\nsynced_write/etcd: 3.19 ms, 313 commits/s"), std::string::npos);
  EXPECT_EQ(plan({"--figures", "--kind", "ticket"}).err,
            refusal("--figures takes no other option"));
}

TEST(PlanCommand, UsageErrorsAreRefusedWithTheirReasonAndExitTwo) {
  const struct {
    std::initializer_list<std::string> words;
    std::string why;
  } cases[] = {
      {{}, "--kind is required (ticket, gapless, snowflake, uuidv7 or ulid)"},
      {{"--kind", "tickets"},
       "--kind must be ticket, gapless, snowflake, uuidv7 or ulid, not 'tickets'"},
      {{"--kind", "ticket", "--ids-per-second"}, "--ids-per-second needs a value"},
      {{"--kind", "ticket", "--ids-per-second", "0"}, "--ids-per-second must be 1..1000000000000"},
      {{"--kind", "ticket", "--ids-per-second", "-5"},
       "--ids-per-second takes a whole number (64 bits), not '-5'"},
      {{"--kind", "ticket", "--ids-per-second", "99999999999999999999"},
       "--ids-per-second takes a whole number (64 bits), not '99999999999999999999'"},
      {{"--kind", "ticket", "--ids-per-second", "1e6"},
       "--ids-per-second takes a whole number (64 bits), not '1e6'"},
      {{"--kind", "ticket", "--years", "5"},
       "--years needs --ids-per-second for kind ticket (how long its values last depends on "
       "the rate)"},
      {{"--kind", "snowflake", "--cache", "10"}, "--cache is not used by kind snowflake"},
      {{"--kind", "gapless", "--servers", "3"}, "--servers is not used by kind gapless"},
      {{"--kind", "ticket", "--layout", "twitter"}, "--layout is not used by kind ticket"},
      {{"--kind", "uuidv7", "--max-value", "10"}, "--max-value is not used by kind uuidv7"},
      {{"--kind", "snowflake", "--layout", "flake"},
       "--layout must be twitter, instagram, discord or sonyflake, not 'flake'"},
      {{"--kind", "snowflake", "--epoch", "2026-01-01"},
       "--epoch must be YYYY-MM-DDTHH:MM:SSZ, not '2026-01-01'"},
      {{"--kind", "snowflake", "--time-bits", "40"},
       "snowflake layout: time_bits + worker_bits + sequence_bits is 62; it must be 63 (the sign "
       "bit stays 0)"},
      {{"--kind", "ticket", "--front-end", "grpc"},
       "--front-end must be mysql or http, not 'grpc'"},
      {{"--kind", "ticket", "--engine", "memory"},
       "--engine must be rocksdb or etcd, not 'memory'"},
      {{"--kind", "ticket", "--cache", "0"}, "cache must be 1..1000000000"},
      {{"--kind", "ticket", "--bogus"}, "unknown argument '--bogus'"},
  };
  for (const auto& c : cases) {
    const Ran r = plan(c.words);
    EXPECT_EQ(r.status, 2) << c.why;
    EXPECT_EQ(r.err, refusal(c.why));
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
}  // namespace ticketd
