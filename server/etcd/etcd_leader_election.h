// Leader election on etcd: a create-if-absent leader key bound to a kept-alive lease.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "server/core/clock.h"
#include "server/core/serving_gate.h"
#include "storage/etcd/etcd_client.h"
#include "storage/etcd/etcd_watch.h"

namespace ticketd {

/// The leader key's value: "mysql=HOST:PORT http=HOST:PORT" (readable with etcdctl).
[[nodiscard]] std::string encode_leader_value(const InstanceAddress& a);
[[nodiscard]] InstanceAddress decode_leader_value(std::string_view value);

struct LeaderElectionOptions {
  std::string leader_key;
  std::int64_t ttl_s = 5;
  InstanceAddress self;
  /// A follower's watch that brought nothing for this long is closed and the key read again
  /// (a member cut off without a reset would otherwise hide the leader's end forever).
  std::chrono::milliseconds watch_idle{5000};
  /// Retries after etcd failed (a call, or a broken watch) back off from 50 ms up to this.
  std::chrono::milliseconds retry_max{1000};
};

/// Campaigns for `leader_key` and, once elected, keeps its lease alive every TTL/3, reporting
/// every change to the ServingGate. A campaign is one transaction: if the key is absent
/// (create_revision == 0), put it with our value and lease; else read it (to learn the leader).
/// The key's create revision is the leadership term: the etcd store fences commits on it.
///
/// `on_elected(revision)` runs on the election thread right after winning and must load the
/// engine; an error there gives leadership up. The gate opens only after it returned: a request
/// let in earlier would find no sequences (HTTP 404, MySQL "table doesn't exist") although they
/// exist, and a client would take that as final. `on_deposed(why)` runs once when the lease is
/// found expired (or cannot be proven alive any more): the gate is already closed by then.
/// A follower watches the leader key from the revision of its last read: a delete (the
/// leader's lease expired or was revoked) makes it campaign at once; a put names the new
/// leader. A broken or quiet (watch_idle) stream sends it back to the campaign, whose read
/// starts the next watch, so an idle follower makes two requests (a range and a watch) per
/// watch_idle instead of a poll every few hundred milliseconds.
/// Thread safety: start() and stop() from the owner only.
class EtcdLeaderElection {
 public:
  using Elected = std::function<DetailedResult<void>(std::int64_t revision)>;
  using Deposed = std::function<void(const std::string& why)>;

  EtcdLeaderElection(etcd::EtcdClient& client, LeaderElectionOptions options, ServingGate& gate,
                     const Clock& clock, Elected on_elected, Deposed on_deposed);
  ~EtcdLeaderElection();
  EtcdLeaderElection(const EtcdLeaderElection&) = delete;
  EtcdLeaderElection& operator=(const EtcdLeaderElection&) = delete;

  void start();
  /// Ends the thread; a leader revokes its lease so a standby takes over at once.
  void stop();

 private:
  void run();
  // What a won campaign tells run(): the term, and when the lease was last proven alive.
  struct Won {
    std::int64_t revision = 0;
    std::int64_t renewal_sent_ms = 0;
  };
  // One campaign: set when this instance now leads (the gate is not open yet).
  std::optional<Won> campaign();
  // Keeps the lease alive until it is lost or stop(); false when lost.
  bool keep_leading();
  // Watches the leader key from observed_revision_ + 1 until the key is deleted, the stream
  // breaks or goes quiet, or stop(); false when stopping.
  bool follow();
  bool retry_later();                          // waits the next backoff; false when stopping
  bool wait_for(std::chrono::milliseconds d);  // false when stopping

  etcd::EtcdClient& client_;
  const LeaderElectionOptions options_;
  ServingGate& gate_;
  const Clock& clock_;
  Elected on_elected_;
  Deposed on_deposed_;
  std::int64_t lease_id_ = 0;  // election thread only
  // The revision at which the last campaign saw the key held by another (0: it reached no
  // etcd); election thread only.
  std::int64_t observed_revision_ = 0;
  std::chrono::milliseconds backoff_{0};  // election thread only
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  etcd::EtcdWatch* watch_ = nullptr;  // guarded by mutex_: the follower's watch, for stop()
  std::thread thread_;
};

}  // namespace ticketd
