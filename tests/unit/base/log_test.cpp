#include "server/base/log.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/utf8.h"

namespace ticketd::log {
namespace {

constexpr std::int64_t kAt = 1796245168528;  // 2026-12-02T20:59:28.528Z

struct LineCase {
  std::string_view name;
  std::string level;
  std::string event;
  std::string message;
  std::vector<Field> fields;
  std::string text;
  std::string json;
};

// Strings are std::string so that NUL and high bytes are kept whole.
const LineCase kLineCases[] = {
    {"plain info",
     "info",
     "",
     "ticketd ready",
     {},
     "2026-12-02T20:59:28.528Z info  ticketd ready\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"info","message":"ticketd ready"})"
     "\n"},
    {"every level keeps the column",
     "debug",
     "",
     "m",
     {},
     "2026-12-02T20:59:28.528Z debug m\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"debug","message":"m"})"
     "\n"},
    {"warn",
     "warn",
     "",
     "m",
     {},
     "2026-12-02T20:59:28.528Z warn  m\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"warn","message":"m"})"
     "\n"},
    {"fields after the message",
     "info",
     "",
     "sequence 'Orders' created",
     {{"sequence", "Orders"}, {"client", "10.0.0.7"}},
     "2026-12-02T20:59:28.528Z info  sequence 'Orders' created sequence=Orders client=10.0.0.7\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"info","message":"sequence 'Orders' created",)"
     R"("sequence":"Orders","client":"10.0.0.7"})"
     "\n"},
    {"integer fields are numbers",
     "info",
     "",
     "claimed",
     {{"worker_id", 7}, {"count", std::uint64_t{18446744073709551615ULL}}, {"delta", -3}},
     "2026-12-02T20:59:28.528Z info  claimed worker_id=7 count=18446744073709551615 delta=-3\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"info","message":"claimed","worker_id":7,)"
     R"("count":18446744073709551615,"delta":-3})"
     "\n"},
    {"audit lines name their event",
     "audit",
     "sequence_dropped",
     "sequence 'Orders' dropped; tombstone ceiling 2000",
     {{"sequence", "Orders"}},
     "2026-12-02T20:59:28.528Z audit sequence_dropped: sequence 'Orders' dropped; tombstone "
     "ceiling 2000 sequence=Orders\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"audit","message":"sequence 'Orders' )"
     R"(dropped; tombstone ceiling 2000","event":"sequence_dropped","sequence":"Orders"})"
     "\n"},
    {"quotes and backslashes",
     "warn",
     "",
     R"(say "hi" \ bye)",
     {{"user", R"(o"b\r)"}},
     R"(2026-12-02T20:59:28.528Z warn  say "hi" \ bye user="o\"b\\r")"
     "\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"warn","message":"say \"hi\" \\ bye",)"
     R"("user":"o\"b\\r"})"
     "\n"},
    {"values with spaces or = are quoted, empty ones too",
     "info",
     "",
     "m",
     {{"a", "x y"}, {"b", "k=v"}, {"c", ""}, {"d", "plain-value_1.2:3"}},
     R"(2026-12-02T20:59:28.528Z info  m a="x y" b="k=v" c="" d=plain-value_1.2:3)"
     "\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"info","message":"m","a":"x y","b":"k=v",)"
     R"("c":"","d":"plain-value_1.2:3"})"
     "\n"},
    {"a newline never ends the line early",
     "error",
     "",
     "first\nsecond\r\tthird",
     {{"v", "a\nb"}},
     R"(2026-12-02T20:59:28.528Z error first\nsecond\r\tthird v="a\nb")"
     "\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"error","message":"first\nsecond\r\tthird",)"
     R"("v":"a\nb"})"
     "\n"},
    {"control bytes",
     "info",
     "",
     std::string("nul\0bel\x07"
                 "del\x7f"
                 "esc\x1b",
                 16),
     {{"v", std::string_view("\x01\b\f\x1f", 4)}},
     R"(2026-12-02T20:59:28.528Z info  nul\x00bel\x07del\x7fesc\x1b v="\x01\x08\x0c\x1f")"
     "\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"info","message":"nul\u0000bel\u0007del\u007f)"
     R"(esc\u001b","v":"\u0001\b\f\u001f"})"
     "\n"},
    {"UTF-8 is kept, invalid bytes are replaced in JSON",
     "info",
     "",
     "r\xc3\xa9sum\xc3\xa9 \xff \xc0\xaf \xe2\x82",
     {{"user", "\xf0\x9f\x8e\x9f\xed\xa0\x80"}},
     "2026-12-02T20:59:28.528Z info  r\xc3\xa9sum\xc3\xa9 \xff \xc0\xaf \xe2\x82 "
     "user=\xf0\x9f\x8e\x9f\xed\xa0\x80\n",
     R"({"time":"2026-12-02T20:59:28.528Z","level":"info","message":")"
     "r\xc3\xa9sum\xc3\xa9 "
     R"(\ufffd \ufffd\ufffd \ufffd\ufffd","user":")"
     "\xf0\x9f\x8e\x9f"
     R"(\ufffd\ufffd\ufffd"})"
     "\n"},
};

TEST(Log, WritesEachFormatByteForByte) {
  for (const auto& c : kLineCases) {
    const Fields fields{std::span<const Field>(c.fields)};
    EXPECT_EQ(format_line(Format::kText, kAt, c.level, c.event, c.message, fields), c.text)
        << c.name;
    EXPECT_EQ(format_line(Format::kJson, kAt, c.level, c.event, c.message, fields), c.json)
        << c.name;
  }
}

TEST(Log, FieldsWrittenInBracesAtTheCall) {
  const std::string name = "Orders";
  EXPECT_EQ(format_line(Format::kJson, 0, "info", "", "m",
                        {{"sequence", name}, {"lease", std::to_string(42)}, {"worker_id", 3u}}),
            R"({"time":"1970-01-01T00:00:00.000Z","level":"info","message":"m",)"
            R"("sequence":"Orders","lease":"42","worker_id":3})"
            "\n");
}

// Every byte value, alone and after a lead byte, yields one line of valid UTF-8 JSON that ends
// where it should: no raw control character, no unescaped quote.
TEST(Log, JsonOfEveryByteIsOneValidLine) {
  for (int b = 0; b < 256; ++b) {
    for (const std::string prefix : {"", "\xc3", "\xe2\x82"}) {
      const std::string value = prefix + std::string(1, static_cast<char>(b)) + "\"";
      const std::string line = format_line(Format::kJson, kAt, "info", "", value, {{"v", value}});
      ASSERT_TRUE(is_valid_utf8(line)) << b;
      ASSERT_EQ(line.find('\n'), line.size() - 1) << b;
      for (std::size_t i = 0; i + 1 < line.size(); ++i) {
        ASSERT_GE(static_cast<unsigned char>(line[i]), 0x20) << b;
      }
      // Each value ends with an escaped quote: `\"` then the closing one.
      EXPECT_NE(line.find(R"(\"","v":")"), std::string::npos) << b << ": " << line;
      EXPECT_EQ(line.substr(line.size() - 5), "\\\"\"}\n") << b << ": " << line;
    }
  }
}

TEST(Log, SetFormatAndLevelApplyToTheNextLine) {
  const Format before = format();
  testing::internal::CaptureStderr();
  set_format(Format::kJson);
  info("one", {{"sequence", "S"}});
  set_level(Level::kWarn);
  info("filtered out");
  debug("filtered out too");
  audit("sequence_created", "audit lines pass any level", {{"sequence", "S"}});
  set_level(Level::kInfo);
  set_format(Format::kText);
  warn("three", {{"client", "127.0.0.1"}});
  set_format(before);
  const std::string out = testing::internal::GetCapturedStderr();

  std::vector<std::string> lines;
  for (std::size_t at = 0; at < out.size();) {
    const auto end = out.find('\n', at);
    ASSERT_NE(end, std::string::npos) << out;
    lines.push_back(out.substr(at, end - at));
    at = end + 1;
  }
  ASSERT_EQ(lines.size(), 3u) << out;
  // The time varies; the rest does not.
  ASSERT_EQ(lines[0].rfind(R"({"time":")", 0), 0u) << lines[0];
  EXPECT_EQ(lines[0].substr(34), R"(,"level":"info","message":"one","sequence":"S"})");
  EXPECT_EQ(lines[1].substr(34),
            R"(,"level":"audit","message":"audit lines pass any level","event":)"
            R"("sequence_created","sequence":"S"})");
  EXPECT_EQ(lines[2].substr(24), " warn  three client=127.0.0.1");
}

}  // namespace
}  // namespace ticketd::log
