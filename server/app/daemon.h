// The composition root: builds every long-lived object once and wires them together.
#pragma once

#include "config/config.h"

namespace ticketd {

/// Owns the process's services for their whole life: data-dir lock, store, group committer,
/// sequence engine, io_context and its threads, the front ends. run() blocks until SIGTERM or
/// SIGINT, then stops accepting, lets in-flight work finish, flushes and returns the exit code.
class Daemon {
 public:
  explicit Daemon(config::Config config) : config_(std::move(config)) {}
  /// run()'s exit code when this instance lost the leadership (storage.engine etcd): main()
  /// re-executes the binary so it rejoins as a follower with a fresh engine.
  static constexpr int kExitRestartAsFollower = 75;

  [[nodiscard]] int run();

 private:
  config::Config config_;
};

}  // namespace ticketd
