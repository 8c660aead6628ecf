#include "server/http/json_codec.h"

#include <boost/json/array.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <set>
#include <type_traits>
#include <variant>
#include <vector>

#include "server/base/parse_int.h"
#include "server/base/utf8.h"
#include "server/http/http_errc.h"

namespace ticketd::http {
namespace json = boost::json;

namespace {

Error invalid(std::string message) { return Error{HttpErrc::kInvalidField, std::move(message)}; }

std::string quoted(std::string_view field) { return "'" + std::string(field) + "'"; }

// A SAX handler for json::basic_parser that only looks for an object holding the same key
// twice. Boost.JSON 1.81 has no parse option for this and its DOM keeps the last value, so
// {"count":1,"count":5000} would read as 5000 while a proxy or audit log may have seen 1.
class DuplicateKeyFinder {
 public:
  static constexpr std::size_t max_object_size = -1;
  static constexpr std::size_t max_array_size = -1;
  static constexpr std::size_t max_key_size = -1;
  static constexpr std::size_t max_string_size = -1;

  std::optional<std::string> duplicate;  // the first key found twice in one object

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_array_begin(boost::system::error_code&) {
    frames_.push_back(std::nullopt);
    return true;
  }
  bool on_array_end(std::size_t, boost::system::error_code&) {
    frames_.pop_back();
    return true;
  }
  bool on_object_begin(boost::system::error_code&) {
    frames_.emplace_back(std::set<std::string>{});
    return true;
  }
  bool on_object_end(std::size_t, boost::system::error_code&) {
    frames_.pop_back();
    return true;
  }
  bool on_string_part(std::string_view, std::size_t, boost::system::error_code&) { return true; }
  bool on_string(std::string_view, std::size_t, boost::system::error_code&) { return true; }
  bool on_key_part(std::string_view s, std::size_t, boost::system::error_code&) {
    key_.append(s);
    return true;
  }
  bool on_key(std::string_view s, std::size_t, boost::system::error_code& ec) {
    key_.append(s);
    auto& keys = frames_.back();
    if (keys && !keys->insert(key_).second) {
      duplicate = std::move(key_);
      ec = json::error::syntax;  // stops the parser; `duplicate` says why
      return false;
    }
    key_.clear();
    return true;
  }
  bool on_number_part(std::string_view, boost::system::error_code&) { return true; }
  bool on_int64(std::int64_t, std::string_view, boost::system::error_code&) { return true; }
  bool on_uint64(std::uint64_t, std::string_view, boost::system::error_code&) { return true; }
  bool on_double(double, std::string_view, boost::system::error_code&) { return true; }
  bool on_bool(bool, boost::system::error_code&) { return true; }
  bool on_null(boost::system::error_code&) { return true; }
  bool on_comment_part(std::string_view, boost::system::error_code&) { return true; }
  bool on_comment(std::string_view, boost::system::error_code&) { return true; }

 private:
  std::vector<std::optional<std::set<std::string>>> frames_;  // nullopt: an array
  std::string key_;
};

// The first key that some object of `body` (already known to be valid JSON) holds twice.
std::optional<std::string> find_duplicate_key(std::string_view body,
                                              const json::parse_options& opts) {
  json::basic_parser<DuplicateKeyFinder> p(opts);
  boost::system::error_code ec;
  p.write_some(false, body.data(), body.size(), ec);
  return std::move(p.handler().duplicate);
}

// An empty body (no body at all), or "{}" with JSON whitespace around: most requests to `next`.
// Answered without the parser (and its allocations).
bool is_empty_object(std::string_view body) {
  const auto skip_space = [&body] {
    while (!body.empty() && (body.front() == ' ' || body.front() == '\t' || body.front() == '\n' ||
                             body.front() == '\r')) {
      body.remove_prefix(1);
    }
  };
  if (body.empty()) return true;
  skip_space();
  if (body.empty() || body.front() != '{') return false;  // only spaces: malformed JSON
  body.remove_prefix(1);
  skip_space();
  if (body.empty() || body.front() != '}') return false;
  body.remove_prefix(1);
  skip_space();
  return body.empty();
}

}  // namespace

DetailedResult<json::object> parse_object(std::string_view body) {
  if (is_empty_object(body)) return json::object{};
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 8;  // request bodies are flat; deep nesting is only an attack
  json::value v = json::parse(body, ec, {}, opts);
  if (ec) return Error{HttpErrc::kMalformed, "request body is not valid JSON: " + ec.message()};
  if (auto key = find_duplicate_key(body, opts)) {
    constexpr std::size_t kMaxKeyShown = 64;
    if (key->size() > kMaxKeyShown) key = key->substr(0, kMaxKeyShown) + "...";
    return Error{HttpErrc::kMalformed,
                 "request body has the key " + quoted(*key) + " more than once"};
  }
  if (!v.is_object()) return invalid("request body must be a JSON object");
  return std::move(v.as_object());
}

DetailedResult<void> reject_unknown_fields(const json::object& obj,
                                           std::initializer_list<std::string_view> allowed) {
  for (const auto& kv : obj) {
    bool known = false;
    for (auto a : allowed) known = known || kv.key() == a;
    if (!known) return invalid("unknown field " + quoted(kv.key()));
  }
  return {};
}

DetailedResult<std::optional<std::uint64_t>> read_integer(const json::object& obj,
                                                          std::string_view field, std::uint64_t min,
                                                          std::uint64_t max) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return std::optional<std::uint64_t>{};
  const std::string range =
      " must be an integer in " + std::to_string(min) + ".." + std::to_string(max);
  std::uint64_t n = 0;
  if (v->is_uint64()) {
    n = v->get_uint64();
  } else if (v->is_int64()) {
    if (v->get_int64() < 0) return invalid(quoted(field) + range);
    n = static_cast<std::uint64_t>(v->get_int64());
  } else {
    // Doubles (1.5, 1e3, or integers too large for 64 bits), strings, booleans, null.
    return invalid(quoted(field) + range);
  }
  if (n < min || n > max) return invalid(quoted(field) + range);
  return std::optional<std::uint64_t>{n};
}

DetailedResult<std::optional<std::uint64_t>> read_id(const json::object& obj,
                                                     std::string_view field) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return std::optional<std::uint64_t>{};
  const std::string what =
      quoted(field) + " must be an unsigned 64-bit integer (a JSON integer or a decimal string)";
  if (v->is_uint64()) return std::optional<std::uint64_t>{v->get_uint64()};
  if (v->is_int64()) {
    if (v->get_int64() < 0) return invalid(what);
    return std::optional<std::uint64_t>{static_cast<std::uint64_t>(v->get_int64())};
  }
  if (v->is_string()) {
    auto n = parse_u64(v->get_string());
    if (!n) return invalid(what);
    return std::optional<std::uint64_t>{*n};
  }
  return invalid(what);
}

DetailedResult<std::optional<std::string>> read_string(const json::object& obj,
                                                       std::string_view field) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return std::optional<std::string>{};
  if (!v->is_string()) return invalid(quoted(field) + " must be a string");
  return std::optional<std::string>{std::string(v->get_string())};
}

namespace {

// {"name", "kind", the kind's fields...}: every sequence's JSON, whatever its kind.
json::object described_json(std::string_view name, SequenceKind kind,
                            const std::vector<DescribedField>& fields) {
  json::object out;
  out.reserve(fields.size() + 2);
  out["name"] = name;
  out["kind"] = kind_name(kind);
  for (const auto& f : fields) {
    auto& v = out[f.key];
    std::visit(
        [&v](const auto& x) {
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) {
            v = nullptr;
          } else {
            v = x;
          }
        },
        f.value);
  }
  return out;
}

}  // namespace

json::object sequence_json(const SequenceInfo& info) {
  return described_json(info.spec.name, info.spec.kind, ticket_fields(info));
}

json::object lease_json(const Lease& lease) {
  return json::object{
      {"lease_id", lease.lease_id},
      {"sequence", lease.sequence},
      {"first", std::to_string(lease.block.first)},
      {"last", std::to_string(lease.block.last())},
      {"step", lease.block.step},
      {"count", lease.block.count},
      {"holder", lease.holder},
      {"granted_at", format_utc_ms(lease.granted_at_ms)},
  };
}

json::object worker_lease_json(const PoolLease& lease) {
  return json::object{
      {"lease_id", lease.lease_id},
      {"pool", lease.pool},
      {"worker_id", lease.worker_id},
      {"holder", lease.holder},
      {"ttl_s", lease.ttl_ms / 1000},
      {"granted_at", format_utc_ms(lease.granted_at_ms)},
      {"expires_at", format_utc_ms(lease.expires_at_ms)},
      {"expires_at_ms", lease.expires_at_ms},
      {"not_before_ms", lease.not_before_ms},
      {"high_water_ms", lease.high_water_ms},
  };
}

json::object worker_pool_json(const WorkerPoolStatus& status) {
  json::array leases;
  for (const auto& l : status.live) leases.push_back(worker_lease_json(l));
  return json::object{
      {"pool", status.spec.name},
      {"size", status.spec.size},
      {"min_ttl_s", status.spec.min_ttl_ms / 1000},
      {"max_ttl_s", status.spec.max_ttl_ms / 1000},
      {"default_ttl_s", status.spec.default_ttl_ms / 1000},
      {"leased", status.live.size()},
      {"leases", std::move(leases)},
  };
}

// Messages echo what the request held (a Content-Type, a path segment, a query key), which may
// be any bytes; JSON text must be UTF-8, so those that are not become U+FFFD.
std::string error_body(std::string_view code, std::string_view message) {
  return json::serialize(
      json::object{{"error", json::object{{"code", code}, {"message", to_valid_utf8(message)}}}});
}

std::string not_leader_body(std::string_view code, std::string_view message,
                            std::string_view leader_http) {
  return json::serialize(json::object{
      {"error", json::object{{"code", code},
                             {"message", to_valid_utf8(message)},
                             {"leader", leader_http.empty() ? json::value(nullptr)
                                                            : json::value(leader_http)}}}});
}

json::object status_json(std::string_view status) { return json::object{{"status", status}}; }

json::object reload_json(const std::vector<std::string>& applied) {
  json::array items;
  for (const auto& a : applied) items.emplace_back(a);
  return json::object{{"status", "reloaded"}, {"applied", std::move(items)}};
}

namespace {

json::value address_json(const InstanceAddress& a) {
  if (a.mysql.empty() && a.http.empty()) return nullptr;
  return json::object{{"mysql", a.mysql}, {"http", a.http}};
}

// Values that can pass 2^53 travel as decimal strings; an absent one is null.
json::value optional_id(const std::optional<std::uint64_t>& v) {
  if (!v) return nullptr;
  return json::value(std::to_string(*v));
}

}  // namespace

json::object cluster_json(const ClusterView& view, bool serving) {
  // "term" and "revision" carry the same number: the leader key's create revision.
  return json::object{{"role", role_name(view.role)},
                      {"serving", serving},
                      {"leader", address_json(view.leader)},
                      {"self", address_json(view.self)},
                      {"term", view.revision},
                      {"revision", view.revision}};
}

json::object snowflake_parts_json(std::uint64_t id, const SnowflakeParts& parts) {
  return json::object{{"id", std::to_string(id)},
                      {"unix_ms", parts.unix_ms},
                      {"timestamp", format_utc_ms(parts.unix_ms)},
                      {"worker", parts.worker},
                      {"sequence", parts.sequence}};
}

json::object sequence_description_json(const SequenceDescription& d) {
  return described_json(d.spec.name, d.spec.kind, d.fields);
}

json::object sequence_list_json(const std::vector<SequenceDescription>& list) {
  json::array sequences;
  sequences.reserve(list.size());
  for (const auto& d : list) sequences.push_back(sequence_description_json(d));
  return json::object{{"sequences", std::move(sequences)}};
}

json::object gapless_sequence_json(std::string_view name, const GaplessAudit& audit,
                                   std::uint64_t next_value) {
  return json::object{{"name", name},
                      {"kind", "gapless"},
                      {"order", order_name(audit.order)},
                      {"next_value", std::to_string(next_value)},
                      {"committed_through", optional_id(audit.committed_through)}};
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20) {
      out += ch;
    } else {
      out += '\\';
      switch (c) {
        case '\b':
          out += 'b';
          break;
        case '\t':
          out += 't';
          break;
        case '\n':
          out += 'n';
          break;
        case '\f':
          out += 'f';
          break;
        case '\r':
          out += 'r';
          break;
        default:
          out += "u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
      }
    }
  }
  out += '"';
}

namespace {
// Appends v in decimal.
void append_decimal(std::string& out, std::uint64_t v) {
  char digits[20];
  const auto [end, ec] = std::to_chars(std::begin(digits), std::end(digits), v);
  out.append(std::begin(digits), end);
}
}  // namespace

std::string block_ids_text(std::string_view sequence, const Block& block) {
  std::string out;
  append_block_ids(out, sequence, block);
  return out;
}

void append_block_ids(std::string& out, std::string_view sequence, const Block& block) {
  constexpr std::string_view kHead = R"({"sequence":)";
  constexpr std::string_view kIds = R"(,"ids":[)";
  constexpr std::size_t kMaxIdText = 23;  // 20 digits, two quotes, a comma
  out.reserve(out.size() + kHead.size() + sequence.size() + 2 + kIds.size() +
              block.count * kMaxIdText + 2);
  out += kHead;
  append_json_string(out, sequence);
  out += kIds;
  for (std::uint64_t i = 0; i < block.count; ++i) {
    if (i != 0) out += ',';
    out += '"';
    append_decimal(out, block.first + i * block.step);
    out += '"';
  }
  out += "]}";
}

std::string lease_text(const Lease& lease) {
  std::string out;
  out.reserve(160 + lease.lease_id.size() + lease.sequence.size() + lease.holder.size());
  out += R"({"lease_id":)";
  append_json_string(out, lease.lease_id);
  out += R"(,"sequence":)";
  append_json_string(out, lease.sequence);
  out += R"(,"first":")";
  append_decimal(out, lease.block.first);
  out += R"(","last":")";
  append_decimal(out, lease.block.last());
  out += R"(","step":)";
  append_decimal(out, lease.block.step);
  out += R"(,"count":)";
  append_decimal(out, lease.block.count);
  out += R"(,"holder":)";
  append_json_string(out, lease.holder);
  out += R"(,"granted_at":)";
  append_json_string(out, format_utc_ms(lease.granted_at_ms));
  out += '}';
  return out;
}

json::object text_ids_json(std::string_view sequence, const std::vector<std::string>& ids) {
  json::array list;
  list.reserve(ids.size());
  for (const auto& id : ids) list.push_back(json::value(id));
  return json::object{{"sequence", sequence}, {"ids", std::move(list)}};
}

json::object lease_list_json(std::string_view sequence, const std::vector<Lease>& leases) {
  json::array list;
  list.reserve(leases.size());
  for (const auto& l : leases) list.push_back(lease_json(l));
  return json::object{{"sequence", sequence}, {"leases", std::move(list)}};
}

json::object reservation_json(std::string_view sequence, const Reservation& reservation) {
  return json::object{{"sequence", sequence},
                      {"reservation_id", reservation.id},
                      {"id", std::to_string(reservation.number)},
                      {"holder", reservation.holder},
                      {"expires_at", format_utc_ms(reservation.expires_at_unix_ms)}};
}

json::object reservation_outcome_json(std::string_view sequence, std::string_view reservation_id,
                                      std::string_view number,
                                      const std::optional<std::string>& void_reason) {
  json::object o{{"sequence", sequence},
                 {"reservation_id", reservation_id},
                 {"id", number},
                 {"status", void_reason ? "void" : "committed"}};
  if (void_reason) o["reason"] = *void_reason;
  return o;
}

json::object gapless_audit_json(std::string_view sequence, const GaplessAudit& audit) {
  json::array pending;
  json::array released;
  json::array voids;
  json::array holes;
  for (const auto& p : audit.pending) {
    pending.push_back(json::object{{"reservation_id", p.reservation.id},
                                   {"id", std::to_string(p.reservation.number)},
                                   {"holder", p.reservation.holder},
                                   {"expires_at", format_utc_ms(p.reservation.expires_at_unix_ms)},
                                   {"state", p.state}});
  }
  for (auto n : audit.released) released.push_back(json::value(std::to_string(n)));
  for (const auto& [n, reason] : audit.voids) {
    voids.push_back(json::object{{"id", std::to_string(n)}, {"reason", reason}});
  }
  for (auto n : audit.holes) holes.push_back(json::value(std::to_string(n)));
  return json::object{{"sequence", sequence},
                      {"kind", "gapless"},
                      {"order", order_name(audit.order)},
                      {"committed_through", optional_id(audit.committed_through)},
                      {"high", optional_id(audit.high)},
                      {"committed", audit.committed},
                      {"pending", std::move(pending)},
                      {"released", std::move(released)},
                      {"voids", std::move(voids)},
                      {"holes", std::move(holes)},
                      {"waiting", audit.waiting},
                      {"commits", audit.commits},
                      {"releases", audit.releases},
                      {"expiries", audit.expiries},
                      {"queue_timeouts", audit.queue_timeouts}};
}

}  // namespace ticketd::http
