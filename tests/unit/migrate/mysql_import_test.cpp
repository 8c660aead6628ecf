#include "server/migrate/mysql_import.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticketd::migrate {
namespace {

struct UrlCase {
  std::string_view label;
  std::string_view text;
  std::optional<MysqlUrl> url;  // none: refused
  std::string_view masked;      // masked(url) when accepted
};

MysqlUrl url(std::string user, std::optional<std::string> password, std::string host,
             std::uint16_t port, std::string database) {
  return MysqlUrl{std::move(user), std::move(password), std::move(host), port, std::move(database)};
}

const UrlCase kUrlCases[] = {
    {"full", "mysql://ticket:s3cret@10.0.0.5:3307/tickets",
     url("ticket", "s3cret", "10.0.0.5", 3307, "tickets"),
     "mysql://ticket:***@10.0.0.5:3307/tickets"},
    {"no password", "mysql://ticket@db.example:3306/tickets",
     url("ticket", std::nullopt, "db.example", 3306, "tickets"),
     "mysql://ticket@db.example:3306/tickets"},
    {"empty password", "mysql://ticket:@h:1/d", url("ticket", "", "h", 1, "d"),
     "mysql://ticket:***@h:1/d"},
    {"default port", "mysql://u:p@h/d", url("u", "p", "h", 3306, "d"), "mysql://u:***@h:3306/d"},
    {"escaped password", "mysql://u:p%40ss%3Aw%2Fd@h:3306/d", url("u", "p@ss:w/d", "h", 3306, "d"),
     "mysql://u:***@h:3306/d"},
    {"raw @ in password", "mysql://u:a@b@h:3306/d", url("u", "a@b", "h", 3306, "d"),
     "mysql://u:***@h:3306/d"},
    {"ipv6", "mysql://u@[::1]:3306/d", url("u", std::nullopt, "::1", 3306, "d"),
     "mysql://u@[::1]:3306/d"},
    {"ipv6 no port", "mysql://u@[::1]/d", url("u", std::nullopt, "::1", 3306, "d"),
     "mysql://u@[::1]:3306/d"},
    {"escaped user", "mysql://a%20b@h:1/d", url("a b", std::nullopt, "h", 1, "d"),
     "mysql://a%20b@h:1/d"},
    {"other scheme", "postgres://u:p@h:1/d", std::nullopt, ""},
    {"no scheme", "u:p@h:1/d", std::nullopt, ""},
    {"no database", "mysql://u:p@h:1", std::nullopt, ""},
    {"empty database", "mysql://u:p@h:1/", std::nullopt, ""},
    {"database with slash", "mysql://u:p@h:1/a/b", std::nullopt, ""},
    {"query string", "mysql://u:p@h:1/d?ssl=1", std::nullopt, ""},
    {"no user", "mysql://h:1/d", std::nullopt, ""},
    {"empty user", "mysql://:p@h:1/d", std::nullopt, ""},
    {"no host", "mysql://u:p@:1/d", std::nullopt, ""},
    {"port zero", "mysql://u:p@h:0/d", std::nullopt, ""},
    {"port too big", "mysql://u:p@h:65536/d", std::nullopt, ""},
    {"port not a number", "mysql://u:p@h:x1/d", std::nullopt, ""},
    {"empty port", "mysql://u:p@h:/d", std::nullopt, ""},
    {"bad escape", "mysql://u:p%4@h:1/d", std::nullopt, ""},
    {"bad escape at end", "mysql://u:p%@h:1/d", std::nullopt, ""},
    {"unclosed bracket", "mysql://u@[::1:3306/d", std::nullopt, ""},
};

TEST(MigrateUrl, ParsesAndMasksEveryForm) {
  for (const auto& c : kUrlCases) {
    auto r = parse_mysql_url(c.text);
    if (!c.url) {
      ASSERT_FALSE(r) << c.label;
      EXPECT_EQ(r.error().code, ImportErrc::kBadUrl) << c.label;
      continue;
    }
    ASSERT_TRUE(r) << c.label << ": " << r.error().message;
    EXPECT_EQ(r->user, c.url->user) << c.label;
    EXPECT_EQ(r->password, c.url->password) << c.label;
    EXPECT_EQ(r->host, c.url->host) << c.label;
    EXPECT_EQ(r->port, c.url->port) << c.label;
    EXPECT_EQ(r->database, c.url->database) << c.label;
    EXPECT_EQ(masked(*r), c.masked) << c.label;
  }
}

TEST(MigrateUrl, ErrorsNeverRepeatThePassword) {
  for (std::string_view text :
       {"mysql://u:hunter2@h:0/d", "mysql://u:hunter2@h:1/", "mysql://u:hunter2%zz@h:1/d",
        "mysql://u:hunter2@h:1/d?x", "http://u:hunter2@h:1/d"}) {
    auto r = parse_mysql_url(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().message.find("hunter2"), std::string::npos) << r.error().message;
  }
}

TEST(MigrateUrl, PasswordSpanFindsTheRawPassword) {
  const std::pair<std::string_view, std::optional<TextSpan>> cases[] = {
      {"mysql://u:secret@h:1/d", TextSpan{10, 6}},
      {"mysql://u:@h:1/d", TextSpan{10, 0}},
      {"mysql://u:a@b@h:1/d", TextSpan{10, 3}},
      {"mysql://u:p%40w@h/d", TextSpan{10, 5}},
      {"mysql://u:pw@h", TextSpan{10, 2}},
      {"mysql://u@h:3306/d", std::nullopt},
      {"mysql://u@[::1]:3306/d", std::nullopt},
      {"mysql://h:1/d", std::nullopt},
      {"--data-dir", std::nullopt},
      {"postgres://u:p@h/d", std::nullopt},
  };
  for (const auto& [text, span] : cases) {
    EXPECT_EQ(password_span(text), span) << text;
  }
}

struct GridCase {
  std::uint64_t increment, offset;
  Grid grid;
};

// Offsets above the increment: what MySQL and MariaDB actually issue (MariaDB 10.11, InnoDB:
// 3/5 issued 101, 104, 107; 10/25 issued 115, 125).
const GridCase kGridCases[] = {
    {1, 1, {1, 1}}, {2, 1, {2, 1}},    {2, 2, {2, 2}},
    {3, 5, {3, 2}}, {10, 25, {10, 5}}, {10, 20, {10, 10}},
    {0, 1, {1, 1}}, {4, 0, {4, 4}},    {65535, 65535, {65535, 65535}},
};

TEST(MigrateGrid, ServerGridReducesTheOffsetTheWayTheServerIssues) {
  for (const auto& c : kGridCases) {
    EXPECT_EQ(server_grid(c.increment, c.offset), c.grid) << c.increment << "/" << c.offset;
  }
}

struct FirstCase {
  std::uint64_t next, margin;
  Grid grid;
  std::uint64_t max_value;
  std::optional<std::uint64_t> first;
};

const FirstCase kFirstCases[] = {
    {1, 0, {1, 1}, kDefaultMaxValue, 1},
    {1, 1000, {1, 1}, kDefaultMaxValue, 1001},
    {5000000004, 1000, {2, 2}, kDefaultMaxValue, 5000001004},
    {5000000004, 1000, {2, 1}, kDefaultMaxValue, 5000001005},
    {5000000003, 1000, {2, 1}, kDefaultMaxValue, 5000001003},
    {5100, 1000, {5, 5}, kDefaultMaxValue, 6100},
    {5101, 1000, {5, 5}, kDefaultMaxValue, 6105},
    {101, 0, {5, 1}, kDefaultMaxValue, 101},
    {4294967000, 1000, {1, 1}, 4294967295, std::nullopt},
    {4294966295, 1000, {1, 1}, 4294967295, 4294967295},
    {~std::uint64_t{0}, 1000, {1, 1}, ~std::uint64_t{0}, std::nullopt},
};

TEST(MigrateGrid, FirstValueIsTheFirstOnTheGridAtOrAboveNextPlusMargin) {
  for (const auto& c : kFirstCases) {
    EXPECT_EQ(first_value(c.next, c.margin, c.grid, c.max_value), c.first)
        << c.next << " + " << c.margin << " on " << c.grid.increment << "/" << c.grid.offset;
  }
}

TEST(MigrateGrid, ColumnTypeMax) {
  const std::pair<std::string_view, std::optional<std::uint64_t>> cases[] = {
      {"tinyint(4)", 127},
      {"tinyint(3) unsigned", 255},
      {"smallint(6)", 32767},
      {"mediumint(8) unsigned", 16777215},
      {"int(11)", 2147483647},
      {"int(10) unsigned", 4294967295},
      {"INT UNSIGNED", 4294967295},
      {"bigint(20)", 9223372036854775807},
      {"bigint(20) unsigned", 18446744073709551615u},
      {"bigint unsigned zerofill", 18446744073709551615u},
      {"double", std::nullopt},
      {"integer", std::nullopt},
      {"", std::nullopt},
  };
  for (const auto& [type, max] : cases) EXPECT_EQ(column_type_max(type), max) << type;
}

struct PlanCase {
  std::string_view label;
  SourceSnapshot source;
  std::uint64_t margin;
  // name, first value, increment, offset, max_value
  std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>>
      planned;
  std::vector<std::string> skipped;
};

SourceSequence seq(std::string name, std::int64_t next, std::int64_t increment, std::int64_t start,
                   std::int64_t maximum = 9223372036854775806, bool cycle = false) {
  return SourceSequence{std::move(name), next, increment, start, maximum, cycle};
}

const std::vector<PlanCase>& plan_cases() {
  static const std::vector<PlanCase> cases = {
      {"flickr tickets64 on 1/1",
       {1, 1, {{"Tickets64", 5000000003, "bigint(20) unsigned"}}, {}, {}},
       1000,
       {{"Tickets64", 5000001003, 1, 1, kDefaultMaxValue}},
       {}},
      {"odd server",
       {2, 1, {{"Tickets64", 5000000005, "bigint(20) unsigned"}}, {}, {}},
       1000,
       {{"Tickets64", 5000001005, 2, 1, kDefaultMaxValue}},
       {}},
      {"even server",
       {2, 2, {{"Tickets64", 5000000006, "bigint(20) unsigned"}}, {}, {}},
       1000,
       {{"Tickets64", 5000001006, 2, 2, kDefaultMaxValue}},
       {}},
      {"offset above increment",
       {3, 5, {{"T", 130, "int(11)"}}, {}, {}},
       0,
       {{"T", 131, 3, 2, 2147483647}},
       {}},
      {"int column keeps its limit",
       {1, 1, {{"Tickets32", 7, "int(10) unsigned"}}, {}, {}},
       1000,
       {{"Tickets32", 1007, 1, 1, 4294967295}},
       {}},
      {"unsigned bigint past INT64_MAX keeps the column limit",
       {1, 1, {{"Huge", 9223372036854775807u, "bigint(20) unsigned"}}, {}, {}},
       1,
       {{"Huge", 9223372036854775808u, 1, 1, 18446744073709551615u}},
       {}},
      {"no auto_increment, exhausted column, bad name",
       {1,
        1,
        {{"plain", std::nullopt, ""},
         {"Tiny", 250, "tinyint(3) unsigned"},
         {"two words", 5, "int(11)"}},
        {},
        {"gone"}},
       1000,
       {},
       {"plain", "Tiny", "two words", "gone"}},
      {"sequence on its own grid",
       {2, 2, {}, {seq("s", 5100, 5, 100)}, {}},
       1000,
       {{"s", 6100, 5, 5, 9223372036854775806}},
       {}},
      {"sequence with an offset start",
       {1, 1, {}, {seq("s3", 106, 5, 101)}, {}},
       0,
       {{"s3", 106, 5, 1, 9223372036854775806}},
       {}},
      {"sequence INCREMENT BY 0 uses the server grid",
       {2, 2, {}, {seq("s0", 2007, 0, 7)}, {}},
       1000,
       {{"s0", 3008, 2, 2, 9223372036854775806}},
       {}},
      {"negative start",
       {1, 1, {}, {seq("neg", -5, 3, -7)}, {}},
       0,
       {{"neg", 2, 3, 2, 9223372036854775806}},
       {}},
      {"descending, too big an increment, no positive max, exhausted",
       {1,
        1,
        {},
        {seq("down", 10, -1, 10), seq("wide", 1, 70000, 1), seq("negmax", -10, 1, -100, -1),
         seq("full", 1000, 1, 1, 1500)},
        {}},
       1000,
       {},
       {"down", "wide", "negmax", "full"}},
  };
  return cases;
}

TEST(MigrateGrants, OnlyADatabaseWidePrivilegeShowsEveryTable) {
  // Issue 27.10: a user granted single tables sees only those in information_schema.
  const std::string usage = "GRANT USAGE ON *.* TO `import`@`127.0.0.1`";
  EXPECT_FALSE(grants_cover_database({usage}, "flickr"));
  EXPECT_TRUE(
      grants_cover_database({usage, "GRANT SELECT ON `flickr`.* TO `import`@`%`"}, "flickr"));
  EXPECT_TRUE(grants_cover_database({"GRANT SELECT ON flickr.* TO 'import'@'%'"}, "flickr"));
  EXPECT_TRUE(grants_cover_database(
      {"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"}, "flickr"));
  EXPECT_FALSE(grants_cover_database(
      {usage, "GRANT SELECT ON `flickr`.`Tickets64` TO `import`@`127.0.0.1`"}, "flickr"));
  EXPECT_FALSE(
      grants_cover_database({usage, "GRANT SELECT ON `other`.* TO `import`@`%`"}, "flickr"));
  EXPECT_FALSE(grants_cover_database({usage, "GRANT `reader`@`%` TO `import`@`%`"}, "flickr"));
  EXPECT_TRUE(grants_cover_database({"GRANT SELECT ON `we``ird`.* TO `i`@`%`"}, "we`ird"));
}

TEST(MigratePlan, PlansEveryCounterOnItsGrid) {
  for (const auto& c : plan_cases()) {
    const auto plan = plan_import(c.source, c.margin);
    ASSERT_EQ(plan.sequences.size(), c.planned.size()) << c.label;
    for (std::size_t i = 0; i < c.planned.size(); ++i) {
      const auto& [name, first, inc, off, max] = c.planned[i];
      const auto& p = plan.sequences[i];
      EXPECT_EQ(p.spec.name, name) << c.label;
      EXPECT_EQ(p.spec.kind, SequenceKind::kTicket) << c.label;
      EXPECT_EQ(p.spec.start, first) << c.label;
      EXPECT_EQ(p.spec.increment, inc) << c.label;
      EXPECT_EQ(p.spec.offset, off) << c.label;
      EXPECT_EQ(p.spec.max_value, max) << c.label;
      EXPECT_EQ(validate(p.spec), "") << c.label;
      EXPECT_GE(p.spec.start, p.old_next) << c.label;  // above everything the old server issued
    }
    ASSERT_EQ(plan.skipped.size(), c.skipped.size()) << c.label;
    for (std::size_t i = 0; i < c.skipped.size(); ++i) {
      EXPECT_EQ(plan.skipped[i].name, c.skipped[i]) << c.label;
      EXPECT_FALSE(plan.skipped[i].reason.empty()) << c.label;
    }
  }
}

TEST(MigratePlan, CycleIsNoted) {
  const auto plan = plan_import({1, 1, {}, {seq("c", 10, 1, 1, 100, true)}, {}}, 0);
  ASSERT_EQ(plan.sequences.size(), 1u);
  EXPECT_NE(plan.sequences[0].note.find("CYCLE"), std::string::npos);
}

struct DecideCase {
  std::string_view label;
  std::optional<ExistingSequence> existing;
  ImportAction action;
  std::string_view reason;  // substring, for kRefuse
};

TEST(MigrateDecide, NeverLowersNeverRegrids) {
  PlannedSequence p;
  p.spec.name = "Tickets64";
  p.spec.start = 5001;
  p.spec.increment = 2;
  p.spec.offset = 1;
  const DecideCase cases[] = {
      {"missing", std::nullopt, ImportAction::kCreate, ""},
      {"below", ExistingSequence{SequenceKind::kTicket, {2, 1}, 41, false}, ImportAction::kAdvance,
       ""},
      {"just below", ExistingSequence{SequenceKind::kTicket, {2, 1}, 4999, false},
       ImportAction::kAdvance, ""},
      {"equal", ExistingSequence{SequenceKind::kTicket, {2, 1}, 5001, false},
       ImportAction::kUnchanged, ""},
      {"above", ExistingSequence{SequenceKind::kTicket, {2, 1}, 90001, false},
       ImportAction::kUnchanged, ""},
      {"exhausted", ExistingSequence{SequenceKind::kTicket, {2, 1}, 0, true},
       ImportAction::kUnchanged, ""},
      {"other offset", ExistingSequence{SequenceKind::kTicket, {2, 2}, 4, false},
       ImportAction::kRefuse, "2/2, the old server's on 2/1"},
      {"other increment", ExistingSequence{SequenceKind::kTicket, {1, 1}, 9999999, false},
       ImportAction::kRefuse, "1/1"},
      {"gapless", ExistingSequence{SequenceKind::kGapless, {}, 0, false}, ImportAction::kRefuse,
       "gapless"},
      {"snowflake", ExistingSequence{SequenceKind::kSnowflake, {}, 0, false}, ImportAction::kRefuse,
       "snowflake"},
  };
  for (const auto& c : cases) {
    const auto d = decide(p, c.existing);
    EXPECT_EQ(d.action, c.action) << c.label;
    EXPECT_NE(d.reason.find(c.reason), std::string::npos) << c.label << ": " << d.reason;
  }
}

}  // namespace
}  // namespace ticketd::migrate
