// The HTTP/JSON API as a pure function from request to response (no sockets).
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/backup/backup_taker.h"
#include "server/base/live.h"
#include "server/core/auth_outcomes.h"
#include "server/core/clock.h"
#include "server/core/lease_log.h"
#include "server/core/serving_gate.h"
#include "server/core/ticket_service.h"
#include "server/core/worker_pool_service.h"
#include "server/http/auth.h"
#include "server/http/fields_allocator.h"
#include "server/http/response.h"
#include "server/metrics/metrics.h"
#include "server/net/completion.h"
#include "server/net/session_registry.h"

namespace boost::asio::ssl {
class context;
}

namespace ticketd::http {

namespace beast = boost::beast;

/// A request's header fields, whose memory comes from the session's pool (FieldsAllocator).
using Fields = beast::http::basic_fields<FieldsAllocator<char>>;
using Request = beast::http::request<beast::http::string_body, Fields>;

/// Settings of the HTTP front end (from the `http:` section of the config).
struct HttpOptions {
  std::vector<TokenVerifier> tokens;  // empty: no auth
  std::uint64_t max_block_size = 100000;
  bool metrics_public = false;  // /metrics without a token
  std::size_t header_limit = 16 * 1024;
  std::size_t body_limit = 1024 * 1024;
  std::chrono::milliseconds read_timeout{30000};  // to read one request once it started
  std::chrono::milliseconds idle_timeout{15000};  // between requests on a kept-alive connection
  /// From accept until the first request's header is complete, and from the first byte of any
  /// later request until its header is complete: an idle or trickling unauthenticated socket
  /// holds a file descriptor only this long.
  std::chrono::milliseconds header_timeout{5000};
  /// Open HTTP connections above this are answered 503 and closed at once (the file
  /// descriptors are shared with the MySQL front end).
  std::size_t max_connections = 1000;
  /// `ha.follower_http: redirect`: a follower answers the leader's token routes with 307 to
  /// the leader (probes keep 503: a load balancer must see a standby as down).
  bool follower_redirect = false;
};

/// What the front end works with. Owned by the daemon; every member outlives all sessions.
/// `storage_ready` answers /readyz (storage open and writable); it runs on an I/O thread and
/// must not block.
struct HttpDeps {
  TicketService& tickets;
  LeaseLog& leases;
  metrics::Metrics& metrics;
  const Clock& clock;
  net::SessionRegistry& sessions;
  std::function<bool()> storage_ready;
  HttpOptions options;
  /// The bearer tokens in force: options.tokens at start, replaced by a reload.
  Live<std::vector<TokenVerifier>> tokens{options.tokens};
  WorkerPoolService* workers = nullptr;  // null: no worker pools (every pool is unknown)
  /// With an election (storage.engine etcd): sequence routes answer 503 not_leader and
  /// /readyz 503 unless this instance serves. Null: always serving.
  const ServingGate* gate = nullptr;
  /// What a refused bearer token does (the auth throttle, shared with MySQL: requests from an
  /// address with repeated failures wait before they are answered, and failures are logged;
  /// the audit trail: request and peer, never the token). Null: neither.
  const AuthOutcomes* auth = nullptr;
  /// POST /v1/admin/backup: null when online backups are off (no backup.dir, or the etcd engine).
  backup::BackupTaker* backups = nullptr;
  /// POST /v1/admin/reload: re-reads the config file (as SIGHUP does); `done` gets what changed,
  /// or why nothing did. Null: not available (tests).
  std::function<void(std::function<void(DetailedResult<std::vector<std::string>>)> done)> reload;
  /// http.tls: every connection is HTTPS when set (the session runs the TLS handshake).
  std::shared_ptr<boost::asio::ssl::context> tls;
};

inline constexpr std::size_t kDefaultLeaseListLimit = 20;
inline constexpr std::size_t kMaxLeaseListLimit = 1000;
inline constexpr std::size_t kMaxHolderLength = 128;

/// Where a follower sends a request for `target` (origin form): the same target on the
/// leader's HTTP address ("HOST:PORT", "[v6]:PORT"), with the scheme of this front end.
/// Nullopt when the leader is not known or listens on an address no client can reach
/// (0.0.0.0, [::]): then the follower refuses with 503 as without redirects.
[[nodiscard]] std::optional<std::string> leader_location(std::string_view leader_http, bool tls,
                                                         std::string_view target);

/// Answers one request. `done` is called exactly once, inline or later. The handler's engine
/// calls resume through `completion` (one per session), so building the response and recording
/// its metrics run on the session's strand, never on the engine's committer thread; without
/// one (tests) a late answer is built where it arrives. Records request latency, errors and
/// issued IDs in `deps.metrics`. `body_buffer` (with a completion): the session's buffer the hot
/// answers write their body into (Reply::json_into); the session takes it back from the
/// Response once written. Thread safety: may be called concurrently.
void handle_request(const HttpDeps& deps, Request req, std::function<void(Response)> done,
                    std::shared_ptr<net::Completion> completion = nullptr,
                    std::string* body_buffer = nullptr);

}  // namespace ticketd::http
