#include "server/app/reload.h"

#include <algorithm>
#include <future>
#include <map>
#include <utility>

#include "server/app/config_mapping.h"
#include "server/app/engine.h"
#include "server/app/front_ends.h"
#include "server/app/secrets.h"
#include "server/base/log.h"
#include "server/core/sequence_definition.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

// Where an entry was written is not a setting.
config::SequenceConfig without_line(config::SequenceConfig s) {
  s.line = 0;
  return s;
}
config::WorkerPoolConfig without_line(config::WorkerPoolConfig p) {
  p.line = 0;
  return p;
}

template <class T>
std::map<std::string, T> by_name(const std::vector<T>& items) {
  std::map<std::string, T> out;
  for (const auto& item : items) out.emplace(item.name, without_line(item));
  return out;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : separator) + i;
  return out;
}

DetailedResult<void> wait_create(TicketService& service, const SequenceDefinition& definition) {
  std::promise<DetailedResult<void>> p;
  service.create(definition, CreateOptions{.if_not_exists = true},
                 [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

}  // namespace

std::vector<std::string> fixed_changes(const config::Config& running, const config::Config& next) {
  std::vector<std::string> out;
  auto check = [&out](bool differs, std::string key) {
    if (differs) out.push_back(std::move(key));
  };
  check(running.data_dir != next.data_dir, "data_dir");
  check(running.durability != next.durability, "durability.external_mark");
  check(running.threads != next.threads, "threads");
  check(running.mysql.listen != next.mysql.listen, "mysql.listen");
  check(running.http.listen != next.http.listen, "http.listen");
  check(running.mysql.tls != next.mysql.tls, "mysql.tls");
  check(running.http.tls != next.http.tls, "http.tls");
  {
    // Everything of mysql: but the users and the default plugin (and what was named above).
    config::MySqlConfig a = running.mysql;
    config::MySqlConfig b = next.mysql;
    b.users = a.users;
    b.default_auth_plugin = a.default_auth_plugin;
    b.listen = a.listen;
    b.tls = a.tls;
    check(a != b, "mysql (limits, database, require_secure_transport)");
  }
  {
    config::HttpConfig a = running.http;
    config::HttpConfig b = next.http;
    b.tokens = a.tokens;
    b.listen = a.listen;
    b.tls = a.tls;
    check(a != b, "http (limits, metrics_public, lease_retention)");
  }
  {
    config::SnowflakeConfig a = running.snowflake;
    config::SnowflakeConfig b = next.snowflake;
    a.line = b.line = 0;
    check(a != b, "snowflake (layout and worker ID)");
  }
  {
    config::StorageConfig a = running.storage;
    config::StorageConfig b = next.storage;
    a.line = b.line = 0;
    check(a != b, "storage");
  }
  check(running.security != next.security, "security");
  check(running.backup != next.backup, "backup");
  check(running.ha != next.ha, "ha");

  const auto old_sequences = by_name(running.sequences);
  const auto new_sequences = by_name(next.sequences);
  const bool ha = running.storage.engine == config::StorageEngine::kEtcd;
  for (const auto& [name, s] : new_sequences) {
    auto it = old_sequences.find(name);
    if (it == old_sequences.end()) {
      // A follower does not write; the leader loads the config's sequences when it takes over.
      check(ha, "sequences." + name + " (added: with storage.engine etcd, at the next start)");
      continue;
    }
    if (it->second == s) continue;
    if (it->second.kind != s.kind) {
      out.push_back("sequences." + name + ".kind");
    } else if (s.kind != SequenceKind::kTicket || ha) {
      out.push_back("sequences." + name + " (a " + std::string(kind_name(s.kind)) +
                    " sequence's settings change at the next start)");
    }
  }
  const auto old_pools = by_name(running.worker_pools);
  const auto new_pools = by_name(next.worker_pools);
  for (const auto& [name, _] : new_pools) {
    // A follower's pools would hold the leases it read before it leads; a leader loads the
    // config's pools with the stored leases when it takes over.
    if (!old_pools.contains(name)) {
      check(ha, "worker_pools." + name + " (added: with storage.engine etcd, at the next start)");
    }
  }
  for (const auto& [name, p] : old_pools) {
    auto it = new_pools.find(name);
    if (it == new_pools.end()) {
      out.push_back("worker_pools." + name + " (removed: pools change at the next start)");
    } else if (!(it->second == p)) {
      out.push_back("worker_pools." + name + " (changed: pools change at the next start)");
    }
  }
  return out;
}

Reloader::Reloader(ConfigSource source, config::Config running, Engine& engine,
                   FrontEnds& front_ends)
    : source_(std::move(source)),
      running_(std::move(running)),
      engine_(engine),
      front_ends_(front_ends) {}

void Reloader::reload_async(Done done) {
  worker_.after(std::chrono::milliseconds(0), [this, done = std::move(done)] { done(reload()); });
}

DetailedResult<std::vector<std::string>> Reloader::reload() {
  std::lock_guard lock(mutex_);
  ReadConfig read = read_config(source_);
  for (const auto& w : read.warnings) log::warn("reload: " + w);
  if (!read.config) {
    return Error{
        TicketErrc::kInvalidArgument,
        "reload: " + source_.path + " has errors; nothing changed: " + join(read.errors, "; ")};
  }
  const config::Config& next = *read.config;
  if (auto fixed = fixed_changes(running_, next); !fixed.empty()) {
    return Error{TicketErrc::kInvalidArgument,
                 "reload: these settings cannot change while ticketd runs, so nothing changed "
                 "(restart to apply them): " +
                     join(fixed, ", ")};
  }
  // Every changed ticket sequence is checked against its stored settings before anything
  // applies, so a refused grid change leaves the whole config as it was.
  const auto old_sequences = by_name(running_.sequences);
  TicketService& service = engine_.service();
  for (const auto& s : next.sequences) {
    auto it = old_sequences.find(s.name);
    if (it == old_sequences.end() || it->second == without_line(s)) continue;
    if (s.kind != SequenceKind::kTicket) continue;
    if (auto seq = service.find(s.name)) {
      if (auto e = seq->check_config(to_spec(s))) {
        return Error{e->code,
                     "reload: sequences." + s.name + ": " + e->message + "; nothing changed"};
      }
    }
  }
  // What is in force, step by step: when a step fails, the reloader keeps what did apply (and
  // only that) as running, so the next reload of any file compares against the truth.
  config::Config now = running_;
  std::vector<std::string> applied;
  const auto failed = [&](const Error& e, const std::string& what) {
    running_ = now;
    return Error{e.code,
                 "reload: " + what + ": " + e.message +
                     (applied.empty() ? "; nothing changed"
                                      : " (applied before it: " + join(applied, ", ") + ")")};
  };
  if (next.log_level != running_.log_level) {
    log::set_level(to_core(next.log_level));
    now.log_level = next.log_level;
    applied.push_back("log_level");
  }
  if (next.log_format != running_.log_format) {
    // From the next line on: the "reload: applied" line is already in the new format.
    log::set_format(to_core(next.log_format));
    now.log_format = next.log_format;
    applied.push_back("log_format");
  }
  if (next.mysql.users != running_.mysql.users ||
      next.mysql.default_auth_plugin != running_.mysql.default_auth_plugin) {
    front_ends_.login.set(login_policy(next));
    now.mysql.users = next.mysql.users;
    now.mysql.default_auth_plugin = next.mysql.default_auth_plugin;
    applied.push_back("mysql.users (" + std::to_string(next.mysql.users.size()) + " users)");
  }
  if (next.http.tokens != running_.http.tokens) {
    front_ends_.http_deps.tokens.set(token_verifiers(next));
    now.http.tokens = next.http.tokens;
    applied.push_back("http.tokens (" + std::to_string(next.http.tokens.size()) + " tokens)");
  }
  // Each sequence applies whole or not at all (a failed write restores its old settings);
  // the next reload of the same file finishes the rest.
  for (const auto& s : next.sequences) {
    auto it = old_sequences.find(s.name);
    const bool added = it == old_sequences.end();
    if (!added && it->second == without_line(s)) continue;
    DetailedResult<void> r;
    if (s.kind == SequenceKind::kTicket) {
      r = service.ensure_configured(to_spec(s));
    } else {
      r = wait_create(service, to_definition(s));
    }
    if (!r) return failed(r.error(), "sequences." + s.name);
    auto entry = std::find_if(now.sequences.begin(), now.sequences.end(),
                              [&](const auto& e) { return e.name == s.name; });
    if (entry == now.sequences.end()) {
      now.sequences.push_back(s);
    } else {
      *entry = s;
    }
    applied.push_back("sequences." + s.name + (added ? " (added)" : " (settings applied)"));
  }
  const auto new_sequences = by_name(next.sequences);
  for (const auto& [name, _] : old_sequences) {
    if (!new_sequences.contains(name)) {
      log::info("reload: sequence '" + name +
                    "' is no longer in the config file; it keeps serving (drop it explicitly)",
                {{"sequence", name}});
    }
  }
  const auto old_pools = by_name(running_.worker_pools);
  for (const auto& p : next.worker_pools) {
    if (old_pools.contains(p.name)) continue;
    if (auto r = engine_.workers().add_pool(to_spec(p)); !r) {
      return failed(r.error(), "worker_pools." + p.name);
    }
    now.worker_pools.push_back(p);
    applied.push_back("worker_pools." + p.name + " (added)");
  }
  running_ = next;
  if (applied.empty()) applied.push_back("nothing changed");
  return applied;
}

}  // namespace ticketd
