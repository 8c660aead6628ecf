#include "storage/etcd/etcd_codec.h"

#include <array>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <utility>

#include "server/base/parse_int.h"

namespace ticketd::etcd {
namespace json = boost::json;

namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// ---- encoding ----

json::string i64(std::int64_t v) { return json::string(std::to_string(v)); }

std::string_view target_name(CompareTarget t) {
  switch (t) {
    case CompareTarget::kVersion:
      return "VERSION";
    case CompareTarget::kCreateRevision:
      return "CREATE";
    case CompareTarget::kModRevision:
      return "MOD";
    case CompareTarget::kValue:
      return "VALUE";
    case CompareTarget::kLease:
      return "LEASE";
  }
  return "VERSION";
}

std::string_view result_name(CompareResult r) {
  switch (r) {
    case CompareResult::kEqual:
      return "EQUAL";
    case CompareResult::kGreater:
      return "GREATER";
    case CompareResult::kLess:
      return "LESS";
    case CompareResult::kNotEqual:
      return "NOT_EQUAL";
  }
  return "EQUAL";
}

json::object to_json(const RangeRequest& r) {
  json::object o;
  o["key"] = base64_encode(r.key);
  if (!r.range_end.empty()) o["range_end"] = base64_encode(r.range_end);
  if (r.limit != 0) o["limit"] = i64(r.limit);
  if (r.revision != 0) o["revision"] = i64(r.revision);
  if (r.keys_only) o["keys_only"] = true;
  if (r.count_only) o["count_only"] = true;
  if (r.descending) {
    o["sort_order"] = "DESCEND";
    o["sort_target"] = "KEY";
  }
  return o;
}

json::object to_json(const PutRequest& r) {
  json::object o;
  o["key"] = base64_encode(r.key);
  o["value"] = base64_encode(r.value);
  if (r.lease != 0) o["lease"] = i64(r.lease);
  if (r.prev_kv) o["prev_kv"] = true;
  return o;
}

json::object to_json(const DeleteRangeRequest& r) {
  json::object o;
  o["key"] = base64_encode(r.key);
  if (!r.range_end.empty()) o["range_end"] = base64_encode(r.range_end);
  if (r.prev_kv) o["prev_kv"] = true;
  return o;
}

json::object to_json(const Compare& c) {
  json::object o;
  o["key"] = base64_encode(c.key);
  if (!c.range_end.empty()) o["range_end"] = base64_encode(c.range_end);
  o["target"] = target_name(c.target);
  o["result"] = result_name(c.result);
  switch (c.target) {
    case CompareTarget::kVersion:
      o["version"] = i64(c.number);
      break;
    case CompareTarget::kCreateRevision:
      o["create_revision"] = i64(c.number);
      break;
    case CompareTarget::kModRevision:
      o["mod_revision"] = i64(c.number);
      break;
    case CompareTarget::kValue:
      o["value"] = base64_encode(c.value);
      break;
    case CompareTarget::kLease:
      o["lease"] = i64(c.number);
      break;
  }
  return o;
}

json::object to_json(const RequestOp& op) {
  json::object o;
  std::visit(
      [&o](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, RangeRequest>) {
          o["request_range"] = to_json(r);
        } else if constexpr (std::is_same_v<T, PutRequest>) {
          o["request_put"] = to_json(r);
        } else {
          o["request_delete_range"] = to_json(r);
        }
      },
      op);
  return o;
}

json::array ops_to_json(const std::vector<RequestOp>& ops) {
  json::array a;
  for (const auto& op : ops) a.push_back(to_json(op));
  return a;
}

// ---- decoding: each reader returns false on a field of the wrong type ----

const ErrorCode kBad = make_error_code(EtcdErrc::kBadResponse);

// A protobuf JSON integer: a string of digits or a JSON number. Missing is 0.
template <class T>
bool read_int(const json::object& o, std::string_view key, T& out) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    out = 0;
    return true;
  }
  if (v->is_int64()) {
    out = static_cast<T>(v->get_int64());
    return true;
  }
  if (v->is_uint64()) {
    out = static_cast<T>(v->get_uint64());
    return true;
  }
  if (!v->is_string()) return false;
  const auto& s = v->get_string();
  const auto parsed = parse_int<T>(s);
  if (!parsed) return false;
  out = *parsed;
  return true;
}

bool read_bool(const json::object& o, std::string_view key, bool& out) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    out = false;
    return true;
  }
  if (!v->is_bool()) return false;
  out = v->get_bool();
  return true;
}

bool read_bytes(const json::object& o, std::string_view key, std::string& out) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    out.clear();
    return true;
  }
  if (!v->is_string()) return false;
  auto decoded = base64_decode(v->get_string());
  if (!decoded) return false;
  out = std::move(*decoded);
  return true;
}

// The object under `key`; an empty one when missing (a zero-valued message is left out).
bool read_object(const json::object& o, std::string_view key, const json::object*& out) {
  static const json::object kEmpty;
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    out = &kEmpty;
    return true;
  }
  if (!v->is_object()) return false;
  out = &v->get_object();
  return true;
}

bool read_array(const json::object& o, std::string_view key, const json::array*& out) {
  static const json::array kEmpty;
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    out = &kEmpty;
    return true;
  }
  if (!v->is_array()) return false;
  out = &v->get_array();
  return true;
}

bool read_header(const json::object& o, ResponseHeader& h) {
  const json::object* ho = nullptr;
  return read_object(o, "header", ho) && read_int(*ho, "cluster_id", h.cluster_id) &&
         read_int(*ho, "member_id", h.member_id) && read_int(*ho, "revision", h.revision) &&
         read_int(*ho, "raft_term", h.raft_term);
}

bool read_kv(const json::value& v, KeyValue& kv) {
  if (!v.is_object()) return false;
  const auto& o = v.get_object();
  return read_bytes(o, "key", kv.key) && read_bytes(o, "value", kv.value) &&
         read_int(o, "create_revision", kv.create_revision) &&
         read_int(o, "mod_revision", kv.mod_revision) && read_int(o, "version", kv.version) &&
         read_int(o, "lease", kv.lease);
}

bool read_kvs(const json::object& o, std::string_view key, std::vector<KeyValue>& out) {
  const json::array* a = nullptr;
  if (!read_array(o, key, a)) return false;
  out.clear();
  out.reserve(a->size());
  for (const auto& item : *a) {
    KeyValue kv;
    if (!read_kv(item, kv)) return false;
    out.push_back(std::move(kv));
  }
  return true;
}

bool read(const json::object& o, RangeResponse& r) {
  return read_header(o, r.header) && read_kvs(o, "kvs", r.kvs) && read_bool(o, "more", r.more) &&
         read_int(o, "count", r.count);
}

bool read(const json::object& o, PutResponse& r) {
  if (!read_header(o, r.header)) return false;
  if (const auto* p = o.if_contains("prev_kv"); p != nullptr && !p->is_null()) {
    KeyValue kv;
    if (!read_kv(*p, kv)) return false;
    r.prev_kv = std::move(kv);
  }
  return true;
}

bool read(const json::object& o, DeleteRangeResponse& r) {
  return read_header(o, r.header) && read_int(o, "deleted", r.deleted) &&
         read_kvs(o, "prev_kvs", r.prev_kvs);
}

bool read(const json::object& o, TxnResponse& r) {
  const json::array* a = nullptr;
  if (!read_header(o, r.header) || !read_bool(o, "succeeded", r.succeeded) ||
      !read_array(o, "responses", a)) {
    return false;
  }
  for (const auto& item : *a) {
    if (!item.is_object()) return false;
    const auto& io = item.get_object();
    const json::object* body = nullptr;
    if (io.contains("response_range")) {
      RangeResponse rr;
      if (!read_object(io, "response_range", body) || !read(*body, rr)) return false;
      r.responses.emplace_back(std::move(rr));
    } else if (io.contains("response_put")) {
      PutResponse pr;
      if (!read_object(io, "response_put", body) || !read(*body, pr)) return false;
      r.responses.emplace_back(std::move(pr));
    } else if (io.contains("response_delete_range")) {
      DeleteRangeResponse dr;
      if (!read_object(io, "response_delete_range", body) || !read(*body, dr)) return false;
      r.responses.emplace_back(std::move(dr));
    } else {
      return false;  // a nested txn response: this client never sends one
    }
  }
  return true;
}

bool read(const json::object& o, LeaseGrantResponse& r) {
  const auto* error = o.if_contains("error");
  // LeaseGrantResponse carries its own error string (a refused grant can still be HTTP 200).
  if (error != nullptr && error->is_string() && !error->get_string().empty()) return false;
  return read_header(o, r.header) && read_int(o, "ID", r.id) && read_int(o, "TTL", r.ttl_s);
}

bool read(const json::object& o, LeaseKeepAliveResponse& r) {
  const json::object* result = nullptr;
  if (!o.contains("result") || !read_object(o, "result", result)) return false;
  return read_header(*result, r.header) && read_int(*result, "ID", r.id) &&
         read_int(*result, "TTL", r.ttl_s);
}

bool read(const json::object& o, LeaseRevokeResponse& r) { return read_header(o, r.header); }

bool read(const json::object& o, WatchResponse& r) {
  const json::object* result = nullptr;
  if (!o.contains("result") || !read_object(o, "result", result)) return false;
  const json::array* events = nullptr;
  std::string reason;
  if (!read_header(*result, r.header) || !read_int(*result, "watch_id", r.watch_id) ||
      !read_bool(*result, "created", r.created) || !read_bool(*result, "canceled", r.canceled) ||
      !read_int(*result, "compact_revision", r.compact_revision) ||
      !read_array(*result, "events", events)) {
    return false;
  }
  if (const auto* cr = result->if_contains("cancel_reason"); cr != nullptr && !cr->is_null()) {
    if (!cr->is_string()) return false;
    r.cancel_reason = std::string(cr->get_string());
  }
  for (const auto& item : *events) {
    if (!item.is_object()) return false;
    const auto& eo = item.get_object();
    WatchEvent e;
    if (const auto* t = eo.if_contains("type"); t != nullptr && !t->is_null()) {
      if (t->is_string() && t->get_string() == "DELETE") {
        e.type = WatchEvent::Type::kDelete;
      } else if (!(t->is_string() && t->get_string() == "PUT")) {
        return false;
      }
    }
    const auto* kv = eo.if_contains("kv");
    if (kv != nullptr && !read_kv(*kv, e.kv)) return false;
    r.events.push_back(std::move(e));
  }
  return true;
}

bool read(const json::object& o, AuthenticateResponse& r) {
  if (!read_header(o, r.header)) return false;
  const auto* token = o.if_contains("token");
  if (token == nullptr || !token->is_string() || token->get_string().empty()) return false;
  r.token = std::string(token->get_string());
  return true;
}

template <class T>
Result<T> decode_as(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return kBad;
  T out;
  if (!read(v.get_object(), out)) return kBad;
  return out;
}

}  // namespace

Compare Compare::create_revision(std::string key, CompareResult r, std::int64_t n) {
  return Compare{std::move(key), CompareTarget::kCreateRevision, r, n, {}, {}};
}
Compare Compare::mod_revision(std::string key, CompareResult r, std::int64_t n) {
  return Compare{std::move(key), CompareTarget::kModRevision, r, n, {}, {}};
}
Compare Compare::version(std::string key, CompareResult r, std::int64_t n) {
  return Compare{std::move(key), CompareTarget::kVersion, r, n, {}, {}};
}
Compare Compare::lease(std::string key, CompareResult r, std::int64_t n) {
  return Compare{std::move(key), CompareTarget::kLease, r, n, {}, {}};
}
Compare Compare::value_is(std::string key, CompareResult r, std::string v) {
  return Compare{std::move(key), CompareTarget::kValue, r, 0, std::move(v), {}};
}
Compare Compare::absent(std::string key) {
  return create_revision(std::move(key), CompareResult::kEqual, 0);
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 2]));
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int s = sextet(c);
    if (s < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(s);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string encode(const RangeRequest& r) { return json::serialize(to_json(r)); }
std::string encode(const PutRequest& r) { return json::serialize(to_json(r)); }
std::string encode(const DeleteRangeRequest& r) { return json::serialize(to_json(r)); }

std::string encode(const TxnRequest& r) {
  json::object o;
  json::array compare;
  for (const auto& c : r.compare) compare.push_back(to_json(c));
  o["compare"] = std::move(compare);
  o["success"] = ops_to_json(r.success);
  o["failure"] = ops_to_json(r.failure);
  return json::serialize(o);
}

std::string encode_lease_grant(std::int64_t ttl_s, std::int64_t id) {
  json::object o;
  o["TTL"] = i64(ttl_s);
  if (id != 0) o["ID"] = i64(id);
  return json::serialize(o);
}

std::string encode_lease_id(std::int64_t id) {
  json::object o;
  o["ID"] = i64(id);
  return json::serialize(o);
}

std::string encode(const WatchCreateRequest& r) {
  json::object c;
  c["key"] = base64_encode(r.key);
  if (!r.range_end.empty()) c["range_end"] = base64_encode(r.range_end);
  if (r.start_revision != 0) c["start_revision"] = i64(r.start_revision);
  if (r.prev_kv) c["prev_kv"] = true;
  json::object o;
  o["create_request"] = std::move(c);
  return json::serialize(o);
}

std::string encode_authenticate(std::string_view name, std::string_view password) {
  json::object o;
  o["name"] = name;
  o["password"] = password;
  return json::serialize(o);
}

Result<WatchResponse> decode_watch_response(std::string_view j) {
  return decode_as<WatchResponse>(j);
}
Result<AuthenticateResponse> decode_authenticate_response(std::string_view j) {
  return decode_as<AuthenticateResponse>(j);
}

std::optional<GatewayError> decode_stream_error(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto* e = v.get_object().if_contains("error");
  if (e == nullptr || !e->is_object()) return std::nullopt;
  const auto& o = e->get_object();
  GatewayError out;
  for (const char* key : {"grpc_code", "code"}) {
    const auto* c = o.if_contains(key);
    if (c != nullptr && c->is_int64()) {
      out.code = static_cast<int>(c->get_int64());
      break;
    }
  }
  if (const auto* m = o.if_contains("message"); m != nullptr && m->is_string()) {
    out.message = std::string(m->get_string());
  }
  return out;
}

Result<RangeResponse> decode_range_response(std::string_view j) {
  return decode_as<RangeResponse>(j);
}
Result<PutResponse> decode_put_response(std::string_view j) { return decode_as<PutResponse>(j); }
Result<DeleteRangeResponse> decode_delete_range_response(std::string_view j) {
  return decode_as<DeleteRangeResponse>(j);
}
Result<TxnResponse> decode_txn_response(std::string_view j) { return decode_as<TxnResponse>(j); }
Result<LeaseGrantResponse> decode_lease_grant_response(std::string_view j) {
  return decode_as<LeaseGrantResponse>(j);
}
Result<LeaseKeepAliveResponse> decode_lease_keepalive_response(std::string_view j) {
  return decode_as<LeaseKeepAliveResponse>(j);
}
Result<LeaseRevokeResponse> decode_lease_revoke_response(std::string_view j) {
  return decode_as<LeaseRevokeResponse>(j);
}

std::optional<GatewayError> decode_gateway_error(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  GatewayError e;
  const auto* code = o.if_contains("code");
  if (code == nullptr || !code->is_int64()) return std::nullopt;
  e.code = static_cast<int>(code->get_int64());
  for (const char* key : {"message", "error"}) {
    const auto* m = o.if_contains(key);
    if (m != nullptr && m->is_string() && !m->get_string().empty()) {
      e.message = std::string(m->get_string());
      break;
    }
  }
  return e;
}

}  // namespace ticketd::etcd
