#include "storage/etcd/etcd_client.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <mutex>
#include <optional>
#include <utility>

#include "server/base/parse_int.h"

namespace ticketd::etcd {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

namespace {

// gRPC status codes the gateway puts in error bodies.
constexpr int kGrpcDeadlineExceeded = 4;
constexpr int kGrpcNotFound = 5;
constexpr int kGrpcUnavailable = 14;

constexpr std::uint64_t kMaxResponseBytes = 64ull * 1024 * 1024;

Error error(EtcdErrc code, std::string message) {
  return Error{make_error_code(code), std::move(message)};
}

}  // namespace

std::string Endpoint::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> parse_endpoint(std::string_view url) {
  const ErrorCode bad = make_error_code(EtcdErrc::kInvalidArgument);
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return bad;
  url.remove_prefix(kScheme.size());
  if (!url.empty() && url.back() == '/') url.remove_suffix(1);
  Endpoint e;
  std::string_view port;
  if (url.starts_with('[')) {
    const auto close = url.find(']');
    if (close == std::string_view::npos || close + 1 >= url.size() || url[close + 1] != ':') {
      return bad;
    }
    e.host = std::string(url.substr(1, close - 1));
    port = url.substr(close + 2);
  } else {
    const auto colon = url.rfind(':');
    if (colon == std::string_view::npos) return bad;
    e.host = std::string(url.substr(0, colon));
    port = url.substr(colon + 1);
  }
  const auto value = parse_int<std::uint16_t>(port);
  if (e.host.empty() || e.host.find('/') != std::string::npos || !value || *value == 0) {
    return bad;
  }
  e.port = *value;
  return e;
}

struct EtcdClient::Impl {
  EtcdClientOptions options;
  std::vector<Endpoint> endpoints;
  std::mutex mutex;
  std::size_t current = 0;  // guarded by mutex (read without it only for current_endpoint())
  asio::io_context ioc{1};
  std::optional<beast::tcp_stream> stream;  // connected to endpoints[current] when set
  beast::flat_buffer buffer;

  // Runs the io_context until the operation started by `start` completes; the stream's expiry
  // bounds it.
  template <class Start>
  beast::error_code run(Start&& start) {
    beast::error_code result;
    bool done = false;
    start([&](beast::error_code ec, auto&&...) {
      result = ec;
      done = true;
    });
    ioc.restart();
    while (!done && ioc.run_one() != 0) {
    }
    return result;
  }

  void close() {
    if (stream) {
      beast::error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->close();
      stream.reset();
    }
    buffer.clear();
  }

  // Connects to endpoints[index] before min(deadline, now + connect_timeout).
  beast::error_code connect(std::size_t index, steady::time_point deadline) {
    close();
    const Endpoint& e = endpoints[index];
    tcp::resolver resolver(ioc);
    beast::error_code ec;
    // Synchronous: endpoints are IP literals or names the local resolver answers quickly.
    auto results = resolver.resolve(e.host, std::to_string(e.port), ec);
    if (ec) return ec;
    stream.emplace(ioc);
    stream->expires_at(std::min(deadline, steady::now() + options.connect_timeout));
    ec = run([&](auto handler) { stream->async_connect(results, std::move(handler)); });
    if (ec) {
      close();
      return ec;
    }
    stream->socket().set_option(tcp::no_delay(true), ec);
    return {};
  }
};

EtcdClient::EtcdClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EtcdClient::~EtcdClient() {
  if (impl_) impl_->close();
}

DetailedResult<std::unique_ptr<EtcdClient>> EtcdClient::create(EtcdClientOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.endpoints.empty()) {
    return error(EtcdErrc::kInvalidArgument, "etcd: no endpoints");
  }
  for (const auto& text : options.endpoints) {
    auto e = parse_endpoint(text);
    if (!e) {
      return error(EtcdErrc::kInvalidArgument,
                   "etcd: endpoint '" + text + "' is not http://HOST:PORT");
    }
    impl->endpoints.push_back(std::move(*e));
  }
  if (options.timeout.count() <= 0 || options.connect_timeout.count() <= 0) {
    return error(EtcdErrc::kInvalidArgument, "etcd: timeouts must be positive");
  }
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
  std::string failures;
  const std::size_t n = s.endpoints.size();
  for (std::size_t attempt = 0; attempt < n; ++attempt) {
    const std::size_t index = (s.current + attempt) % n;
    const Endpoint& e = s.endpoints[index];
    if (steady::now() >= deadline) break;
    if (!s.stream || attempt > 0) {
      if (auto ec = s.connect(index, deadline)) {
        failures += (failures.empty() ? "" : "; ") + e.to_string() + ": " + ec.message();
        continue;  // nothing was sent: the next endpoint may take it
      }
    }
    s.current = index;

    http::request<http::string_body> req{http::verb::post, std::string(target), 11};
    req.set(http::field::host, e.host + ":" + std::to_string(e.port));
    req.set(http::field::content_type, "application/json");
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);

    s.stream->expires_at(deadline);
    auto ec = s.run([&](auto handler) { http::async_write(*s.stream, req, std::move(handler)); });
    if (!ec) {
      ec = s.run(
          [&](auto handler) { http::async_read(*s.stream, s.buffer, parser, std::move(handler)); });
    }
    if (ec) {
      s.close();
      const std::string what = "etcd " + e.to_string() + std::string(target) + ": ";
      if (ec == beast::error::timeout) {
        return error(EtcdErrc::kTimeout,
                     what + "no reply within " + std::to_string(s.options.timeout.count()) + " ms");
      }
      return error(EtcdErrc::kUnavailable, what + ec.message());
    }
    auto& res = parser.get();
    if (!res.keep_alive()) s.close();
    if (res.result() == http::status::ok) return std::move(res.body());

    const std::string what = "etcd " + e.to_string() + std::string(target) + ": HTTP " +
                             std::to_string(res.result_int());
    auto gateway = decode_gateway_error(res.body());
    if (!gateway) return error(EtcdErrc::kBadResponse, what);
    const std::string detail = what + ": " + gateway->message;
    switch (gateway->code) {
      case kGrpcNotFound:
        if (gateway->message.find("lease not found") != std::string::npos) {
          return error(EtcdErrc::kLeaseNotFound, detail);
        }
        return error(EtcdErrc::kRejected, detail);
      case kGrpcDeadlineExceeded:
        return error(EtcdErrc::kTimeout, detail);
      case kGrpcUnavailable:
        return error(EtcdErrc::kUnavailable, detail);
      default:
        return error(EtcdErrc::kRejected,
                     detail + " (gRPC code " + std::to_string(gateway->code) + ")");
    }
  }
  if (steady::now() >= deadline) {
    return error(EtcdErrc::kTimeout, "etcd: no endpoint answered within " +
                                         std::to_string(s.options.timeout.count()) + " ms (" +
                                         failures + ")");
  }
  return error(EtcdErrc::kUnavailable, "etcd: no endpoint reachable (" + failures + ")");
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
