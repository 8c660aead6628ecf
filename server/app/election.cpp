#include "server/app/election.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "server/base/log.h"
#include "storage/etcd/etcd_counter_store.h"

namespace ticketd {

std::unique_ptr<EtcdLeaderElection> start_election(const config::Config& config, Engine& engine,
                                                   FrontEnds& front_ends,
                                                   const Listeners& listeners,
                                                   std::function<void()> on_deposed) {
  if (!engine.ha()) return nullptr;
  ServingGate& gate = *front_ends.gate;
  gate.set_self(InstanceAddress{
      config::ListenAddress{config.mysql.listen.host, listeners.mysql->port()}.to_string(),
      config::ListenAddress{config.http.listen.host, listeners.http->port()}.to_string()});
  const auto ttl = std::chrono::milliseconds(config.storage.leader_ttl);
  LeaderElectionOptions o;
  o.leader_key = etcd::EtcdLayout{config.storage.prefix}.leader_key();
  o.ttl_s = config.storage.leader_ttl.count();
  o.self = gate.view().self;
  // A quiet watch is renewed once per TTL: a range and a watch per follower and TTL.
  o.watch_idle = ttl;
  o.retry_max = std::clamp<std::chrono::milliseconds>(ttl / 4, std::chrono::milliseconds(50),
                                                      std::chrono::milliseconds(1000));
  auto election = std::make_unique<EtcdLeaderElection>(
      *engine.election_client(), std::move(o), gate, engine.clock(),
      [&engine](std::int64_t revision) { return engine.take_over(revision); },
      [on_deposed = std::move(on_deposed)](const std::string& why) {
        log::warn("leadership lost (" + why + "): refusing every request, restarting");
        on_deposed();
      });
  election->start();
  return election;
}

}  // namespace ticketd
