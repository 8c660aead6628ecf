// Worker-ID pools: leases of Snowflake worker IDs to services that embed their own generator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/base/result.h"
#include "server/base/string_hash.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "storage/counter_store.h"

namespace ticketd {

/// One configured pool: worker IDs 0..size-1 and the TTLs a holder may ask for.
struct WorkerPoolSpec {
  std::string name;
  std::uint32_t size = 1024;
  std::int64_t min_ttl_ms = 1000;
  std::int64_t max_ttl_ms = 300000;
  std::int64_t default_ttl_ms = 10000;
  friend bool operator==(const WorkerPoolSpec&, const WorkerPoolSpec&) = default;
};

inline constexpr std::uint32_t kMaxWorkerPoolSize = 65536;
/// A reported high-water mark may run ahead of ticketd's clock (a generator with a logical
/// clock), but not by more than this: a mark a day ahead is a unit mistake (µs for ms), and
/// accepting it would make every later holder of the ID wait that long.
inline constexpr std::int64_t kMaxHighWaterAheadMs = 24 * 3600 * 1000;

/// A message naming the first problem of `spec`, or empty.
[[nodiscard]] std::string validate(const WorkerPoolSpec& spec);

/// The durable state of one worker ID, stored under "worker/<pool>/<id, 5 digits>". A record is
/// never deleted: it carries the generation (so lease ids are never reused) and the high-water
/// mark the next holder must wait past.
struct WorkerSlotRecord {
  std::uint64_t generation = 0;  // leases granted on this ID so far; 0: never leased
  bool released = false;         // the holder of lease `generation` released it
  std::string holder;
  std::int64_t granted_at_ms = 0;
  std::int64_t ttl_ms = 0;
  std::int64_t expires_at_ms = 0;   // live while now < expires_at_ms
  std::int64_t not_before_ms = 0;   // what this holder was told to wait past
  std::int64_t high_water_ms = 0;   // the highest mark this holder reported (0: none)
  std::int64_t released_at_ms = 0;  // when released (0: not released)

  /// Leased, not released, and the TTL has not passed: `now == expires_at_ms` is expired.
  [[nodiscard]] bool live(std::int64_t now_ms) const {
    return generation != 0 && !released && now_ms < expires_at_ms;
  }
  /// The not_before_ms of the next holder of this ID: the latest instant an ID of any previous
  /// holder may carry. That is the highest mark any holder reported, and the end of the last
  /// lease (release or expiry): a holder stops issuing when its lease ends.
  [[nodiscard]] std::int64_t next_not_before_ms() const;
  friend bool operator==(const WorkerSlotRecord&, const WorkerSlotRecord&) = default;
};

inline constexpr std::string_view kWorkerPrefix = "worker/";

[[nodiscard]] std::string worker_slot_key(std::string_view pool, std::uint32_t worker_id);
/// "v=1 gen=.. state=leased|released granted_at_ms=.. ttl_ms=.. expires_at_ms=.. not_before_ms=..
///  high_water_ms=.. released_at_ms=.. holder=<rest of the text>" (holder last: free text).
[[nodiscard]] std::string encode_worker_slot(const WorkerSlotRecord& record);
[[nodiscard]] std::optional<WorkerSlotRecord> decode_worker_slot(std::string_view text);

/// A lease as clients see it. `lease_id` is "<worker_id>-<generation>": unique within the pool
/// forever, because generations are durable and only grow.
struct PoolLease {
  std::string pool;
  std::string lease_id;
  std::uint32_t worker_id = 0;
  std::string holder;
  std::int64_t granted_at_ms = 0;
  std::int64_t ttl_ms = 0;
  std::int64_t expires_at_ms = 0;
  std::int64_t not_before_ms = 0;
  std::int64_t high_water_ms = 0;
  bool released = false;
  friend bool operator==(const PoolLease&, const PoolLease&) = default;
};

using PoolLeaseCallback = std::function<void(DetailedResult<PoolLease>)>;

/// A pool's configuration and its live leases, lowest worker ID first.
struct WorkerPoolStatus {
  WorkerPoolSpec spec;
  std::vector<PoolLease> live;
};

/// Hands out worker IDs of configured pools as leases with a TTL: the lowest ID that no live
/// lease holds, so a pool never gives one ID to two live holders. Every grant, keepalive and
/// release is written through the GroupCommitter and completes only once durable, so leases
/// survive restarts. Expiry is judged on this process's clocks only, and a lease ends only when
/// both agree: its wall-clock expires_at_ms has passed, and so has one TTL on the monotonic
/// clock since this process granted or extended it (or, for a lease read from the store,
/// written by an earlier process or another leader whose clock may be skewed, since add_pool()
/// read it). So neither a new leader whose clock runs ahead nor a wall clock stepped forward
/// here hands an ID to a second holder while the first may still hold it; a clock stepped back
/// only holds leases longer.
///
/// A failed write changes nothing a client can observe: the slot goes back to what it was
/// before (if no later operation changed it since). Writes reach the committer in the order the
/// decisions were taken (a per-pool lock spans decision and submit), so the store never ends
/// with an older state of a slot than memory.
///
/// Callbacks run inline (refusals) or on the committer thread; they must not block. The
/// committer must be stopped before the service is destroyed. Thread safety: all members may be
/// called concurrently (add_pool() too: a reload adds pools while others serve).
class WorkerPoolService {
 public:
  WorkerPoolService(CounterStore& store, GroupCommitter& committer, const Clock& clock);
  ~WorkerPoolService();
  WorkerPoolService(const WorkerPoolService&) = delete;
  WorkerPoolService& operator=(const WorkerPoolService&) = delete;

  /// Adds a pool and loads its slots from the store (blocking: at start-up or on a reload's
  /// background thread). Pools are never removed, so a found Pool stays valid. Records of worker
  /// IDs at or above a (shrunk) size are kept: their leases can still be kept alive and released,
  /// but those IDs are not granted again.
  [[nodiscard]] DetailedResult<void> add_pool(const WorkerPoolSpec& spec);

  /// Leases the lowest free worker ID of `pool` to `holder` for `ttl_ms` (the pool's default
  /// when nullopt). kPoolFull when every ID is live.
  void acquire(std::string_view pool, std::string holder, std::optional<std::int64_t> ttl_ms,
               PoolLeaseCallback done);
  /// Extends a live lease to now + its TTL and records `high_water_ms` (kept if higher).
  void keepalive(std::string_view pool, std::string_view lease_id,
                 std::optional<std::int64_t> high_water_ms, PoolLeaseCallback done);
  /// Ends a live lease now: the ID may be granted again at once, and its next holder is told to
  /// wait past this holder's high-water mark and the release time.
  void release(std::string_view pool, std::string_view lease_id,
               std::optional<std::int64_t> high_water_ms, PoolLeaseCallback done);

  [[nodiscard]] std::optional<WorkerPoolSpec> spec(std::string_view pool) const;
  [[nodiscard]] std::optional<WorkerPoolStatus> status(std::string_view pool) const;
  [[nodiscard]] std::vector<std::string> pool_names() const;

 private:
  struct Pool;
  struct Change;
  enum class Op { kKeepalive, kRelease };

  [[nodiscard]] Pool* find(std::string_view name) const;
  void change_lease(std::string_view pool, std::string_view lease_id,
                    std::optional<std::int64_t> high_water_ms, Op op, PoolLeaseCallback done);
  // Called with the pool's order lock held and its state lock released.
  void persist(Pool& pool, Change change, PoolLeaseCallback done);

  CounterStore& store_;
  GroupCommitter& committer_;
  const Clock& clock_;
  // Fixed at start-up, read-only afterwards.
  mutable std::shared_mutex pools_mutex_;  // guards the map; each Pool guards itself
  StringMap<std::unique_ptr<Pool>> pools_;
};

/// Blocking helpers for tests and tools. Never call them on an I/O thread.
[[nodiscard]] DetailedResult<PoolLease> acquire_and_wait(WorkerPoolService& service,
                                                         std::string_view pool, std::string holder,
                                                         std::optional<std::int64_t> ttl_ms);
[[nodiscard]] DetailedResult<PoolLease> keepalive_and_wait(
    WorkerPoolService& service, std::string_view pool, std::string_view lease_id,
    std::optional<std::int64_t> high_water_ms = std::nullopt);
[[nodiscard]] DetailedResult<PoolLease> release_and_wait(
    WorkerPoolService& service, std::string_view pool, std::string_view lease_id,
    std::optional<std::int64_t> high_water_ms = std::nullopt);

}  // namespace ticketd
