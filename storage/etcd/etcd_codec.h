// The etcd v3 JSON gateway's messages as plain structs, with pure encode/decode functions.
//
// The gateway (https://etcd.io/docs/v3.4/dev-guide/api_grpc_gateway/) maps the gRPC API of
// etcdserverpb to JSON with protobuf's JSON rules: keys and values are base64, 64-bit integers
// are strings, and fields holding their zero value (false, 0, empty) are left out. Decoders
// therefore treat a missing field as its zero value and accept integers as strings or numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/base/result.h"
#include "storage/etcd/etcd_errc.h"

namespace ticketd::etcd {

/// etcdserverpb.ResponseHeader.
struct ResponseHeader {
  std::uint64_t cluster_id = 0;
  std::uint64_t member_id = 0;
  std::int64_t revision = 0;  // the store revision when the request was applied
  std::uint64_t raft_term = 0;
  friend bool operator==(const ResponseHeader&, const ResponseHeader&) = default;
};

/// mvccpb.KeyValue.
struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;  // 0: not attached to a lease
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

/// etcdserverpb.RangeRequest: one key, or [key, range_end) when range_end is set.
struct RangeRequest {
  std::string key;
  std::string range_end;
  std::int64_t limit = 0;     // 0: no limit
  std::int64_t revision = 0;  // 0: the newest
  bool keys_only = false;
  bool count_only = false;
  bool descending = false;  // sort_order DESCEND on sort_target KEY: the last keys first
};

struct RangeResponse {
  ResponseHeader header;
  std::vector<KeyValue> kvs;
  bool more = false;
  std::int64_t count = 0;
};

/// etcdserverpb.PutRequest.
struct PutRequest {
  std::string key;
  std::string value;
  std::int64_t lease = 0;  // 0: the key outlives every lease
  bool prev_kv = false;
};

struct PutResponse {
  ResponseHeader header;
  std::optional<KeyValue> prev_kv;
};

/// etcdserverpb.DeleteRangeRequest.
struct DeleteRangeRequest {
  std::string key;
  std::string range_end;
  bool prev_kv = false;
};

struct DeleteRangeResponse {
  ResponseHeader header;
  std::int64_t deleted = 0;
  std::vector<KeyValue> prev_kvs;
};

enum class CompareTarget { kVersion, kCreateRevision, kModRevision, kValue, kLease };
enum class CompareResult { kEqual, kGreater, kLess, kNotEqual };

/// etcdserverpb.Compare: `target(key) result operand`. `number` is the operand of every target
/// but kValue, whose operand is `value`. A key that does not exist has version,
/// create_revision, mod_revision and lease 0, which is how "the key is absent" is written.
struct Compare {
  std::string key;
  CompareTarget target = CompareTarget::kVersion;
  CompareResult result = CompareResult::kEqual;
  std::int64_t number = 0;
  std::string value;
  std::string range_end;  // compare every key in [key, range_end)

  [[nodiscard]] static Compare create_revision(std::string key, CompareResult r, std::int64_t n);
  [[nodiscard]] static Compare mod_revision(std::string key, CompareResult r, std::int64_t n);
  [[nodiscard]] static Compare version(std::string key, CompareResult r, std::int64_t n);
  [[nodiscard]] static Compare lease(std::string key, CompareResult r, std::int64_t n);
  [[nodiscard]] static Compare value_is(std::string key, CompareResult r, std::string v);
  /// create_revision == 0.
  [[nodiscard]] static Compare absent(std::string key);
};

using RequestOp = std::variant<RangeRequest, PutRequest, DeleteRangeRequest>;
using ResponseOp = std::variant<RangeResponse, PutResponse, DeleteRangeResponse>;

/// etcdserverpb.TxnRequest: if every compare holds, `success` runs, else `failure`; atomically.
struct TxnRequest {
  std::vector<Compare> compare;
  std::vector<RequestOp> success;
  std::vector<RequestOp> failure;
};

/// `responses` has one entry per op of the branch that ran, in order and of the matching kind.
struct TxnResponse {
  ResponseHeader header;
  bool succeeded = false;
  std::vector<ResponseOp> responses;
};

struct LeaseGrantResponse {
  ResponseHeader header;
  std::int64_t id = 0;
  std::int64_t ttl_s = 0;
};

/// ttl_s is the lease's full TTL after the refresh; 0 means the lease no longer exists.
struct LeaseKeepAliveResponse {
  ResponseHeader header;
  std::int64_t id = 0;
  std::int64_t ttl_s = 0;
};

struct LeaseRevokeResponse {
  ResponseHeader header;
};

/// etcdserverpb.WatchCreateRequest (POST /v3/watch, sent as {"create_request": {...}}): events
/// on one key, or on [key, range_end), from start_revision (0: from the next change on).
struct WatchCreateRequest {
  std::string key;
  std::string range_end;
  std::int64_t start_revision = 0;
  bool prev_kv = false;
};

/// mvccpb.Event: PUT is the zero value, left out of the JSON.
struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;
  friend bool operator==(const WatchEvent&, const WatchEvent&) = default;
};

/// etcdserverpb.WatchResponse: one message of the watch stream, which the gateway wraps as
/// {"result": {...}} and separates by newlines. The first says `created`; a canceled one ends the
/// watch (compact_revision set when start_revision was compacted away).
struct WatchResponse {
  ResponseHeader header;
  std::int64_t watch_id = 0;
  bool created = false;
  bool canceled = false;
  std::int64_t compact_revision = 0;
  std::string cancel_reason;
  std::vector<WatchEvent> events;
};

/// etcdserverpb.AuthenticateResponse: the token to send as the Authorization header.
struct AuthenticateResponse {
  ResponseHeader header;
  std::string token;
};

/// A gateway error body: {"error": ..., "message": ..., "code": <gRPC status code>}.
struct GatewayError {
  int code = 0;
  std::string message;
};

/// RFC 4648 base64 with padding, as protobuf's JSON mapping writes bytes.
[[nodiscard]] std::string base64_encode(std::string_view bytes);
/// Accepts padded or unpadded standard base64 (and the URL-safe alphabet, which protobuf's
/// JSON parser also accepts); nullopt on any other character or a bad length.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

/// The range_end that makes [prefix, range_end) every key starting with `prefix`: the prefix
/// with its last byte below 0xff incremented and what follows dropped ("\0", every key, when
/// there is none).
[[nodiscard]] std::string prefix_end(std::string_view prefix);

// Request bodies (JSON text) for the gateway's POST endpoints.
[[nodiscard]] std::string encode(const RangeRequest& r);        // /v3/kv/range
[[nodiscard]] std::string encode(const PutRequest& r);          // /v3/kv/put
[[nodiscard]] std::string encode(const DeleteRangeRequest& r);  // /v3/kv/deleterange
[[nodiscard]] std::string encode(const TxnRequest& r);          // /v3/kv/txn
[[nodiscard]] std::string encode_lease_grant(std::int64_t ttl_s, std::int64_t id = 0);
[[nodiscard]] std::string encode_lease_id(std::int64_t id);     // keepalive and revoke
[[nodiscard]] std::string encode(const WatchCreateRequest& r);  // /v3/watch
/// /v3/auth/authenticate (the password is in the body only; never log it).
[[nodiscard]] std::string encode_authenticate(std::string_view name, std::string_view password);

// Response bodies. Errors: EtcdErrc::kBadResponse (not JSON, or a field of the wrong type).
[[nodiscard]] Result<RangeResponse> decode_range_response(std::string_view json);
[[nodiscard]] Result<PutResponse> decode_put_response(std::string_view json);
[[nodiscard]] Result<DeleteRangeResponse> decode_delete_range_response(std::string_view json);
[[nodiscard]] Result<TxnResponse> decode_txn_response(std::string_view json);
[[nodiscard]] Result<LeaseGrantResponse> decode_lease_grant_response(std::string_view json);
/// The keepalive endpoint streams: its one reply is wrapped as {"result": {...}}.
[[nodiscard]] Result<LeaseKeepAliveResponse> decode_lease_keepalive_response(std::string_view json);
[[nodiscard]] Result<LeaseRevokeResponse> decode_lease_revoke_response(std::string_view json);
/// One line of the watch stream. A line that is a gateway error ({"error": {...}}, for example an
/// auth token refused mid-stream) is kBadResponse too: decode_stream_error() reads it.
[[nodiscard]] Result<WatchResponse> decode_watch_response(std::string_view json);
[[nodiscard]] Result<AuthenticateResponse> decode_authenticate_response(std::string_view json);
/// The error of a stream message {"error": {"grpc_code": N, "message": ...}}; nullopt otherwise.
[[nodiscard]] std::optional<GatewayError> decode_stream_error(std::string_view json);
/// nullopt when the body is not a gateway error.
[[nodiscard]] std::optional<GatewayError> decode_gateway_error(std::string_view json);

}  // namespace ticketd::etcd
