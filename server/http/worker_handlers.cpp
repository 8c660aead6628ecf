#include "server/http/worker_handlers.h"

#include <optional>
#include <string>
#include <utility>

#include "server/core/worker_errc.h"
#include "server/http/handler_support.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {
namespace {

using beast::http::status;

Error unknown_pool(std::string_view pool) {
  return Error{WorkerErrc::kUnknownPool, "worker pool '" + std::string(pool) + "' does not exist"};
}

// The optional {"high_water_ms": n} body of keepalive and release.
DetailedResult<std::optional<std::int64_t>> read_high_water(const Request& req) {
  auto body = body_object(req, {"high_water_ms"});
  if (!body) return body.error();
  auto hwm = read_integer(*body, "high_water_ms", 0, kMaxJsonSafeInteger);
  if (!hwm) return hwm.error();
  if (!*hwm) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{static_cast<std::int64_t>(**hwm)};
}

}  // namespace

void get_worker_pools(const Reply& reply, const RouteRequest&) {
  boost::json::array pools;
  if (auto* workers = reply.deps().workers; workers != nullptr) {
    for (const auto& name : workers->pool_names()) {
      // A pool is never removed, so each listed name has a status.
      if (auto status = workers->status(name)) pools.push_back(worker_pool_json(*status));
    }
  }
  reply.json(status::ok, boost::json::object{{"pools", std::move(pools)}});
}

void get_worker_pool(const Reply& reply, const RouteRequest& in) {
  const std::string& pool = in.path.get("pool");
  auto* workers = reply.deps().workers;
  auto status = workers != nullptr ? workers->status(pool) : std::nullopt;
  if (!status) return reply.fail(unknown_pool(pool));
  reply.json(status::ok, worker_pool_json(*status));
}

void post_worker_lease(const Reply& reply, const RouteRequest& in) {
  const std::string& pool = in.path.get("pool");
  auto* workers = reply.deps().workers;
  auto spec = workers != nullptr ? workers->spec(pool) : std::nullopt;
  if (!spec) return reply.fail(unknown_pool(pool));
  auto body = body_object(in.http, {"holder", "ttl_s"});
  if (!body) return reply.fail(body.error());
  auto holder = read_string(*body, "holder");
  if (!holder) return reply.fail(holder.error());
  if (!*holder || (*holder)->empty()) {
    return reply.fail(HttpErrc::kInvalidField, "field 'holder' is required (who takes the lease)");
  }
  if (auto ok = check_holder(**holder); !ok) return reply.fail(ok.error());
  auto ttl_s = read_integer(*body, "ttl_s", static_cast<std::uint64_t>(spec->min_ttl_ms / 1000),
                            static_cast<std::uint64_t>(spec->max_ttl_ms / 1000));
  if (!ttl_s) return reply.fail(ttl_s.error());
  std::optional<std::int64_t> ttl_ms;
  if (*ttl_s) ttl_ms = static_cast<std::int64_t>(**ttl_s) * 1000;
  workers->acquire(
      pool, std::move(**holder), ttl_ms,
      reply.resume<DetailedResult<PoolLease>>([reply](DetailedResult<PoolLease> lease) {
        if (!lease) return reply.fail(lease.error());
        reply.json(status::created, worker_lease_json(*lease));
      }));
}

void post_worker_keepalive(const Reply& reply, const RouteRequest& in) {
  const std::string& pool = in.path.get("pool");
  auto* workers = reply.deps().workers;
  if (workers == nullptr) return reply.fail(unknown_pool(pool));
  auto hwm = read_high_water(in.http);
  if (!hwm) return reply.fail(hwm.error());
  workers->keepalive(
      pool, in.path.get("id"), *hwm,
      reply.resume<DetailedResult<PoolLease>>([reply](DetailedResult<PoolLease> lease) {
        if (!lease) return reply.fail(lease.error());
        reply.json(status::ok, worker_lease_json(*lease));
      }));
}

void delete_worker_lease(const Reply& reply, const RouteRequest& in) {
  const std::string& pool = in.path.get("pool");
  auto* workers = reply.deps().workers;
  if (workers == nullptr) return reply.fail(unknown_pool(pool));
  auto hwm = read_high_water(in.http);
  if (!hwm) return reply.fail(hwm.error());
  workers->release(
      pool, in.path.get("id"), *hwm,
      reply.resume<DetailedResult<PoolLease>>([reply](DetailedResult<PoolLease> lease) {
        if (!lease) return reply.fail(lease.error());
        reply.no_content();
      }));
}

}  // namespace ticketd::http
