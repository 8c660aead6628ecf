// A small synchronous etcd v3 client over the JSON gateway (HTTP/1.1, plain or TLS), with
// etcd auth tokens and streaming watches (EtcdWatch, implemented beside the client).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/result.h"
#include "server/net/http_connection.h"
#include "storage/etcd/etcd_codec.h"
#include "storage/etcd/etcd_errc.h"

namespace ticketd::etcd {

class EtcdWatch;

/// "http://HOST:PORT" or "https://HOST:PORT" ("http://[::1]:2379" for IPv6).
using Endpoint = net::HttpEndpoint;
[[nodiscard]] Result<Endpoint> parse_endpoint(std::string_view url);

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // tried in order, starting with the last one that worked
  /// Deadline of one call, fail-over included. A write that times out may or may not have been
  /// applied: callers that care read back (or make the write a compare-guarded txn).
  std::chrono::milliseconds timeout{1000};
  /// Connecting to one endpoint gives up after this (within the call's deadline), so a dead
  /// host does not use up the whole deadline before the next endpoint is tried.
  std::chrono::milliseconds connect_timeout{300};
  /// For https:// endpoints: the CAs etcd's certificate must chain to (PEM; empty: the system's),
  /// and our client certificate and key (PEM; both or neither) for etcd's --client-cert-auth.
  /// etcd's certificate must also name the endpoint's host (DNS name or IP address).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  /// etcd's auth (`etcdctl auth enable`): a token from /v3/auth/authenticate, sent in the
  /// Authorization header of every call; empty username: no auth. The password is never logged.
  std::string username;
  std::string password;
};

/// Speaks the etcd v3 gRPC gateway's JSON (https://etcd.io/docs/v3.4/dev-guide/api_grpc_gateway/)
/// with one kept-alive HTTP/1.1 connection on its own io_context. Every call blocks the calling
/// thread until the reply or the deadline: callers are background threads (lease keepers,
/// storage engines), never I/O threads.
///
/// Fail-over: when connecting to an endpoint fails, the next one is tried within the same call.
/// When a connection breaks after the request was sent, the call fails with kUnavailable (the
/// outcome is unknown, so the client does not resend on its own); the next call reconnects.
///
/// TLS: https:// endpoints verify etcd's certificate against ca_file and the host name; a
/// handshake that fails on every endpoint is kTls. Auth: the first call authenticates; when etcd
/// says the token is invalid or expired (simple tokens live --auth-token-ttl, 5 min by default)
/// the client authenticates again and resends the call once (etcd refused it, so nothing ran).
///
/// Errors (EtcdErrc): kUnavailable, kTimeout, kBadResponse, kLeaseNotFound, kRejected (etcd
/// refused: the message carries its text and gRPC code), kInvalidArgument, kTls, kAuth,
/// kPermissionDenied.
/// Thread safety: all members may be called concurrently; calls are serialized.
class EtcdClient {
 public:
  /// Parses the endpoints (kInvalidArgument naming the bad one); connects lazily.
  [[nodiscard]] static DetailedResult<std::unique_ptr<EtcdClient>> create(
      EtcdClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  /// A new lease of `ttl_s` seconds (etcd may grant a longer TTL, never a shorter one).
  [[nodiscard]] DetailedResult<LeaseGrantResponse> grant_lease(std::int64_t ttl_s);
  /// Refreshes the lease to its full TTL. kLeaseNotFound when it expired or was revoked.
  [[nodiscard]] DetailedResult<LeaseKeepAliveResponse> keepalive(std::int64_t lease_id);
  /// Revokes the lease and deletes every key attached to it. kLeaseNotFound if already gone.
  [[nodiscard]] DetailedResult<LeaseRevokeResponse> revoke(std::int64_t lease_id);

  [[nodiscard]] DetailedResult<RangeResponse> range(const RangeRequest& request);
  /// One key (kvs is empty when it does not exist).
  [[nodiscard]] DetailedResult<RangeResponse> get(std::string_view key);
  /// Every key starting with `prefix`, in key order.
  [[nodiscard]] DetailedResult<RangeResponse> get_prefix(std::string_view prefix);
  [[nodiscard]] DetailedResult<PutResponse> put(std::string_view key, std::string_view value,
                                                std::int64_t lease_id = 0);
  [[nodiscard]] DetailedResult<DeleteRangeResponse> delete_range(const DeleteRangeRequest& request);
  /// Atomically: if every compare holds, the success ops, else the failure ops.
  [[nodiscard]] DetailedResult<TxnResponse> txn(const TxnRequest& request);

  /// Opens a watch on its own connection (calls on this client go on meanwhile), to the
  /// endpoint calls use, failing over like a call, within the call timeout. The stream's first
  /// message says `created`. The client must outlive the watch.
  [[nodiscard]] DetailedResult<std::unique_ptr<EtcdWatch>> watch(const WatchCreateRequest& request);

  /// Proves at start-up that this client may work under `prefix`: a range of one key there
  /// (TLS, credentials, read permission) and a transaction whose compare never holds and whose
  /// only op is a put under the prefix (etcd checks write permission of every op of a txn
  /// before it evaluates the compare, so nothing is written). Errors are the calls' errors.
  [[nodiscard]] DetailedResult<void> check_access(std::string_view prefix);

  /// The endpoint the next call tries first.
  [[nodiscard]] std::string current_endpoint() const;

 private:
  struct Impl;
  explicit EtcdClient(std::unique_ptr<Impl> impl);
  /// POSTs `body` to `target`; the body of a 200 reply, or an error.
  [[nodiscard]] DetailedResult<std::string> call(std::string_view target, std::string body);

  std::unique_ptr<Impl> impl_;
};

}  // namespace ticketd::etcd
