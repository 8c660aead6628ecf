// High availability with storage.engine etcd: the leader election that opens the serving gate.
#pragma once

#include <functional>
#include <memory>

#include "config/config.h"
#include "server/app/engine.h"
#include "server/app/front_ends.h"
#include "server/etcd/etcd_leader_election.h"

namespace ticketd {

/// With storage.engine etcd, starts campaigning and returns the election; with RocksDB, null.
/// A follower serves only chatter and "not the leader" answers; after winning, the engine loads
/// from etcd, the store is fenced on the new term, and the gate opens. A deposed leader's gate is
/// closed for good; `on_deposed` (called once, on the election's thread) should shut the daemon
/// down so that main() re-executes the binary and it comes back as a clean follower with an
/// empty engine. The election references `engine`, `front_ends.gate` and `on_deposed`'s captures
/// until stop() or its destruction.
[[nodiscard]] std::unique_ptr<EtcdLeaderElection> start_election(const config::Config& config,
                                                                 Engine& engine,
                                                                 FrontEnds& front_ends,
                                                                 const Listeners& listeners,
                                                                 std::function<void()> on_deposed);

}  // namespace ticketd
