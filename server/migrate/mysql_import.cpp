#include "server/migrate/mysql_import.h"

#include <algorithm>
#include <array>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url_view.hpp>
#include <cctype>
#include <utility>

#include "server/base/error_category.h"
#include "server/base/parse_int.h"
#include "server/core/ticket_sequence.h"

namespace ticketd::migrate {
namespace {

const char* describe_import(ImportErrc e) noexcept {
  switch (e) {
    case ImportErrc::kBadUrl:
      return "bad --from URL";
    case ImportErrc::kConnectFailed:
      return "cannot connect to the old server";
    case ImportErrc::kQueryFailed:
      return "a query on the old server failed";
    case ImportErrc::kBadAnswer:
      return "unexpected answer from the old server";
  }
  return nullptr;
}

Error bad_url(std::string what) {
  return Error{ImportErrc::kBadUrl,
               "--from: " + what + " (expected mysql://USER[:PASS]@HOST[:PORT]/DB)"};
}

// USER, PASS and DB as masked() prints them: every byte but the unreserved ones escaped.
std::string percent_encode(std::string_view text) {
  return boost::urls::encode(text, boost::urls::unreserved_chars);
}

struct IntegerType {
  std::string_view name;
  std::uint64_t signed_max;
  std::uint64_t unsigned_max;
};
constexpr std::array<IntegerType, 5> kIntegerTypes = {{
    {"tinyint", 127, 255},
    {"smallint", 32767, 65535},
    {"mediumint", 8388607, 16777215},
    {"int", 2147483647, 4294967295},
    {"bigint", 9223372036854775807, 18446744073709551615u},
}};

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The ticketd max_value for a counter whose own limit is `limit`: ticketd's default (INT64_MAX,
// safe for signed 64-bit readers) unless the counter is already past it.
std::uint64_t ticketd_max(std::uint64_t limit, std::uint64_t first_wanted) {
  if (limit <= kDefaultMaxValue || first_wanted > kDefaultMaxValue) return limit;
  return kDefaultMaxValue;
}

// Plans one counter: next value, grid, limit. Adds to `plan` a sequence or a skipped entry.
void plan_one(ImportPlan& plan, const std::string& name, SourceKind kind, std::uint64_t next,
              std::uint64_t margin, Grid grid, std::uint64_t limit, std::string note) {
  const auto wanted =
      align_up(static_cast<unsigned __int128>(next) + margin, grid.increment, grid.offset);
  const std::uint64_t max_value = ticketd_max(
      limit, wanted > ~std::uint64_t{0} ? ~std::uint64_t{0} : static_cast<std::uint64_t>(wanted));
  const auto first = first_value(next, margin, grid, max_value);
  if (!first) {
    plan.skipped.push_back({name, "no value left: next " + std::to_string(next) + " plus margin " +
                                      std::to_string(margin) + " passes the limit " +
                                      std::to_string(max_value)});
    return;
  }
  PlannedSequence p;
  p.source = kind;
  p.old_next = next;
  p.spec.name = name;
  p.spec.kind = SequenceKind::kTicket;
  p.spec.start = *first;
  p.spec.increment = grid.increment;
  p.spec.offset = grid.offset;
  p.spec.max_value = max_value;
  p.note = std::move(note);
  plan.sequences.push_back(std::move(p));
}

}  // namespace

const boost::system::error_category& import_category() noexcept {
  static const EnumCategory<ImportErrc> category("ticketd.import", describe_import,
                                                 "unknown import error");
  return category;
}

DetailedResult<MysqlUrl> parse_mysql_url(std::string_view text) {
  constexpr std::string_view kScheme = "mysql://";
  if (!text.starts_with(kScheme)) return bad_url("the scheme must be mysql://");
  // The mysql client takes a raw '@' in a password, and so do we: the last '@' of the
  // authority ends the user info, and any earlier one is escaped before RFC 3986 parsing.
  const auto authority_end = text.find_first_of("/?#", kScheme.size());
  const auto authority = text.substr(0, authority_end);
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos || at < kScheme.size()) return bad_url("no user");
  std::string escaped(text.substr(0, kScheme.size()));
  for (const char c : text.substr(kScheme.size(), at - kScheme.size())) {
    if (c == '@') {
      escaped += "%40";
    } else {
      escaped += c;
    }
  }
  escaped += text.substr(at);
  auto parsed = boost::urls::parse_uri(escaped);
  if (!parsed) {
    // Never the text itself: it may hold the password.
    return bad_url(
        "not a valid URL (a bad %-escape, an unclosed '[', or a port that is not a "
        "number)");
  }
  const boost::urls::url_view& u = *parsed;
  MysqlUrl url;
  url.user = u.user();
  if (url.user.empty()) return bad_url("no user");
  if (u.has_password()) url.password = u.password();
  url.host = u.host_address();
  if (url.host.empty()) return bad_url("no host");
  if (u.has_port()) {
    if (u.port().empty()) return bad_url("an empty port");
    auto port = parse_int<std::uint16_t>(u.port());
    if (!port || *port == 0) return bad_url("the port must be 1..65535");
    url.port = *port;
  }
  const std::string_view path = u.encoded_path();
  if (path.size() <= 1) return bad_url("no database");
  if (u.has_query() || u.has_fragment() || path.substr(1).find('/') != std::string_view::npos) {
    return bad_url("the database is one name, with no '/', '?' or '#'");
  }
  url.database = u.path().substr(1);
  return url;
}

std::optional<TextSpan> password_span(std::string_view text) {
  constexpr std::string_view kScheme = "mysql://";
  if (!text.starts_with(kScheme)) return std::nullopt;
  const auto authority = text.substr(0, text.find('/', kScheme.size()));
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  const auto colon = authority.find(':', kScheme.size());
  if (colon == std::string_view::npos || colon > at) return std::nullopt;
  return TextSpan{colon + 1, at - colon - 1};
}

std::string masked(const MysqlUrl& url) {
  const bool v6 = url.host.find(':') != std::string::npos;
  return "mysql://" + percent_encode(url.user) + (url.password ? ":***" : "") + "@" +
         (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port) + "/" +
         percent_encode(url.database);
}

bool grants_cover_database(const std::vector<std::string>& grants, std::string_view db) {
  const std::string quoted = "`" + [&] {
    std::string out;
    for (char c : db) {
      out += c;
      if (c == '`') out += '`';
    }
    return out;
  }() + "`.*";
  const std::string bare = std::string(db) + ".*";
  for (const std::string& line : grants) {
    if (!line.starts_with("GRANT ")) continue;
    const auto on = line.find(" ON ");
    const auto to = line.find(" TO ", on == std::string::npos ? 0 : on);
    if (on == std::string::npos || to == std::string::npos) continue;  // a role grant
    const std::string_view privileges = std::string_view(line).substr(6, on - 6);
    const std::string_view target = std::string_view(line).substr(on + 4, to - on - 4);
    if (privileges == "USAGE") continue;
    if (target == "*.*" || target == quoted || target == bare) return true;
  }
  return false;
}

Grid server_grid(std::uint64_t increment, std::uint64_t offset) {
  Grid g;
  g.increment = std::max<std::uint64_t>(increment, 1);
  g.offset = offset == 0 ? g.increment : (offset - 1) % g.increment + 1;
  return g;
}

std::optional<std::uint64_t> first_value(std::uint64_t next, std::uint64_t margin, Grid grid,
                                         std::uint64_t max_value) {
  const auto v =
      align_up(static_cast<unsigned __int128>(next) + margin, grid.increment, grid.offset);
  if (v > max_value) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

std::optional<std::uint64_t> column_type_max(std::string_view column_type) {
  const std::string type = lower(column_type);
  const bool is_unsigned = type.find("unsigned") != std::string::npos;
  for (const auto& t : kIntegerTypes) {
    if (!type.starts_with(t.name)) continue;
    // The name ends there: "int" must not take "integer" or "interval".
    const auto after = type.substr(t.name.size());
    if (!after.empty() && after.front() != '(' && after.front() != ' ') continue;
    return is_unsigned ? t.unsigned_max : t.signed_max;
  }
  return std::nullopt;
}

ImportPlan plan_import(const SourceSnapshot& source, std::uint64_t margin) {
  ImportPlan plan;
  const Grid grid = server_grid(source.auto_increment_increment, source.auto_increment_offset);
  auto valid_name = [&plan](const std::string& name) {
    if (auto problem = validate_name(name); !problem.empty()) {
      plan.skipped.push_back({name, "not a valid ticketd sequence name: " + problem});
      return false;
    }
    return true;
  };
  for (const auto& t : source.tables) {
    if (!t.auto_increment) {
      plan.skipped.push_back({t.name, "AUTO_INCREMENT is NULL (no auto-increment column)"});
      continue;
    }
    if (!valid_name(t.name)) continue;
    const auto type_max = column_type_max(t.column_type);
    std::string note;
    if (!type_max && !t.column_type.empty()) {
      note = "column type '" + t.column_type + "' is not an integer type; max_value " +
             std::to_string(kDefaultMaxValue);
    }
    plan_one(plan, t.name, SourceKind::kAutoIncrement,
             std::max<std::uint64_t>(*t.auto_increment, 1), margin, grid,
             type_max.value_or(kDefaultMaxValue), std::move(note));
  }
  for (const auto& s : source.sequences) {
    if (s.increment < 0) {
      plan.skipped.push_back({s.name, "descending (INCREMENT BY " + std::to_string(s.increment) +
                                          "): ticketd sequences only count up"});
      continue;
    }
    if (static_cast<std::uint64_t>(s.increment) > kMaxIncrement) {
      plan.skipped.push_back({s.name, "INCREMENT BY " + std::to_string(s.increment) +
                                          " is above ticketd's limit " +
                                          std::to_string(kMaxIncrement)});
      continue;
    }
    if (s.maximum_value < 1) {
      plan.skipped.push_back(
          {s.name, "MAXVALUE " + std::to_string(s.maximum_value) + " leaves no positive value"});
      continue;
    }
    if (!valid_name(s.name)) continue;
    Grid g = grid;
    if (s.increment > 0) {
      const auto inc = s.increment;
      const auto residue = ((s.start_value % inc) + inc) % inc;  // start_value may be negative
      g = Grid{static_cast<std::uint64_t>(inc),
               static_cast<std::uint64_t>(residue == 0 ? inc : residue)};
    }
    plan_one(plan, s.name, SourceKind::kSequence,
             static_cast<std::uint64_t>(std::max<std::int64_t>(s.next_not_cached_value, 1)), margin,
             g, static_cast<std::uint64_t>(s.maximum_value),
             s.cycle ? "the old sequence CYCLEs; ticketd never wraps (it stops at max_value)" : "");
  }
  for (const auto& name : source.missing) {
    plan.skipped.push_back({name, "no such table or sequence in the database"});
  }
  return plan;
}

std::string_view action_name(ImportAction action) {
  switch (action) {
    case ImportAction::kCreate:
      return "created";
    case ImportAction::kAdvance:
      return "advanced";
    case ImportAction::kUnchanged:
      return "unchanged";
    case ImportAction::kRefuse:
      return "refused";
  }
  return "?";
}

ImportDecision decide(const PlannedSequence& planned,
                      const std::optional<ExistingSequence>& existing) {
  if (!existing) return {ImportAction::kCreate, {}};
  if (existing->kind != SequenceKind::kTicket) {
    return {ImportAction::kRefuse, "ticketd already has a " +
                                       std::string(kind_name(existing->kind)) +
                                       " sequence of that name"};
  }
  const Grid wanted{planned.spec.increment, planned.spec.offset};
  if (!(existing->grid == wanted)) {
    return {ImportAction::kRefuse,
            "ticketd's sequence is on increment/offset " +
                std::to_string(existing->grid.increment) + "/" +
                std::to_string(existing->grid.offset) + ", the old server's on " +
                std::to_string(wanted.increment) + "/" + std::to_string(wanted.offset) +
                "; not re-gridding it (drop it, or import into a fresh data dir)"};
  }
  if (existing->exhausted || existing->next_value >= planned.spec.start) {
    return {ImportAction::kUnchanged, {}};
  }
  return {ImportAction::kAdvance, {}};
}

}  // namespace ticketd::migrate
