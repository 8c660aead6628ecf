// Live reload: SIGHUP and POST /v1/admin/reload re-read the config file.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "server/app/config_source.h"
#include "server/base/result.h"
#include "server/core/timer_queue.h"

namespace ticketd {

class Engine;
struct FrontEnds;

/// The settings of `next` that differ from `running` and cannot change while ticketd runs
/// (listen addresses, data dir, storage engine, Snowflake layout, TLS, limits, ...), one entry
/// per key or section; empty when every change can apply live. Live: `sequences` (added ones,
/// and changed ticket sequences), `worker_pools` (added ones), `mysql.users`,
/// `mysql.default_auth_plugin`, `http.tokens`, `log_level`, `log_format`, and `defaults`
/// (through the sequences they fill in).
[[nodiscard]] std::vector<std::string> fixed_changes(const config::Config& running,
                                                     const config::Config& next);

/// Re-reads the config file (with the same command-line overrides) and applies what changed.
/// A config with errors changes nothing; so does one that changes a setting that cannot apply
/// live (named in the error), and so does one that moves a stored ticket sequence's
/// increment/offset (checked for every sequence before anything applies; a grid changes only by
/// `ticketd restride`). Otherwise new sequences of every kind are created (ticket ones, and
/// changed ticket ones, through ensure_configured), new worker pools added, and the MySQL
/// users, HTTP tokens, log level and log format replaced. Connections are not dropped: a MySQL
/// connection keeps the users it logged in with, the next one sees the new. A sequence removed
/// from the file is not dropped (that stays explicit). When a store write fails midway (a full
/// disk), that sequence keeps its old settings in memory and on disk, what was applied before
/// it stays applied, the error says which, and the reloader records exactly that as running:
/// reloading the same file again finishes the rest, reverting the file undoes what applied.
/// Thread safety: reload() may be called from any thread but blocks on store writes (never
/// call it on an I/O thread); reloads run one at a time.
class Reloader {
 public:
  using Done = std::function<void(DetailedResult<std::vector<std::string>>)>;

  Reloader(ConfigSource source, config::Config running, Engine& engine, FrontEnds& front_ends);

  /// What changed, one line each ("nothing changed" when the file is the same).
  [[nodiscard]] DetailedResult<std::vector<std::string>> reload();
  /// reload() on the reloader's own thread (creating a sequence of another kind waits for the
  /// engine's background thread, so a reload must not run there); `done` runs on it.
  void reload_async(Done done);
  /// Finishes a reload in flight and refuses new ones (before the engine stops).
  void stop() { worker_.stop(); }

 private:
  TimerQueue worker_;
  std::mutex mutex_;
  const ConfigSource source_;
  config::Config running_;
  Engine& engine_;
  FrontEnds& front_ends_;
};

}  // namespace ticketd
