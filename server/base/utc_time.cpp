#include "server/base/utc_time.h"

#include <array>
#include <chrono>
#include <cstdio>

#include "server/base/parse_int.h"

namespace ticketd {
namespace {

struct Civil {
  std::chrono::year_month_day date;
  std::chrono::hh_mm_ss<std::chrono::milliseconds> time;
};

Civil civil_of(std::int64_t unix_ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> t{milliseconds{unix_ms}};
  const auto day = floor<days>(t);
  return Civil{year_month_day{day}, hh_mm_ss<milliseconds>{t - day}};
}

// Exactly `n` digits at `pos`, then advances past them.
std::optional<int> take_digits(std::string_view text, std::size_t& pos, std::size_t n) {
  if (text.size() < pos + n) return std::nullopt;
  const auto digits = text.substr(pos, n);
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  pos += n;
  return parse_int<int>(digits);
}

bool take_char(std::string_view text, std::size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c) return false;
  ++pos;
  return true;
}

// Writes v as exactly `width` decimal digits (v < 10^width).
char* put_digits(char* p, unsigned v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return p + width;
}

}  // namespace

std::string format_utc_ms(std::int64_t unix_ms) {
  const auto [date, time] = civil_of(unix_ms);
  const int year = static_cast<int>(date.year());
  if (year >= 0 && year <= 9999) {
    // Every lease's JSON carries one: by hand, as snprintf costs more than the lease's parse.
    std::string out(24, '\0');
    char* p = out.data();
    p = put_digits(p, static_cast<unsigned>(year), 4);
    *p++ = '-';
    p = put_digits(p, static_cast<unsigned>(date.month()), 2);
    *p++ = '-';
    p = put_digits(p, static_cast<unsigned>(date.day()), 2);
    *p++ = 'T';
    p = put_digits(p, static_cast<unsigned>(time.hours().count()), 2);
    *p++ = ':';
    p = put_digits(p, static_cast<unsigned>(time.minutes().count()), 2);
    *p++ = ':';
    p = put_digits(p, static_cast<unsigned>(time.seconds().count()), 2);
    *p++ = '.';
    p = put_digits(p, static_cast<unsigned>(time.subseconds().count()), 3);
    *p = 'Z';
    return out;
  }
  std::array<char, 48> buf{};
  std::snprintf(buf.data(), buf.size(), "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                static_cast<int>(time.minutes().count()), static_cast<int>(time.seconds().count()),
                static_cast<int>(time.subseconds().count()));
  return buf.data();
}

std::string format_utc_datetime(std::int64_t unix_ms) {
  const auto [date, time] = civil_of(unix_ms);
  std::array<char, 48> buf{};
  std::snprintf(buf.data(), buf.size(), "%04d-%02u-%02u %02d:%02d:%02d",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                static_cast<int>(time.minutes().count()), static_cast<int>(time.seconds().count()));
  return buf.data();
}

std::optional<std::int64_t> parse_utc_ms(std::string_view text) {
  using namespace std::chrono;
  std::size_t pos = 0;
  const auto y = take_digits(text, pos, 4);
  const bool dash1 = take_char(text, pos, '-');
  const auto mo = take_digits(text, pos, 2);
  const bool dash2 = take_char(text, pos, '-');
  const auto d = take_digits(text, pos, 2);
  const bool t = take_char(text, pos, 'T');
  const auto h = take_digits(text, pos, 2);
  const bool colon1 = take_char(text, pos, ':');
  const auto mi = take_digits(text, pos, 2);
  const bool colon2 = take_char(text, pos, ':');
  const auto s = take_digits(text, pos, 2);
  if (!y || !mo || !d || !h || !mi || !s || !dash1 || !dash2 || !t || !colon1 || !colon2) {
    return std::nullopt;
  }
  int ms = 0;
  if (take_char(text, pos, '.')) {
    int digits = 0;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++digits) {
      if (digits < 3) ms = ms * 10 + (text[pos] - '0');
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 3; ++digits) ms *= 10;
  }
  if (!take_char(text, pos, 'Z') || pos != text.size()) return std::nullopt;
  const year_month_day date{year{*y}, month{static_cast<unsigned>(*mo)},
                            day{static_cast<unsigned>(*d)}};
  if (!date.ok() || *h > 23 || *mi > 59 || *s > 60) return std::nullopt;
  const auto at = sys_days{date} + hours{*h} + minutes{*mi} + seconds{*s} + milliseconds{ms};
  return duration_cast<milliseconds>(at.time_since_epoch()).count();
}

}  // namespace ticketd
