#include "server/app/reload.h"

#include <algorithm>
#include <future>
#include <map>
#include <optional>
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
template <class T>
T without_line(T item) {
  item.line = 0;
  return item;
}

template <class T>
std::map<std::string, T> by_name(const std::vector<T>& items) {
  std::map<std::string, T> out;
  for (const auto& item : items) out.emplace(item.name, without_line(item));
  return out;
}

using SequencesByName = std::map<std::string, config::SequenceConfig>;

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

// Whether mysql: differs in anything but the users and the default plugin (live) and the
// listen address and TLS (which fixed_changes names on their own).
bool mysql_fixed_settings_differ(const config::MySqlConfig& running,
                                 const config::MySqlConfig& next) {
  config::MySqlConfig a = running;
  config::MySqlConfig b = next;
  b.users = a.users;
  b.default_auth_plugin = a.default_auth_plugin;
  b.listen = a.listen;
  b.tls = a.tls;
  return a != b;
}

// Whether http: differs in anything but the tokens (live) and the listen address and TLS
// (which fixed_changes names on their own).
bool http_fixed_settings_differ(const config::HttpConfig& running, const config::HttpConfig& next) {
  config::HttpConfig a = running;
  config::HttpConfig b = next;
  b.tokens = a.tokens;
  b.listen = a.listen;
  b.tls = a.tls;
  return a != b;
}

// Appends to `out` the sequences whose change waits for the next start: a changed kind, an added
// one under storage.engine etcd (`ha`), changed settings of any other kind than ticket (of every
// kind under etcd).
void add_fixed_sequence_changes(const config::Config& running, const config::Config& next, bool ha,
                                std::vector<std::string>& out) {
  const auto old_sequences = by_name(running.sequences);
  const auto new_sequences = by_name(next.sequences);
  for (const auto& [name, s] : new_sequences) {
    auto it = old_sequences.find(name);
    if (it == old_sequences.end()) {
      // A follower does not write; the leader loads the config's sequences when it takes over.
      if (ha) {
        out.push_back("sequences." + name +
                      " (added: with storage.engine etcd, at the next start)");
      }
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
}

// Appends to `out` the worker pools whose change waits for the next start: an added one under
// storage.engine etcd (`ha`), a removed or changed one always.
void add_fixed_pool_changes(const config::Config& running, const config::Config& next, bool ha,
                            std::vector<std::string>& out) {
  const auto old_pools = by_name(running.worker_pools);
  const auto new_pools = by_name(next.worker_pools);
  for (const auto& [name, _] : new_pools) {
    // A follower's pools would hold the leases it read before it leads; a leader loads the
    // config's pools with the stored leases when it takes over.
    if (!old_pools.contains(name)) {
      if (ha) {
        out.push_back("worker_pools." + name +
                      " (added: with storage.engine etcd, at the next start)");
      }
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
}

// Every changed ticket sequence is checked against its stored settings before anything
// applies, so a refused grid change leaves the whole config as it was. The error of the first
// one refused, nothing when all fit.
std::optional<Error> check_changed_ticket_sequences(TicketService& service,
                                                    const SequencesByName& old_sequences,
                                                    const config::Config& next) {
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
  return std::nullopt;
}

// What a reload has put in force so far, step by step: when a step fails, the reloader keeps
// what did apply (and only that) as running, so the next reload of any file compares against
// the truth.
struct Progress {
  config::Config now;                // the running config plus every step that applied
  std::vector<std::string> applied;  // one line per step that applied
};

// The error of a step that failed, saying what applied before it.
Error step_failed(const Progress& progress, const Error& e, const std::string& what) {
  return Error{e.code, "reload: " + what + ": " + e.message +
                           (progress.applied.empty()
                                ? "; nothing changed"
                                : " (applied before it: " + join(progress.applied, ", ") + ")")};
}

// Applies the settings that cannot fail: log level and format, MySQL users, HTTP tokens.
void apply_live_settings(const config::Config& running, const config::Config& next,
                         FrontEnds& front_ends, Progress& progress) {
  if (next.log_level != running.log_level) {
    log::set_level(to_core(next.log_level));
    progress.now.log_level = next.log_level;
    progress.applied.push_back("log_level");
  }
  if (next.log_format != running.log_format) {
    // From the next line on: the "reload: applied" line is already in the new format.
    log::set_format(to_core(next.log_format));
    progress.now.log_format = next.log_format;
    progress.applied.push_back("log_format");
  }
  if (next.mysql.users != running.mysql.users ||
      next.mysql.default_auth_plugin != running.mysql.default_auth_plugin) {
    front_ends.login.set(login_policy(next));
    progress.now.mysql.users = next.mysql.users;
    progress.now.mysql.default_auth_plugin = next.mysql.default_auth_plugin;
    progress.applied.push_back("mysql.users (" + std::to_string(next.mysql.users.size()) +
                               " users)");
  }
  if (next.http.tokens != running.http.tokens) {
    front_ends.http_deps.tokens.set(token_verifiers(next));
    progress.now.http.tokens = next.http.tokens;
    progress.applied.push_back("http.tokens (" + std::to_string(next.http.tokens.size()) +
                               " tokens)");
  }
}

// Creates the added sequences and applies the changed ones, in the file's order; the error of
// the first that fails, nothing when all applied.
std::optional<Error> apply_sequences(TicketService& service, const SequencesByName& old_sequences,
                                     const config::Config& next, Progress& progress) {
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
    if (!r) return step_failed(progress, r.error(), "sequences." + s.name);
    auto entry = std::find_if(progress.now.sequences.begin(), progress.now.sequences.end(),
                              [&](const auto& e) { return e.name == s.name; });
    if (entry == progress.now.sequences.end()) {
      progress.now.sequences.push_back(s);
    } else {
      *entry = s;
    }
    progress.applied.push_back("sequences." + s.name +
                               (added ? " (added)" : " (settings applied)"));
  }
  return std::nullopt;
}

// Logs each sequence that is no longer in the file (a reload never drops one).
void log_sequences_left_out(const SequencesByName& old_sequences, const config::Config& next) {
  const auto new_sequences = by_name(next.sequences);
  for (const auto& [name, _] : old_sequences) {
    if (!new_sequences.contains(name)) {
      log::info("reload: sequence '" + name +
                    "' is no longer in the config file; it keeps serving (drop it explicitly)",
                {{"sequence", name}});
    }
  }
}

// Adds the worker pools that are new in the file; the error of the first that fails, nothing
// when all were added.
std::optional<Error> add_worker_pools(Engine& engine, const config::Config& running,
                                      const config::Config& next, Progress& progress) {
  const auto old_pools = by_name(running.worker_pools);
  for (const auto& p : next.worker_pools) {
    if (old_pools.contains(p.name)) continue;
    if (auto r = engine.workers().add_pool(to_spec(p)); !r) {
      return step_failed(progress, r.error(), "worker_pools." + p.name);
    }
    progress.now.worker_pools.push_back(p);
    progress.applied.push_back("worker_pools." + p.name + " (added)");
  }
  return std::nullopt;
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
  check(mysql_fixed_settings_differ(running.mysql, next.mysql),
        "mysql (limits, database, require_secure_transport)");
  check(http_fixed_settings_differ(running.http, next.http),
        "http (limits, metrics_public, lease_retention)");
  check(without_line(running.snowflake) != without_line(next.snowflake),
        "snowflake (layout and worker ID)");
  check(without_line(running.storage) != without_line(next.storage), "storage");
  check(running.security != next.security, "security");
  check(running.backup != next.backup, "backup");
  check(running.ha != next.ha, "ha");

  const bool ha = running.storage.engine == config::StorageEngine::kEtcd;
  add_fixed_sequence_changes(running, next, ha, out);
  add_fixed_pool_changes(running, next, ha, out);
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
  const SequencesByName old_sequences = by_name(running_.sequences);
  TicketService& service = engine_.service();
  if (auto refused = check_changed_ticket_sequences(service, old_sequences, next)) return *refused;

  Progress progress{.now = running_, .applied = {}};
  apply_live_settings(running_, next, front_ends_, progress);
  if (auto failed = apply_sequences(service, old_sequences, next, progress)) {
    running_ = progress.now;
    return *failed;
  }
  log_sequences_left_out(old_sequences, next);
  if (auto failed = add_worker_pools(engine_, running_, next, progress)) {
    running_ = progress.now;
    return *failed;
  }
  running_ = next;
  if (progress.applied.empty()) progress.applied.push_back("nothing changed");
  return std::move(progress.applied);
}

}  // namespace ticketd
