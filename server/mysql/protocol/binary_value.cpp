#include "server/mysql/protocol/binary_value.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <concepts>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include "server/base/parse_int.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/protocol_errc.h"

namespace ticketd::mysql {
namespace {

template <class T>
std::string number_to_string(T v) {
  std::array<char, 64> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  (void)ec;  // 64 bytes hold any int64/uint64/float/double shortest representation
  return std::string(buf.data(), end);
}

void append_escaped(std::string& out, std::string_view s) {
  // The set mysql_real_escape_string escapes. Backslash escapes assume NO_BACKSLASH_ESCAPES is
  // off, the only mode ticketd's SQL recognizer parses. \0 and \Z keep the text free of bytes
  // that break naive logging and Windows consoles, as in libmysqlclient.
  out.push_back('\'');
  for (const char c : s) {
    switch (c) {
      case '\0':
        out += "\\0";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\x1a':
        out += "\\Z";
        break;
      default:
        out.push_back(c);
    }
  }
  out.push_back('\'');
}

// --- temporal values -------------------------------------------------------------------------

struct DateTime {
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  std::uint32_t micro = 0;
};

std::string format_date(const DateTime& t) {
  std::array<char, 16> buf{};
  std::snprintf(buf.data(), buf.size(), "%04u-%02u-%02u", t.year % 10000, t.month % 100,
                t.day % 100);
  return buf.data();
}

std::string format_clock(unsigned hours, unsigned minute, unsigned second, std::uint32_t micro,
                         bool with_micro) {
  std::array<char, 40> buf{};
  if (with_micro) {
    std::snprintf(buf.data(), buf.size(), "%02u:%02u:%02u.%06u", hours, minute % 100, second % 100,
                  static_cast<unsigned>(micro % 1000000));
  } else {
    std::snprintf(buf.data(), buf.size(), "%02u:%02u:%02u", hours, minute % 100, second % 100);
  }
  return buf.data();
}

// DATE, DATETIME, TIMESTAMP: int<1> length (0, 4, 7 or 11), then as many of year(2) month day
// hour minute second micro(4) as fit. Length 0 means all zero.
std::string read_datetime(PacketReader& r, std::uint8_t type) {
  const std::uint8_t length = r.u8();
  DateTime t;
  if (length != 0 && length != 4 && length != 7 && length != 11) {
    r.fail(ProtocolErrc::kMalformed);
    return {};
  }
  if (length >= 4) {
    t.year = r.u16();
    t.month = r.u8();
    t.day = r.u8();
  }
  if (length >= 7) {
    t.hour = r.u8();
    t.minute = r.u8();
    t.second = r.u8();
  }
  if (length == 11) t.micro = r.u32();
  std::string out = format_date(t);
  if (length == 4 || (length == 0 && type == kTypeDate)) return out;
  out.push_back(' ');
  out += format_clock(t.hour % 100, t.minute, t.second, t.micro, length == 11);
  return out;
}

// TIME: int<1> length (0, 8 or 12), is_negative(1) days(4) hour minute second [micro(4)].
std::string read_time(PacketReader& r) {
  const std::uint8_t length = r.u8();
  if (length != 0 && length != 8 && length != 12) {
    r.fail(ProtocolErrc::kMalformed);
    return {};
  }
  bool negative = false;
  std::uint32_t days = 0;
  unsigned hour = 0, minute = 0, second = 0;
  std::uint32_t micro = 0;
  if (length >= 8) {
    negative = r.u8() != 0;
    days = r.u32();
    hour = r.u8();
    minute = r.u8();
    second = r.u8();
  }
  if (length == 12) micro = r.u32();
  // Clamp absurd day counts so the text stays short; MySQL's TIME range is +-838:59:59 anyway.
  const unsigned hours = static_cast<unsigned>(
      std::min<std::uint64_t>(std::uint64_t{days} * 24 + hour % 100, 9999999));
  std::string out = negative ? "-" : "";
  out += format_clock(hours, minute, second, micro, length == 12);
  return out;
}

// --- text -> binary for result rows ------------------------------------------------------------

[[noreturn]] void bad_value(const ColumnDefinition41& column, std::string_view text) {
  throw std::invalid_argument("value '" + std::string(text) + "' does not fit column '" +
                              column.name + "' of type " + std::to_string(column.type));
}

// All of `text` as a float or double (integers go through parse_int).
template <std::floating_point T>
bool parse_all(std::string_view text, T& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

void write_integer(const ColumnDefinition41& column, std::string_view text, std::size_t width,
                   PacketWriter& out) {
  const auto bits = static_cast<unsigned>(width * 8);
  std::uint64_t wire = 0;
  if (column.flags & kUnsignedFlag) {
    const std::uint64_t max = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    const auto v = parse_u64(text);
    if (!v || *v > max) bad_value(column, text);
    wire = *v;
  } else {
    const std::int64_t max =
        bits == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t{1} << (bits - 1)) - 1;
    const auto v = parse_i64(text);
    if (!v || *v > max || *v < -max - 1) bad_value(column, text);
    wire = static_cast<std::uint64_t>(*v);  // two's complement, truncated to width below
  }
  for (std::size_t i = 0; i < width; ++i) out.u8(static_cast<std::uint8_t>(wire >> (8 * i)));
}

// Parses exactly `digits` decimal digits.
bool take_digits(std::string_view& s, std::size_t digits, unsigned& out) {
  if (s.size() < digits) return false;
  // Unsigned, so a sign or a space is refused: exactly `digits` digits or nothing.
  const auto v = parse_int<unsigned>(s.substr(0, digits));
  if (!v) return false;
  out = *v;
  s.remove_prefix(digits);
  return true;
}

bool take_char(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

// ".ffffff" with 1..6 digits, scaled to microseconds; absent is 0.
bool take_fraction(std::string_view& s, std::uint32_t& micro) {
  micro = 0;
  if (!take_char(s, '.')) return true;
  std::size_t n = 0;
  while (n < s.size() && n < 6 && s[n] >= '0' && s[n] <= '9') {
    micro = micro * 10 + static_cast<std::uint32_t>(s[n] - '0');
    ++n;
  }
  if (n == 0) return false;
  for (std::size_t i = n; i < 6; ++i) micro *= 10;
  s.remove_prefix(n);
  return true;
}

void write_datetime(const ColumnDefinition41& column, std::string_view text, PacketWriter& out) {
  std::string_view s = text;
  DateTime t;
  bool ok = take_digits(s, 4, t.year) && take_char(s, '-') && take_digits(s, 2, t.month) &&
            take_char(s, '-') && take_digits(s, 2, t.day);
  if (ok && !s.empty()) {
    ok = take_char(s, ' ') && take_digits(s, 2, t.hour) && take_char(s, ':') &&
         take_digits(s, 2, t.minute) && take_char(s, ':') && take_digits(s, 2, t.second) &&
         take_fraction(s, t.micro);
  }
  if (!ok || !s.empty()) bad_value(column, text);
  // Shortest form, as mysqld sends it.
  std::uint8_t length = 11;
  if (t.micro == 0) length = 7;
  if (length == 7 && t.hour == 0 && t.minute == 0 && t.second == 0) length = 4;
  if (length == 4 && t.year == 0 && t.month == 0 && t.day == 0) length = 0;
  out.u8(length);
  if (length >= 4) {
    out.u16(static_cast<std::uint16_t>(t.year));
    out.u8(static_cast<std::uint8_t>(t.month));
    out.u8(static_cast<std::uint8_t>(t.day));
  }
  if (length >= 7) {
    out.u8(static_cast<std::uint8_t>(t.hour));
    out.u8(static_cast<std::uint8_t>(t.minute));
    out.u8(static_cast<std::uint8_t>(t.second));
  }
  if (length == 11) out.u32(t.micro);
}

void write_time(const ColumnDefinition41& column, std::string_view text, PacketWriter& out) {
  std::string_view s = text;
  const bool negative = take_char(s, '-');
  std::size_t hour_digits = 0;
  while (hour_digits < s.size() && s[hour_digits] >= '0' && s[hour_digits] <= '9') ++hour_digits;
  unsigned hours = 0, minute = 0, second = 0;
  std::uint32_t micro = 0;
  const bool ok = hour_digits >= 1 && hour_digits <= 4 && take_digits(s, hour_digits, hours) &&
                  take_char(s, ':') && take_digits(s, 2, minute) && take_char(s, ':') &&
                  take_digits(s, 2, second) && take_fraction(s, micro) && s.empty();
  if (!ok) bad_value(column, text);
  std::uint8_t length = micro != 0 ? 12 : 8;
  if (length == 8 && hours == 0 && minute == 0 && second == 0) length = 0;
  out.u8(length);
  if (length == 0) return;
  out.u8(negative ? 1 : 0);
  out.u32(hours / 24);
  out.u8(static_cast<std::uint8_t>(hours % 24));
  out.u8(static_cast<std::uint8_t>(minute));
  out.u8(static_cast<std::uint8_t>(second));
  if (length == 12) out.u32(micro);
}

}  // namespace

std::string to_sql_literal(const ParamValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          std::string out;
          out.reserve(v.size() + 2);
          append_escaped(out, v);
          return out;
        } else {
          return number_to_string(v);
        }
      },
      value);
}

std::string to_sql_literal(const std::optional<ParamValue>& value) {
  return value ? to_sql_literal(*value) : std::string("NULL");
}

ParamValue read_binary_value(PacketReader& r, std::uint16_t param_type) {
  const auto type = static_cast<std::uint8_t>(param_type & 0xFF);
  const bool is_unsigned = (param_type & kParamUnsignedFlag) != 0;
  // Sign-extends the low `bits` of v unless the parameter is unsigned.
  auto integer = [is_unsigned](std::uint64_t v, unsigned bits) -> ParamValue {
    if (is_unsigned) return v;
    const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
    return static_cast<std::int64_t>((v ^ sign) - sign);
  };
  switch (type) {
    case kTypeTiny:
      return integer(r.u8(), 8);
    case kTypeShort:
    case kTypeYear:
      return integer(r.u16(), 16);
    case kTypeLong:
    case kTypeInt24:  // sent as 4 bytes
      return integer(r.u32(), 32);
    case kTypeLongLong:
      return integer(r.u64(), 64);
    case kTypeFloat:
      return std::bit_cast<float>(r.u32());
    case kTypeDouble:
      return std::bit_cast<double>(r.u64());
    case kTypeDate:
    case kTypeDatetime:
    case kTypeTimestamp:
      return read_datetime(r, type);
    case kTypeTime:
      return read_time(r);
    case kTypeDecimal:
    case kTypeNewDecimal:
    case kTypeVarchar:
    case kTypeBit:
    case kTypeJson:
    case kTypeEnum:
    case kTypeSet:
    case kTypeTinyBlob:
    case kTypeMediumBlob:
    case kTypeLongBlob:
    case kTypeBlob:
    case kTypeVarString:
    case kTypeString:
    case kTypeGeometry:
      return std::string(r.lenenc_string());
    default:
      r.fail(ProtocolErrc::kUnsupported);
      return std::string();
  }
}

void write_binary_value(const ColumnDefinition41& column, std::string_view text,
                        PacketWriter& out) {
  switch (column.type) {
    case kTypeTiny:
      return write_integer(column, text, 1, out);
    case kTypeShort:
    case kTypeYear:
      return write_integer(column, text, 2, out);
    case kTypeLong:
    case kTypeInt24:
      return write_integer(column, text, 4, out);
    case kTypeLongLong:
      return write_integer(column, text, 8, out);
    case kTypeFloat: {
      float v = 0;
      if (!parse_all(text, v)) bad_value(column, text);
      return out.u32(std::bit_cast<std::uint32_t>(v));
    }
    case kTypeDouble: {
      double v = 0;
      if (!parse_all(text, v)) bad_value(column, text);
      return out.u64(std::bit_cast<std::uint64_t>(v));
    }
    case kTypeDate:
    case kTypeDatetime:
    case kTypeTimestamp:
      return write_datetime(column, text, out);
    case kTypeTime:
      return write_time(column, text, out);
    default:
      // Strings, blobs, decimals (sent as text even in the binary protocol), JSON, ...
      return out.lenenc_string(text);
  }
}

}  // namespace ticketd::mysql
