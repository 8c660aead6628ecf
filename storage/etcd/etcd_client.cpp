#include "storage/etcd/etcd_client.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/optional/optional.hpp>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>

#include "server/base/parse_int.h"
#include "server/net/http_connection.h"
#include "storage/etcd/etcd_watch.h"

namespace ticketd::etcd {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using steady = std::chrono::steady_clock;

namespace {

// gRPC status codes the gateway puts in error bodies.
constexpr int kGrpcInvalidArgument = 3;
constexpr int kGrpcDeadlineExceeded = 4;
constexpr int kGrpcNotFound = 5;
constexpr int kGrpcPermissionDenied = 7;
constexpr int kGrpcFailedPrecondition = 9;
constexpr int kGrpcUnavailable = 14;
constexpr int kGrpcUnauthenticated = 16;

constexpr std::uint64_t kMaxResponseBytes = 64ull * 1024 * 1024;

Error error(EtcdErrc code, std::string message) {
  return Error{make_error_code(code), std::move(message)};
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// What went wrong in TLS, and what to check: OpenSSL's words alone rarely say whose side it is.
std::string tls_problem(const beast::error_code& ec, const std::string& detail) {
  std::string m = "TLS: " + ec.message();
  if (!detail.empty()) m += " (" + detail + ")";
  if (contains(m, "mismatch")) {
    m += ": etcd's certificate does not name the endpoint's host (use a name or IP address its "
         "subjectAltName lists)";
  } else if (contains(m, "verify failed")) {
    m += ": etcd's certificate is not signed by a CA in ca_file";
  } else if (contains(m, "certificate required") || contains(m, "bad certificate") ||
             contains(m, "unknown ca") || contains(m, "handshake failure")) {
    m += ": etcd refused our client certificate (set cert_file and key_file to a certificate "
         "signed by a CA in etcd's --trusted-ca-file)";
  }
  return m;
}

// A failed read or write once the request may have been sent.
Error io_error(const std::string& what, const beast::error_code& ec,
               std::chrono::milliseconds timeout) {
  if (ec == beast::error::timeout) {
    return error(EtcdErrc::kOutcomeUnknown,
                 what + "no reply within " + std::to_string(timeout.count()) + " ms");
  }
  if (net::is_tls_error(ec)) return error(EtcdErrc::kTls, what + tls_problem(ec, ""));
  return error(EtcdErrc::kOutcomeUnknown, what + ec.message());
}

// An error reply of the gateway (an HTTP error status, or an error line of a stream).
Error gateway_error(const std::string& what, const GatewayError& g) {
  const std::string detail = what + ": " + g.message;
  switch (g.code) {
    case kGrpcNotFound:
      if (contains(g.message, "lease not found")) return error(EtcdErrc::kLeaseNotFound, detail);
      return error(EtcdErrc::kRejected, detail);
    case kGrpcDeadlineExceeded:
    case kGrpcUnavailable:
      // "request timed out", "leader changed": the proposal may still commit.
      return error(EtcdErrc::kOutcomeUnknown, detail);
    case kGrpcUnauthenticated:
      return error(EtcdErrc::kAuth, detail);
    case kGrpcPermissionDenied:
      return error(EtcdErrc::kPermissionDenied,
                   detail +
                       " (the etcd user, `username` or else the client certificate's "
                       "CommonName, needs a role with readwrite on the prefix)");
    case kGrpcInvalidArgument:
      if (contains(g.message, "user name is empty")) {
        return error(EtcdErrc::kAuth,
                     detail + " (etcd has auth enabled: set username and password)");
      }
      if (contains(g.message, "authentication failed") ||
          contains(g.message, "auth store is old")) {
        return error(EtcdErrc::kAuth, detail);
      }
      break;
    case kGrpcFailedPrecondition:
      if (contains(g.message, "authentication is not enabled")) {
        return error(EtcdErrc::kAuth, detail + " (remove username and password, or enable auth)");
      }
      break;
    default:
      break;
  }
  return error(EtcdErrc::kRejected, detail + " (gRPC code " + std::to_string(g.code) + ")");
}

Error http_error(const std::string& what, unsigned status, std::string_view body) {
  const std::string w = what + "HTTP " + std::to_string(status);
  auto gateway = decode_gateway_error(body);
  if (!gateway) return error(EtcdErrc::kBadResponse, w);
  return gateway_error(w, *gateway);
}

http::request<http::string_body> make_request(const Endpoint& e, std::string_view target,
                                              std::string body, const std::string& token) {
  http::request<http::string_body> req{http::verb::post, std::string(target), 11};
  req.set(http::field::host, e.host + ":" + std::to_string(e.port));
  req.set(http::field::content_type, "application/json");
  if (!token.empty()) req.set(http::field::authorization, token);
  req.keep_alive(true);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

std::string join_failure(const std::string& failures, const Endpoint& e, const std::string& why) {
  return failures + (failures.empty() ? "" : "; ") + e.to_string() + ": " + why;
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view url) {
  auto e = net::parse_http_endpoint(std::string(url));
  if (!e) return make_error_code(EtcdErrc::kInvalidArgument);
  return *e;
}

struct EtcdClient::Impl {
  EtcdClientOptions options;
  std::vector<Endpoint> endpoints;
  std::unique_ptr<asio::ssl::context> tls;  // set when an endpoint is https://
  mutable std::mutex mutex;
  std::size_t current = 0;  // guarded by mutex
  std::string token;        // guarded by mutex; empty: not authenticated (yet)
  asio::io_context ioc{1};
  std::optional<net::HttpConnection> conn;  // connected to endpoints[current] when open
  beast::flat_buffer buffer;

  // One request on the kept-alive connection, failing over to the next endpoint while nothing
  // was sent; the body of a 200 reply, or an error.
  DetailedResult<std::string> exchange_locked(std::string_view target, const std::string& body,
                                              steady::time_point deadline,
                                              const std::string& auth_token) {
    std::string failures;
    std::size_t tls_failures = 0;
    const std::size_t n = endpoints.size();
    for (std::size_t attempt = 0; attempt < n; ++attempt) {
      const std::size_t index = (current + attempt) % n;
      const Endpoint& e = endpoints[index];
      if (steady::now() >= deadline) break;
      // A kept-alive connection the member closed (it died or restarted) is replaced before
      // anything is sent on it, so the request may still fail over.
      if (!conn->is_open() || attempt > 0 || conn->peer_closed()) {
        buffer.clear();
        std::string detail;
        if (auto ec = conn->connect(e, steady::now() + options.connect_timeout, deadline, detail)) {
          const bool tls_failed = net::is_tls_error(ec);
          tls_failures += tls_failed ? 1 : 0;
          failures = join_failure(failures, e, tls_failed ? tls_problem(ec, detail) : ec.message());
          continue;  // nothing was sent: the next endpoint may take it
        }
      }
      current = index;
      auto req = make_request(e, target, body, auth_token);
      http::response_parser<http::string_body> parser;
      parser.body_limit(kMaxResponseBytes);
      conn->expires_at(deadline);
      auto ec = conn->run([&](auto handler) {
        conn->visit([&](auto& stream) { http::async_write(stream, req, std::move(handler)); });
      });
      if (!ec) {
        ec = conn->run([&](auto handler) {
          conn->visit(
              [&](auto& stream) { http::async_read(stream, buffer, parser, std::move(handler)); });
        });
      }
      const std::string what = "etcd " + e.to_string() + std::string(target) + ": ";
      if (ec) {
        close();
        return io_error(what, ec, options.timeout);
      }
      auto& res = parser.get();
      if (!res.keep_alive()) close();
      if (res.result() == http::status::ok) return std::move(res.body());
      return http_error(what, res.result_int(), res.body());
    }
    if (tls_failures == n)
      return error(EtcdErrc::kTls, "etcd: no TLS connection (" + failures + ")");
    if (steady::now() >= deadline) {
      return error(EtcdErrc::kTimeout, "etcd: no endpoint answered within " +
                                           std::to_string(options.timeout.count()) + " ms (" +
                                           failures + ")");
    }
    return error(EtcdErrc::kUnavailable, "etcd: no endpoint reachable (" + failures + ")");
  }

  DetailedResult<void> authenticate_locked(steady::time_point deadline) {
    token.clear();
    auto body =
        exchange_locked("/v3/auth/authenticate",
                        encode_authenticate(options.username, options.password), deadline, "");
    if (!body) {
      if (body.error().code != EtcdErrc::kAuth) return body.error();
      return Error{body.error().code,
                   body.error().message + " (as etcd user '" + options.username + "')"};
    }
    auto r = decode_authenticate_response(*body);
    if (!r) return error(EtcdErrc::kBadResponse, "etcd /v3/auth/authenticate: no token in reply");
    token = std::move(r->token);
    return {};
  }

  // Forgets `refused` if it is still the current token (a watch saw etcd refuse it).
  void forget_token(const std::string& refused) {
    std::lock_guard lock(mutex);
    if (token == refused) token.clear();
  }

  void close() {
    if (conn) conn->reset();
    buffer.clear();
  }
};

struct EtcdWatch::State {
  explicit State(asio::ssl::context* tls) : conn(*ioc, tls) {}
  std::unique_ptr<asio::io_context> ioc = std::make_unique<asio::io_context>(1);
  net::HttpConnection conn;
  beast::flat_buffer buffer;
  // The parser keeps a reference to its chunk callback: declared first, destroyed last.
  std::function<std::size_t(std::uint64_t, beast::string_view, beast::error_code&)> on_chunk;
  std::optional<http::response_parser<http::string_body>> parser;
  std::string pending;  // body bytes not yet split into lines
  std::atomic<bool> cancelled{false};
  std::string endpoint;
  std::function<void()> on_auth_error;
};

EtcdWatch::EtcdWatch(std::unique_ptr<State> state) : s_(std::move(state)) {}

EtcdWatch::~EtcdWatch() = default;

const std::string& EtcdWatch::endpoint() const { return s_->endpoint; }

void EtcdWatch::cancel() {
  s_->cancelled.store(true);
  // Runs on the thread inside next(), if any, and aborts its read; else at the next run.
  asio::post(*s_->ioc, [s = s_.get()] { s->conn.close(); });
}

DetailedResult<WatchResponse> EtcdWatch::next(std::chrono::milliseconds wait) {
  State& s = *s_;
  const std::string what = "etcd watch " + s.endpoint + ": ";
  const auto deadline = steady::now() + wait;
  for (;;) {
    if (s.cancelled.load()) return error(EtcdErrc::kCancelled, what + "cancelled");
    if (const auto nl = s.pending.find('\n'); nl != std::string::npos) {
      const std::string line = s.pending.substr(0, nl);
      s.pending.erase(0, nl + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      if (auto e = decode_stream_error(line)) {
        s.conn.close();
        if (e->code == kGrpcUnauthenticated && s.on_auth_error) s.on_auth_error();
        return gateway_error(what + "stream error", *e);
      }
      auto r = decode_watch_response(line);
      if (!r)
        return error(EtcdErrc::kBadResponse,
                     what + "undecodable line '" + line.substr(0, 200) + "'");
      return std::move(*r);
    }
    if (s.pending.size() > kMaxResponseBytes) {
      s.conn.close();
      return error(EtcdErrc::kBadResponse, what + "a message longer than 64 MiB");
    }
    if (!s.conn.is_open() || s.parser->is_done()) {
      return error(EtcdErrc::kUnavailable, what + "the stream ended");
    }
    s.conn.expires_at(deadline);
    auto ec = s.conn.run([&](auto handler) {
      s.conn.visit(
          [&](auto& stream) { http::async_read(stream, s.buffer, *s.parser, std::move(handler)); });
    });
    if (ec == http::error::end_of_chunk) continue;  // a chunk arrived: look for lines
    if (s.cancelled.load()) return error(EtcdErrc::kCancelled, what + "cancelled");
    if (ec) {
      s.conn.close();
      if (ec == beast::error::timeout) {
        return error(EtcdErrc::kTimeout,
                     what + "nothing within " + std::to_string(wait.count()) + " ms");
      }
      return io_error(what, ec, wait);
    }
  }
}

EtcdClient::EtcdClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EtcdClient::~EtcdClient() {
  if (impl_) impl_->close();
}

DetailedResult<std::unique_ptr<EtcdClient>> EtcdClient::create(EtcdClientOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.endpoints.empty()) {
    return error(EtcdErrc::kInvalidArgument, "etcd: no endpoints");
  }
  bool any_tls = false;
  for (const auto& text : options.endpoints) {
    auto e = parse_endpoint(text);
    if (!e) {
      return error(EtcdErrc::kInvalidArgument,
                   "etcd: endpoint '" + text + "' is not http://HOST:PORT or https://HOST:PORT");
    }
    any_tls = any_tls || e->tls;
    impl->endpoints.push_back(std::move(*e));
  }
  if (options.timeout.count() <= 0 || options.connect_timeout.count() <= 0) {
    return error(EtcdErrc::kInvalidArgument, "etcd: timeouts must be positive");
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return error(EtcdErrc::kInvalidArgument, "etcd: cert_file and key_file go together");
  }
  if (!any_tls && !(options.ca_file.empty() && options.cert_file.empty())) {
    return error(EtcdErrc::kInvalidArgument,
                 "etcd: ca_file, cert_file and key_file need https:// endpoints");
  }
  if (any_tls) {
    std::string problem;
    impl->tls = net::make_tls_client_context({options.ca_file, options.cert_file, options.key_file},
                                             problem);
    if (!impl->tls) return error(EtcdErrc::kInvalidArgument, "etcd: " + problem);
  }
  impl->conn.emplace(impl->ioc, impl->tls.get());
  impl->options = std::move(options);
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(impl)));
}

std::string EtcdClient::current_endpoint() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->endpoints[impl_->current].to_string();
}

DetailedResult<std::string> EtcdClient::call(std::string_view target, std::string body) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mutex);
  const auto deadline = steady::now() + s.options.timeout;
  const bool auth = !s.options.username.empty();
  if (auth && s.token.empty()) {
    if (auto a = s.authenticate_locked(deadline); !a) return a.error();
  }
  auto r = s.exchange_locked(target, body, deadline, s.token);
  if (auth && !r && r.error().code == EtcdErrc::kAuth) {
    // The token expired (or etcd restarted and forgot it): etcd refused the call, so it did not
    // run and sending it again is safe.
    if (auto a = s.authenticate_locked(deadline); !a) return a.error();
    r = s.exchange_locked(target, body, deadline, s.token);
  }
  if (auth && !r && r.error().code == EtcdErrc::kPermissionDenied) {
    return Error{r.error().code,
                 r.error().message + " (as etcd user '" + s.options.username + "')"};
  }
  return r;
}

DetailedResult<std::unique_ptr<EtcdWatch>> EtcdClient::watch(const WatchCreateRequest& request) {
  Impl& s = *impl_;
  const auto deadline = steady::now() + s.options.timeout;
  std::string token;
  std::size_t first = 0;
  {
    std::lock_guard lock(s.mutex);
    if (!s.options.username.empty() && s.token.empty()) {
      if (auto a = s.authenticate_locked(deadline); !a) return a.error();
    }
    token = s.token;
    first = s.current;
  }
  auto state = std::make_unique<EtcdWatch::State>(s.tls.get());
  const std::string body = encode(request);
  std::string failures;
  std::size_t tls_failures = 0;
  const std::size_t n = s.endpoints.size();
  for (std::size_t attempt = 0; attempt < n; ++attempt) {
    const Endpoint& e = s.endpoints[(first + attempt) % n];
    if (steady::now() >= deadline) break;
    std::string detail;
    auto& conn = state->conn;
    if (auto ec = conn.connect(e, steady::now() + s.options.connect_timeout, deadline, detail)) {
      const bool tls_failed = net::is_tls_error(ec);
      tls_failures += tls_failed ? 1 : 0;
      failures = join_failure(failures, e, tls_failed ? tls_problem(ec, detail) : ec.message());
      continue;
    }
    // A watch only reads: trying the next member after a broken exchange is harmless.
    auto req = make_request(e, "/v3/watch", body, token);
    state->buffer.clear();
    auto& parser = state->parser.emplace();
    parser.body_limit(boost::none);  // the stream is as long as the watch lives
    conn.expires_at(deadline);
    auto ec = conn.run([&](auto handler) {
      conn.visit([&](auto& stream) { http::async_write(stream, req, std::move(handler)); });
    });
    if (!ec) {
      ec = conn.run([&](auto handler) {
        conn.visit([&](auto& stream) {
          http::async_read_header(stream, state->buffer, parser, std::move(handler));
        });
      });
    }
    const std::string what = "etcd " + e.to_string() + "/v3/watch: ";
    if (ec) {
      conn.reset();
      failures = join_failure(failures, e, io_error("", ec, s.options.timeout).message);
      continue;
    }
    if (parser.get().result() != http::status::ok) {
      const unsigned status = parser.get().result_int();
      ec = conn.run([&](auto handler) {
        conn.visit([&](auto& stream) {
          http::async_read(stream, state->buffer, parser, std::move(handler));
        });
      });
      auto err = http_error(what, status, ec ? std::string_view{} : parser.get().body());
      if (err.code == EtcdErrc::kAuth) s.forget_token(token);
      return err;
    }
    EtcdWatch::State* raw = state.get();
    state->on_chunk = [raw](std::uint64_t remain, beast::string_view data,
                            beast::error_code& chunk_ec) {
      raw->pending.append(data.data(), data.size());
      // Return to next() at the end of every chunk, so a message is seen as soon as it came.
      if (remain == data.size()) chunk_ec = http::error::end_of_chunk;
      return data.size();
    };
    parser.on_chunk_body(state->on_chunk);
    state->endpoint = e.to_string();
    state->on_auth_error = [impl = &s, token] { impl->forget_token(token); };
    return std::unique_ptr<EtcdWatch>(new EtcdWatch(std::move(state)));
  }
  if (tls_failures == n) return error(EtcdErrc::kTls, "etcd: no TLS connection (" + failures + ")");
  return error(steady::now() >= deadline ? EtcdErrc::kTimeout : EtcdErrc::kUnavailable,
               "etcd: no endpoint took the watch (" + failures + ")");
}

DetailedResult<void> EtcdClient::check_access(std::string_view prefix) {
  const std::string p(prefix);
  auto read =
      range(RangeRequest{.key = p, .range_end = prefix_end(p), .limit = 1, .keys_only = true});
  if (!read) return read.error();
  TxnRequest t;
  const std::string probe = p + "access-probe";
  t.compare.push_back(Compare::version(probe, CompareResult::kLess, 0));  // never holds
  t.success.emplace_back(PutRequest{.key = probe, .value = ""});
  auto write = txn(t);
  if (!write) return write.error();
  return {};
}

namespace {

template <class T>
DetailedResult<T> decoded(DetailedResult<std::string> body, Result<T> (*decode)(std::string_view),
                          std::string_view what) {
  if (!body) return body.error();
  auto r = decode(*body);
  if (!r) {
    std::string excerpt = body->substr(0, 200);
    return Error{r.error(), "etcd " + std::string(what) + ": undecodable reply '" + excerpt + "'"};
  }
  return std::move(*r);
}

}  // namespace

DetailedResult<LeaseGrantResponse> EtcdClient::grant_lease(std::int64_t ttl_s) {
  if (ttl_s <= 0) return error(EtcdErrc::kInvalidArgument, "etcd: lease TTL must be positive");
  return decoded(call("/v3/lease/grant", encode_lease_grant(ttl_s)), &decode_lease_grant_response,
                 "lease grant");
}

DetailedResult<LeaseKeepAliveResponse> EtcdClient::keepalive(std::int64_t lease_id) {
  auto r = decoded(call("/v3/lease/keepalive", encode_lease_id(lease_id)),
                   &decode_lease_keepalive_response, "lease keepalive");
  // An expired lease is not an HTTP error here: the stream answers with TTL 0 (left out).
  if (r && r->ttl_s <= 0) {
    return error(EtcdErrc::kLeaseNotFound,
                 "etcd: lease " + std::to_string(lease_id) + " expired or was revoked");
  }
  return r;
}

DetailedResult<LeaseRevokeResponse> EtcdClient::revoke(std::int64_t lease_id) {
  return decoded(call("/v3/lease/revoke", encode_lease_id(lease_id)), &decode_lease_revoke_response,
                 "lease revoke");
}

DetailedResult<RangeResponse> EtcdClient::range(const RangeRequest& request) {
  return decoded(call("/v3/kv/range", encode(request)), &decode_range_response, "range");
}

DetailedResult<RangeResponse> EtcdClient::get(std::string_view key) {
  return range(RangeRequest{.key = std::string(key)});
}

DetailedResult<RangeResponse> EtcdClient::get_prefix(std::string_view prefix) {
  return range(RangeRequest{.key = std::string(prefix), .range_end = prefix_end(prefix)});
}

DetailedResult<PutResponse> EtcdClient::put(std::string_view key, std::string_view value,
                                            std::int64_t lease_id) {
  return decoded(call("/v3/kv/put", encode(PutRequest{.key = std::string(key),
                                                      .value = std::string(value),
                                                      .lease = lease_id})),
                 &decode_put_response, "put");
}

DetailedResult<DeleteRangeResponse> EtcdClient::delete_range(const DeleteRangeRequest& request) {
  return decoded(call("/v3/kv/deleterange", encode(request)), &decode_delete_range_response,
                 "delete range");
}

DetailedResult<TxnResponse> EtcdClient::txn(const TxnRequest& request) {
  return decoded(call("/v3/kv/txn", encode(request)), &decode_txn_response, "txn");
}

}  // namespace ticketd::etcd
