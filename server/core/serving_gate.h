// Whether this instance may issue values: the leader role and the freshness of its lease.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "server/base/result.h"
#include "server/core/clock.h"

namespace ticketd {

enum class Role { kFollower, kLeader, kDeposed };

[[nodiscard]] std::string_view role_name(Role role);

/// Where an instance serves: its advertised MySQL and HTTP addresses ("host:port").
struct InstanceAddress {
  std::string mysql;
  std::string http;
  friend bool operator==(const InstanceAddress&, const InstanceAddress&) = default;
};

/// What the front ends report about the cluster (GET /v1/cluster, SHOW STATUS).
struct ClusterView {
  Role role = Role::kFollower;
  InstanceAddress self;
  InstanceAddress leader;     // empty when no leader is known
  std::int64_t revision = 0;  // the leader key's create revision: the leadership term
};

/// Decides, per request, whether this instance may issue. An instance serves only while it is
/// the leader *and* its last confirmed lease renewal is younger than the TTL minus a margin:
/// a leader cut off from etcd (or frozen by SIGSTOP) stops on its own clock before etcd can
/// expire the lease and elect another, so two instances never issue at the same time even
/// from their in-memory caches, which no fenced commit guards. Once deposed an instance never
/// serves again (the process restarts as a follower).
///
/// Without an election (the RocksDB engine) the gate is "standalone" and always serves.
/// Time comes from the injected Clock's monotonic reading (renewal times passed in are
/// Clock::monotonic_ms() values): a wall clock stepped back cannot stretch a lease, nor one
/// stepped forward cut it short. Thread safety: all members may be called concurrently.
class ServingGate {
 public:
  /// An always-serving gate (no election).
  explicit ServingGate(const Clock& clock);
  /// A follower that may be elected; `ttl_ms` is the leader lease's TTL and `margin_ms` how
  /// long before its expiry (as measured from the renewal's send time) serving stops.
  ServingGate(const Clock& clock, InstanceAddress self, std::int64_t ttl_ms,
              std::int64_t margin_ms);

  [[nodiscard]] bool serving() const;
  /// As serving(), with the term it serves under, read in the same step: nullopt when not
  /// serving, 0 for a standalone gate (no election, no term).
  [[nodiscard]] std::optional<std::int64_t> serving_term() const;
  [[nodiscard]] ClusterView view() const;
  /// kNotLeader naming the leader's MySQL (`for_http` false) or HTTP address.
  [[nodiscard]] Error not_serving_error(bool for_http) const;

  /// This instance's advertised addresses (known once the listeners are bound).
  void set_self(InstanceAddress self);
  /// Another instance leads (`leader` may be empty: unknown), elected at `leader_term` (its
  /// leader key's create revision; 0: not known), which the view reports. Ignored once deposed.
  void follow(InstanceAddress leader, std::int64_t leader_term = 0);
  /// This instance won at `revision`; the lease was granted or renewed by a request sent at
  /// `renewal_sent_ms` (monotonic). Ignored once deposed.
  void lead(std::int64_t revision, std::int64_t renewal_sent_ms);
  /// A keepalive sent at `sent_ms` succeeded.
  void renewed(std::int64_t sent_ms);
  /// Leadership is lost for good: serving stops at once.
  void depose();

 private:
  const Clock& clock_;
  const bool standalone_;
  const std::int64_t ttl_ms_ = 0;
  const std::int64_t margin_ms_ = 0;
  mutable std::mutex mutex_;
  ClusterView view_;
  std::int64_t renewal_sent_ms_ = 0;
};

}  // namespace ticketd
