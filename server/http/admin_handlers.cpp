#include "server/http/admin_handlers.h"

#include <boost/beast/http/field.hpp>
#include <utility>

#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {

using beast::http::field;
using beast::http::status;

void get_healthz(const Reply& reply, const RouteRequest&) {
  reply.json(status::ok, status_json("ok"));
}

void get_readyz(const Reply& reply, const RouteRequest&) {
  const auto& deps = reply.deps();
  if (deps.storage_ready && !deps.storage_ready()) {
    return reply.fail(HttpErrc::kNotReady, "storage is not open or not writable");
  }
  reply.json(status::ok, status_json("ready"));
}

void get_metrics(const Reply& reply, const RouteRequest&) {
  Response res{status::ok};
  res.preset("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n");
  res.body() = reply.deps().metrics.serialize();
  reply.send(std::move(res));
}

void post_backup(const Reply& reply, const RouteRequest&) {
  auto* backups = reply.deps().backups;
  if (backups == nullptr) {
    return reply.fail(HttpErrc::kNotConfigured,
                      "online backups are off: set backup.dir (RocksDB engine only; with the etcd "
                      "engine, back up etcd itself with etcdctl snapshot save)");
  }
  backups->take(reply.resume<DetailedResult<backup::TakenBackup>>(
      [reply](DetailedResult<backup::TakenBackup> taken) {
        if (!taken) return reply.fail(taken.error());
        reply.json_text(status::ok, backup::encode_manifest(taken->manifest, taken->path));
      }));
}

void post_reload(const Reply& reply, const RouteRequest&) {
  if (!reply.deps().reload) {
    return reply.fail(HttpErrc::kNotConfigured, "this server cannot reload its config");
  }
  reply.deps().reload(reply.resume<DetailedResult<std::vector<std::string>>>(
      [reply](DetailedResult<std::vector<std::string>> applied) {
        if (!applied) return reply.fail(applied.error());
        reply.json(status::ok, reload_json(*applied));
      }));
}

void get_cluster(const Reply& reply, const RouteRequest&) {
  const auto* gate = reply.deps().gate;
  ClusterView view;
  if (gate != nullptr) view = gate->view();
  if (gate == nullptr) view.role = Role::kLeader;
  const bool serving = gate == nullptr || gate->serving();
  reply.json(status::ok, cluster_json(view, serving));
}

}  // namespace ticketd::http
