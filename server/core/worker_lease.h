// The port through which a Snowflake generator learns whether it may use its worker ID.
#pragma once

#include <cstdint>

namespace ticketd {

/// One snapshot of a leased worker ID. Times are readings of the generator's Clock.
struct WorkerLeaseState {
  bool held = false;
  /// Changes every time a worker ID is (re)claimed, even when the ID is the same: the previous
  /// holder in between may have issued IDs up to its mark.
  std::uint64_t generation = 0;
  std::uint64_t worker_id = 0;
  /// The clock when the last successful renewal (grant or keepalive) was sent. A reading below
  /// it means the clock stepped back, which would stretch the window below: IDs stop.
  std::int64_t renewed_at_unix_ms = 0;
  /// IDs stop at this reading: the renewal's send time + TTL - a safety margin, so a paused or
  /// partitioned holder stops before the lease can expire and another process claim the ID.
  std::int64_t valid_until_unix_ms = 0;
  /// The previous holder's high-water mark for this worker ID: IDs resume strictly after it.
  std::int64_t not_before_unix_ms = 0;
  /// This holder's durable high-water mark (written where the next holder will read it): no ID
  /// may carry a later time.
  std::int64_t issue_until_unix_ms = 0;

  friend bool operator==(const WorkerLeaseState&, const WorkerLeaseState&) = default;
};

/// Where a worker ID comes from when it is leased (from etcd, say) rather than configured:
/// implemented by an adapter that claims and renews the lease on a background thread.
/// Thread safety: state() may be called concurrently, and is called on every ID, so it must be
/// cheap and must never block on the network.
class WorkerLease {
 public:
  virtual ~WorkerLease() = default;
  [[nodiscard]] virtual WorkerLeaseState state() const = 0;
};

}  // namespace ticketd
