#include "server/base/command_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/base/exit_code.h"

namespace ticketd {
namespace {

// argv-style words for the parser (it reads, never writes, them).
struct Words {
  explicit Words(std::vector<std::string> w) : text(std::move(w)) {
    for (auto& s : text) ptrs.push_back(s.data());
  }
  std::span<char* const> span() const { return ptrs; }
  std::vector<std::string> text;
  std::vector<char*> ptrs;
};

TEST(CommandLine, TakesValuesAndSwitchesInAnyOrder) {
  std::string dir, to;
  bool force = false;
  const CommandOption rows[] = {text_option("--data-dir", dir), text_option("--to", to),
                                switch_option("--force", force)};
  Words w({"--to", "out", "--force", "--data-dir", "d", "--to", "later"});
  EXPECT_EQ(parse_command_line(w.span(), rows), "");
  EXPECT_EQ(dir, "d");
  EXPECT_EQ(to, "later");  // a later one wins
  EXPECT_TRUE(force);
}

TEST(CommandLine, AValueIsTheNextWordWhateverItLooksLike) {
  std::string dir;
  bool force = false;
  const CommandOption rows[] = {text_option("--data-dir", dir), switch_option("--force", force)};
  Words w({"--data-dir", "--force"});
  EXPECT_EQ(parse_command_line(w.span(), rows), "");
  EXPECT_EQ(dir, "--force");
  EXPECT_FALSE(force);
}

TEST(CommandLine, SaysWhatIsWrongWithTheFirstBadWord) {
  std::string dir;
  const CommandOption rows[] = {
      text_option("--data-dir", dir),
      {"--margin", true, [](const std::string& v) {
         return v == "0" ? std::string("--margin must be a positive integer") : std::string();
       }}};
  EXPECT_EQ(parse_command_line(Words({"--data-dir"}).span(), rows), "--data-dir needs a value");
  EXPECT_EQ(parse_command_line(Words({"--bogus", "--data-dir"}).span(), rows),
            "unknown argument '--bogus'");
  EXPECT_EQ(parse_command_line(Words({"--margin", "0"}).span(), rows),
            "--margin must be a positive integer");
  EXPECT_EQ(parse_command_line(Words({"mysql://u:secret@h/db"}).span(), rows,
                               [](std::string_view) { return std::string("unexpected URL"); }),
            "unexpected URL");
  EXPECT_EQ(parse_command_line(Words({}).span(), rows), "");
}

TEST(CommandLine, HasWordFindsAFlagAnywhere) {
  EXPECT_TRUE(has_word(Words({"--config", "c", "-h"}).span(), {"--help", "-h"}));
  EXPECT_FALSE(has_word(Words({"--config", "c"}).span(), {"--help", "-h"}));
}

// The statuses users see, unchanged by their move into one enum.
TEST(ExitCode, StatusesAndToolErrorsKeepTheirNumbers) {
  EXPECT_EQ(exit_status(ExitCode::kOk), 0);
  EXPECT_EQ(exit_status(ExitCode::kFailed), 1);
  EXPECT_EQ(exit_status(ExitCode::kRefused), 2);
  EXPECT_EQ(exit_status(ExitCode::kCannotOpen), 3);
  EXPECT_EQ(exit_status(ExitCode::kRestartAsFollower), 75);
  EXPECT_EQ(exit_code(make_error_code(ToolErrc::kRefused)), ExitCode::kRefused);
  EXPECT_EQ(exit_code(make_error_code(ToolErrc::kAlreadyExists)), ExitCode::kFailed);
  EXPECT_EQ(exit_code(make_error_code(ToolErrc::kUnreachable)), ExitCode::kFailed);
  EXPECT_EQ(std::string(tool_category().name()), "ticketd.tool");
  EXPECT_EQ(make_error_code(ToolErrc::kRefused).message(), "refused: nothing was done");
}

}  // namespace
}  // namespace ticketd
