#include "server/http/route_table.h"

#include <algorithm>

#include "server/http/admin_handlers.h"
#include "server/http/gapless_handlers.h"
#include "server/http/sequence_handlers.h"
#include "server/http/snowflake_handlers.h"
#include "server/http/ticket_handlers.h"
#include "server/http/ui_handlers.h"
#include "server/http/worker_handlers.h"

namespace ticketd::http {
namespace {

using beast::http::verb;
constexpr verb kGet = verb::get;
constexpr verb kPost = verb::post;
constexpr verb kPut = verb::put;
constexpr verb kPatch = verb::patch;
constexpr verb kDelete = verb::delete_;

constexpr std::string_view kLimitParam[] = {"limit"};

// /readyz needs the leader by definition: load balancers send traffic to the serving leader
// alone. POST …/blocks has never checked its query; it keeps accepting one.
// {methods, pattern, metric label, needs_leader, handler[, access[, query]]}
constexpr Route kRoutes[] = {
    {{kGet}, "/healthz", "healthz", false, get_healthz, Access::kPublic, kAnyQuery},
    {{kGet}, "/readyz", "readyz", true, get_readyz, Access::kPublic, kAnyQuery},
    {{kGet}, "/metrics", "metrics", false, get_metrics, Access::kMetrics, kAnyQuery},
    {{kGet}, "/v1/cluster", "cluster", false, get_cluster},
    // The status page's static files (no data in them; the page calls the API with a token).
    {{kGet}, "/ui", "ui", false, get_ui, Access::kPublic, kAnyQuery},
    {{kGet}, "/ui/{file}", "ui_file", false, get_ui_file, Access::kPublic, kAnyQuery},
    {{kPost}, "/v1/admin/backup", "backup", false, post_backup},
    {{kPost}, "/v1/admin/reload", "reload", false, post_reload},
    {{kGet}, "/v1/sequences", "sequences_list", true, get_sequences},
    {{kGet}, "/v1/sequences/{name}", "sequence_get", true, get_sequence},
    {{kPut}, "/v1/sequences/{name}", "sequence_put", true, put_sequence},
    {{kPatch}, "/v1/sequences/{name}", "sequence_patch", true, patch_sequence},
    {{kDelete}, "/v1/sequences/{name}", "sequence_delete", true, delete_sequence},
    {{kPost}, "/v1/sequences/{name}/next", "next", true, post_next},
    {{kGet},
     "/v1/sequences/{name}/blocks",
     "blocks_list",
     true,
     get_blocks,
     Access::kToken,
     QueryRule{kLimitParam}},
    {{kPost},
     "/v1/sequences/{name}/blocks",
     "blocks_lease",
     true,
     post_block,
     Access::kToken,
     kAnyQuery},
    {{kGet}, "/v1/sequences/{name}/audit", "audit", true, get_audit},
    {{kPost}, "/v1/sequences/{name}/reservations", "reservation_create", true, post_reservation},
    {{kDelete},
     "/v1/sequences/{name}/reservations/{rid}",
     "reservation_release",
     true,
     delete_reservation},
    {{kPost},
     "/v1/sequences/{name}/reservations/{rid}/commit",
     "reservation_commit",
     true,
     post_reservation_commit},
    {{kPost},
     "/v1/sequences/{name}/reservations/{rid}/void",
     "reservation_void",
     true,
     post_reservation_void},
    {{kGet}, "/v1/snowflake/decode/{id}", "snowflake_decode", false, get_snowflake_decode},
    {{kGet}, "/v1/workers", "worker_pools_list", true, get_worker_pools},
    {{kGet}, "/v1/workers/{pool}", "worker_pool_get", true, get_worker_pool},
    {{kPost}, "/v1/workers/{pool}/leases", "worker_lease_acquire", true, post_worker_lease},
    {{kDelete},
     "/v1/workers/{pool}/leases/{id}",
     "worker_lease_release",
     true,
     delete_worker_lease},
    {{kPost},
     "/v1/workers/{pool}/leases/{id}/keepalive",
     "worker_lease_keepalive",
     true,
     post_worker_keepalive},
};

}  // namespace

std::vector<verb> MethodSet::members() const {
  std::vector<verb> out;
  for (unsigned v = 0; v < 64; ++v) {
    if ((bits_ & (std::uint64_t{1} << v)) != 0) out.push_back(static_cast<verb>(v));
  }
  return out;
}

const std::string& PathParams::get(std::string_view placeholder) const {
  static const std::string kNone;
  for (const auto& [name, value] : values_) {
    if (name == placeholder) return value;
  }
  return kNone;
}

std::span<const Route> route_table() { return kRoutes; }

bool match_pattern(const PatternSegments& pattern, std::span<const std::string_view> segments,
                   PathParams* params) {
  // First the shape, without decoding anything: most rows a request is tried against fail.
  if (pattern.count != segments.size()) return false;
  for (std::size_t i = 0; i < pattern.count; ++i) {
    if (pattern.placeholder[i] ? segments[i].empty() : segments[i] != pattern.segment[i]) {
      return false;
    }
  }
  if (params == nullptr) return true;
  PathParams found;
  for (std::size_t i = 0; i < pattern.count; ++i) {
    if (pattern.placeholder[i]) {
      const auto name = pattern.segment[i];
      found.add(name.substr(1, name.size() - 2), decode_segment(segments[i]));
    }
  }
  *params = std::move(found);
  return true;
}

RouteMatch match_route(std::span<const Route> table, verb method, const RequestTarget& target) {
  RouteMatch m;
  if (!target.origin_form) return m;
  std::vector<verb> allowed;
  for (const auto& row : table) {
    // The placeholders are decoded only for the row that answers.
    if (!match_pattern(row.parts, target.segments, nullptr)) continue;
    if (m.path_route == nullptr) m.path_route = &row;
    if (row.methods.contains(method) && match_pattern(row.parts, target.segments, &m.params)) {
      m.route = &row;
      return m;
    }
    for (auto v : row.methods.members()) {
      if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) allowed.push_back(v);
    }
  }
  for (auto v : allowed) {
    if (!m.allow.empty()) m.allow += ", ";
    m.allow += beast::http::to_string(v);
  }
  return m;
}

}  // namespace ticketd::http
