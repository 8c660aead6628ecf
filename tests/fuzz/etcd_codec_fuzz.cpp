// The etcd v3 JSON-gateway codec: the response decoders on arbitrary text, and both directions
// on values built from the input.
//
// Input: a selector byte, then what that case reads. Invariants:
// - no decoder crashes or throws, whatever the JSON (deep nesting included);
// - base64: encode then decode is the identity, the encoding is canonical (padded, standard
//   alphabet, 4 characters per 3 bytes) and every text that decodes re-encodes to a text that
//   decodes to the same bytes;
// - prefix_end(p) is above every key that starts with p and is not itself such a key;
// - request bodies built from input keys and values are JSON whose keys decode back to them;
// - a response written the way the gateway writes it (64-bit integers as strings or numbers,
//   zero fields left out or not, bytes in base64) decodes to exactly the values written.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "storage/etcd/etcd_codec.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace json = boost::json;
using namespace ::ticketd::etcd;
using ticketd::fuzz::Input;

void decoders(std::string_view text) {
  (void)decode_range_response(text);
  (void)decode_put_response(text);
  (void)decode_delete_range_response(text);
  (void)decode_txn_response(text);
  (void)decode_lease_grant_response(text);
  (void)decode_lease_keepalive_response(text);
  (void)decode_lease_revoke_response(text);
  (void)decode_gateway_error(text);
  (void)decode_watch_response(text);
  (void)decode_authenticate_response(text);
  (void)decode_stream_error(text);
  if (auto txn = decode_txn_response(text)) {
    for (const auto& r : txn->responses) (void)r.index();
  }
}

void base64(std::string_view bytes) {
  const std::string text = base64_encode(bytes);
  FUZZ_CHECK(text.size() == (bytes.size() + 2) / 3 * 4);
  FUZZ_CHECK(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789+/=") == std::string::npos);
  const auto back = base64_decode(text);
  FUZZ_CHECK(back && *back == bytes);
  // The input read as base64 text: when it decodes, the canonical text of its bytes decodes to
  // the same bytes.
  if (const auto decoded = base64_decode(bytes)) {
    FUZZ_CHECK(decoded->size() <= bytes.size());
    const auto again = base64_decode(base64_encode(*decoded));
    FUZZ_CHECK(again && *again == *decoded);
  }
}

void prefix(Input& in) {
  const std::string p(in.bytes(in.u8()));
  const std::string suffix(in.rest());
  const std::string end = prefix_end(p);
  const std::string key = p + suffix;
  if (end == std::string(1, '\0')) {
    // Every key: the prefix is empty or all 0xff.
    FUZZ_CHECK(p.find_first_not_of('\xff') == std::string::npos);
    return;
  }
  // std::string compares its chars as unsigned bytes, as etcd compares keys.
  FUZZ_CHECK(key < end);
  FUZZ_CHECK(!end.starts_with(p));
}

std::int64_t i64(Input& in) {
  const std::uint64_t lo = in.u32();
  return static_cast<std::int64_t>(lo | (static_cast<std::uint64_t>(in.u32()) << 32));
}

std::string key_of(Input& in) { return std::string(in.bytes(in.u8() % 40)); }

RequestOp op_of(Input& in) {
  switch (in.u8() % 3) {
    case 0:
      return RangeRequest{.key = key_of(in),
                          .range_end = key_of(in),
                          .limit = i64(in),
                          .keys_only = (in.u8() & 1) != 0,
                          .descending = (in.u8() & 1) != 0};
    case 1:
      return PutRequest{.key = key_of(in), .value = key_of(in), .lease = i64(in)};
    default:
      return DeleteRangeRequest{.key = key_of(in), .range_end = key_of(in)};
  }
}

std::string key_field(const RequestOp& op) {
  return std::visit([](const auto& r) { return r.key; }, op);
}

void requests(Input& in) {
  TxnRequest txn;
  for (int n = in.u8() % 4; n > 0; --n) {
    Compare c;
    c.key = key_of(in);
    c.target = static_cast<CompareTarget>(in.u8() % 5);
    c.result = static_cast<CompareResult>(in.u8() % 4);
    c.number = i64(in);
    c.value = key_of(in);
    txn.compare.push_back(c);
  }
  for (int n = in.u8() % 4; n > 0; --n) txn.success.push_back(op_of(in));
  for (int n = in.u8() % 4; n > 0; --n) txn.failure.push_back(op_of(in));
  const json::value v = json::parse(encode(txn));
  const auto& o = v.as_object();
  FUZZ_CHECK(o.at("compare").as_array().size() == txn.compare.size());
  for (std::size_t i = 0; i < txn.compare.size(); ++i) {
    const auto& c = o.at("compare").as_array()[i].as_object();
    FUZZ_CHECK(base64_decode(c.at("key").as_string()) == txn.compare[i].key);
  }
  const auto& success = o.at("success").as_array();
  FUZZ_CHECK(success.size() == txn.success.size());
  for (std::size_t i = 0; i < success.size(); ++i) {
    const auto& wrapper = success[i].as_object();
    FUZZ_CHECK(wrapper.size() == 1);
    const auto& body = wrapper.begin()->value().as_object();
    const auto* key = body.if_contains("key");
    const std::string expected = key_field(txn.success[i]);
    FUZZ_CHECK(key != nullptr || expected.empty());
    if (key != nullptr) FUZZ_CHECK(base64_decode(key->as_string()) == expected);
  }
  for (const auto& op : txn.failure) {
    const std::string body = std::visit([](const auto& r) { return encode(r); }, op);
    FUZZ_CHECK(json::parse(body).is_object());
  }
  (void)json::parse(encode_lease_grant(i64(in), i64(in)));
  (void)json::parse(encode_lease_id(i64(in)));
}

// Writes responses as the gateway does, with the choices the input makes.
class Writer {
 public:
  explicit Writer(Input& in) : in_(in) {}

  template <class T>
  void integer(json::object& o, std::string_view key, T v) {
    const std::uint8_t how = in_.u8() % 3;
    if (v == 0 && how == 0) return;  // zero fields are left out
    if (how == 1) {
      o[key] = json::string(std::to_string(v));
    } else {
      o[key] = v;
    }
  }
  void bytes(json::object& o, std::string_view key, const std::string& v) {
    if (v.empty() && (in_.u8() & 1)) return;
    o[key] = json::string(base64_encode(v));
  }
  void boolean(json::object& o, std::string_view key, bool v) {
    if (!v && (in_.u8() & 1)) return;
    o[key] = v;
  }
  json::object header(const ResponseHeader& h) {
    json::object o;
    integer(o, "cluster_id", h.cluster_id);
    integer(o, "member_id", h.member_id);
    integer(o, "revision", h.revision);
    integer(o, "raft_term", h.raft_term);
    return o;
  }
  json::object kv(const KeyValue& kv) {
    json::object o;
    bytes(o, "key", kv.key);
    bytes(o, "value", kv.value);
    integer(o, "create_revision", kv.create_revision);
    integer(o, "mod_revision", kv.mod_revision);
    integer(o, "version", kv.version);
    integer(o, "lease", kv.lease);
    return o;
  }

 private:
  Input& in_;
};

ResponseHeader header_of(Input& in) {
  return ResponseHeader{static_cast<std::uint64_t>(i64(in)), static_cast<std::uint64_t>(i64(in)),
                        i64(in), static_cast<std::uint64_t>(i64(in))};
}

KeyValue kv_of(Input& in) {
  return KeyValue{key_of(in), key_of(in), i64(in), i64(in), i64(in), i64(in)};
}

void responses(Input& in) {
  Writer w(in);
  RangeResponse range;
  range.header = header_of(in);
  for (int n = in.u8() % 5; n > 0; --n) range.kvs.push_back(kv_of(in));
  range.more = (in.u8() & 1) != 0;
  range.count = i64(in);
  json::object ro;
  ro["header"] = w.header(range.header);
  json::array kvs;
  for (const auto& kv : range.kvs) kvs.push_back(w.kv(kv));
  if (!kvs.empty() || (in.u8() & 1)) ro["kvs"] = std::move(kvs);
  w.boolean(ro, "more", range.more);
  w.integer(ro, "count", range.count);
  const auto decoded = decode_range_response(json::serialize(ro));
  FUZZ_CHECK(decoded.has_value());
  FUZZ_CHECK(decoded->header == range.header);
  FUZZ_CHECK(decoded->kvs == range.kvs);
  FUZZ_CHECK(decoded->more == range.more && decoded->count == range.count);

  // The same range inside a transaction, after a put with its previous value and a delete.
  const KeyValue prev = kv_of(in);
  const std::int64_t deleted = i64(in);
  json::object put;
  put["header"] = w.header(range.header);
  put["prev_kv"] = w.kv(prev);
  json::object del;
  del["header"] = w.header(range.header);
  w.integer(del, "deleted", deleted);
  json::array ops;
  ops.push_back(json::object{{"response_put", put}});
  ops.push_back(json::object{{"response_delete_range", del}});
  ops.push_back(json::object{{"response_range", ro}});
  json::object txn;
  txn["header"] = w.header(range.header);
  const bool succeeded = (in.u8() & 1) != 0;
  w.boolean(txn, "succeeded", succeeded);
  txn["responses"] = std::move(ops);
  const auto t = decode_txn_response(json::serialize(txn));
  FUZZ_CHECK(t.has_value());
  FUZZ_CHECK(t->succeeded == succeeded && t->responses.size() == 3);
  const auto& p = std::get<PutResponse>(t->responses[0]);
  FUZZ_CHECK(p.prev_kv && *p.prev_kv == prev);
  FUZZ_CHECK(std::get<DeleteRangeResponse>(t->responses[1]).deleted == deleted);
  FUZZ_CHECK(std::get<RangeResponse>(t->responses[2]).kvs == range.kvs);

  json::object grant;
  grant["header"] = w.header(range.header);
  const std::int64_t id = i64(in);
  const std::int64_t ttl = i64(in);
  w.integer(grant, "ID", id);
  w.integer(grant, "TTL", ttl);
  const auto g = decode_lease_grant_response(json::serialize(grant));
  FUZZ_CHECK(g && g->id == id && g->ttl_s == ttl);
  const auto k = decode_lease_keepalive_response(json::serialize(json::object{{"result", grant}}));
  FUZZ_CHECK(k && k->id == id && k->ttl_s == ttl && k->header == range.header);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  switch (in.u8() % 5) {
    case 0:
      decoders(in.rest());
      break;
    case 1:
      base64(in.rest());
      break;
    case 2:
      prefix(in);
      break;
    case 3:
      requests(in);
      break;
    case 4:
      responses(in);
      break;
  }
  return 0;
}
