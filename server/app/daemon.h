// The composition root: builds every long-lived object once and wires them together.
#pragma once

#include "config/config.h"
#include "server/app/config_source.h"

namespace ticketd {

/// Owns the process's services for their whole life: data-dir lock, store, group committer,
/// sequence engine, io_context and its threads, the front ends. run() blocks until SIGTERM or
/// SIGINT, then stops accepting, lets in-flight work finish, flushes and returns the exit code.
class Daemon {
 public:
  /// `source` is where `config` was read from: a reload (SIGHUP, POST /v1/admin/reload) reads
  /// it again.
  Daemon(config::Config config, ConfigSource source)
      : config_(std::move(config)), source_(std::move(source)) {}
  /// The exit status: ExitCode::kRestartAsFollower when this instance lost the leadership
  /// (storage.engine etcd), and main() re-executes the binary so it rejoins as a follower with a
  /// fresh engine.
  [[nodiscard]] int run();

 private:
  config::Config config_;
  ConfigSource source_;
};

}  // namespace ticketd
