#include "server/core/worker_pool_service.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <utility>

#include "server/base/log.h"
#include "server/base/parse_int.h"
#include "server/base/record_codec.h"
#include "server/core/sequence_spec.h"
#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"

namespace ticketd {
namespace {

std::string lease_id_of(std::uint32_t worker_id, std::uint64_t generation) {
  return std::to_string(worker_id) + "-" + std::to_string(generation);
}

// "17-3" -> {17, 3}.
std::optional<std::pair<std::uint32_t, std::uint64_t>> parse_lease_id(std::string_view id) {
  const auto dash = id.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto worker = parse_int<std::uint32_t>(id.substr(0, dash));
  auto generation = parse_int<std::uint64_t>(id.substr(dash + 1));
  if (!worker || !generation || *generation == 0) return std::nullopt;
  return std::pair{*worker, *generation};
}

PoolLease lease_view(const std::string& pool, std::uint32_t worker_id, const WorkerSlotRecord& r) {
  return PoolLease{pool,
                   lease_id_of(worker_id, r.generation),
                   worker_id,
                   r.holder,
                   r.granted_at_ms,
                   r.ttl_ms,
                   r.expires_at_ms,
                   r.not_before_ms,
                   r.high_water_ms,
                   r.released};
}

// One line per durable grant or release (rare: a holder takes an ID when it starts and keeps it
// alive), a debug line per keepalive (every few seconds per holder).
void log_lease_change(const WorkerSlotRecord& before, const WorkerSlotRecord& after,
                      const PoolLease& lease) {
  const std::string where = "worker pool '" + lease.pool + "': ";
  const log::Field fields[] = {{"pool", lease.pool},
                               {"lease", lease.lease_id},
                               {"worker_id", lease.worker_id},
                               {"holder", lease.holder}};
  if (lease.released) {
    log::info(where + "lease " + lease.lease_id + " of '" + lease.holder + "' released", fields);
  } else if (before.generation != after.generation) {
    log::info(where + "worker ID " + std::to_string(lease.worker_id) + " leased to '" +
                  lease.holder + "' (lease " + lease.lease_id + ", TTL " +
                  std::to_string(lease.ttl_ms) + " ms, not before " +
                  format_utc_ms(lease.not_before_ms) + ")",
              fields);
  } else {
    log::debug(where + "lease " + lease.lease_id + " kept alive until " +
                   format_utc_ms(lease.expires_at_ms),
               fields);
  }
}

Error unknown_pool(std::string_view name) {
  return Error{WorkerErrc::kUnknownPool, "worker pool '" + std::string(name) + "' does not exist"};
}

}  // namespace

std::string validate(const WorkerPoolSpec& spec) {
  if (auto problem = validate_name(spec.name); !problem.empty()) return "pool " + problem;
  if (spec.size < 1 || spec.size > kMaxWorkerPoolSize) {
    return "size must be 1.." + std::to_string(kMaxWorkerPoolSize);
  }
  if (spec.min_ttl_ms < 1) return "the minimum TTL must be positive";
  if (spec.min_ttl_ms > spec.default_ttl_ms || spec.default_ttl_ms > spec.max_ttl_ms) {
    return "TTLs must satisfy min <= default <= max";
  }
  return {};
}

std::int64_t WorkerSlotRecord::next_not_before_ms() const {
  if (generation == 0) return 0;
  const std::int64_t ended_at = released ? released_at_ms : expires_at_ms;
  return std::max({not_before_ms, high_water_ms, ended_at});
}

std::string worker_slot_key(std::string_view pool, std::uint32_t worker_id) {
  char id[16];
  std::snprintf(id, sizeof id, "%05u", static_cast<unsigned>(worker_id));
  std::string key(kWorkerPrefix);
  key.append(pool).append("/").append(id);
  return key;
}

std::string encode_worker_slot(const WorkerSlotRecord& r) {
  return RecordWriter(1)
      .add("gen", r.generation)
      .add("state", r.released ? "released" : "leased")
      .add("granted_at_ms", r.granted_at_ms)
      .add("ttl_ms", r.ttl_ms)
      .add("expires_at_ms", r.expires_at_ms)
      .add("not_before_ms", r.not_before_ms)
      .add("high_water_ms", r.high_water_ms)
      .add("released_at_ms", r.released_at_ms)
      .finish("holder", r.holder);
}

std::optional<WorkerSlotRecord> decode_worker_slot(std::string_view text) {
  const auto rec = RecordView::parse(text, "holder");
  if (!rec || !rec->version_is(1)) return std::nullopt;
  const auto state = rec->get("state");
  const auto generation = rec->get_u64("gen");
  const auto holder = rec->get("holder");
  if (!state || (*state != "leased" && *state != "released") || !generation || !holder) {
    return std::nullopt;
  }
  WorkerSlotRecord r;
  r.generation = *generation;
  r.released = *state == "released";
  r.holder = std::string(*holder);
  for (auto [name, field] :
       {std::pair{"granted_at_ms", &r.granted_at_ms}, std::pair{"ttl_ms", &r.ttl_ms},
        std::pair{"expires_at_ms", &r.expires_at_ms}, std::pair{"not_before_ms", &r.not_before_ms},
        std::pair{"high_water_ms", &r.high_water_ms},
        std::pair{"released_at_ms", &r.released_at_ms}}) {
    const auto value = rec->get_i64(name);
    if (!value) return std::nullopt;
    *field = *value;
  }
  return r;
}

struct WorkerPoolService::Pool {
  WorkerPoolSpec spec;
  // Held from the decision until the write is submitted, so writes of one pool reach the
  // committer in the order their decisions were taken. Completions never take it.
  std::mutex order;
  mutable std::mutex mutex;             // guards `slots` and `held_until`
  std::vector<WorkerSlotRecord> slots;  // index = worker ID; at least spec.size entries
  // Per worker ID, on the monotonic clock (Clock::monotonic_ms): the lease is held at least until
  // then, whatever the wall clock reads. Set to one TTL after this process granted or extended a
  // lease, and to one full TTL after it read a lease from the store (granted by an earlier
  // process or another leader, whose clock may run ahead of or behind this one). A lease is held
  // while either its stored wall-clock expiry or this deadline is ahead: neither a wall clock
  // stepped forward here nor another clock's timestamps can end a lease early. 0: none.
  std::vector<std::int64_t> held_until;

  /// Whether worker ID `id` is held by a live lease at `now` (wall) and `mono` (monotonic).
  [[nodiscard]] bool held(std::uint32_t id, std::int64_t now, std::int64_t mono) const {
    const auto& slot = slots[id];
    if (slot.live(now)) return true;
    return slot.generation != 0 && !slot.released && id < held_until.size() &&
           mono < held_until[id];
  }
  /// The wall-clock time worker ID `id` is held until (what a refusal tells the client).
  [[nodiscard]] std::int64_t held_until_wall(std::uint32_t id, std::int64_t now,
                                             std::int64_t mono) const {
    const auto mono_end = id < held_until.size() ? held_until[id] : 0;
    return std::max(slots[id].expires_at_ms, now + std::max<std::int64_t>(0, mono_end - mono));
  }
  /// Holds `id` for `ttl_ms` from `mono` on the monotonic clock.
  void hold(std::uint32_t id, std::int64_t mono, std::int64_t ttl_ms) {
    if (id >= held_until.size()) held_until.resize(id + 1, 0);
    held_until[id] = mono + ttl_ms;
  }
};

// One slot's transition: what it was, what it becomes.
struct WorkerPoolService::Change {
  std::uint32_t worker_id = 0;
  WorkerSlotRecord before;
  WorkerSlotRecord after;
};

WorkerPoolService::WorkerPoolService(CounterStore& store, GroupCommitter& committer,
                                     const Clock& clock)
    : store_(store), committer_(committer), clock_(clock) {}

WorkerPoolService::~WorkerPoolService() = default;

DetailedResult<void> WorkerPoolService::add_pool(const WorkerPoolSpec& spec) {
  if (auto problem = validate(spec); !problem.empty()) {
    return Error{TicketErrc::kInvalidArgument, "worker pool '" + spec.name + "': " + problem};
  }
  if (find(spec.name) != nullptr) {
    return Error{TicketErrc::kAlreadyExists, "worker pool '" + spec.name + "' is defined twice"};
  }
  const std::string prefix = std::string(kWorkerPrefix) + spec.name + "/";
  auto rows = store_.scan(prefix);
  if (!rows) return rows.error();
  auto pool = std::make_unique<Pool>();
  pool->spec = spec;
  pool->slots.resize(spec.size);
  std::size_t live = 0;
  const auto now = clock_.now_unix_ms();
  const auto mono = clock_.monotonic_ms();
  for (const auto& [key, value] : *rows) {
    auto id = parse_int<std::uint32_t>(std::string_view(key).substr(prefix.size()));
    auto record = decode_worker_slot(value);
    if (!id || !record || *id >= kMaxWorkerPoolSize) {
      return Error{StorageErrc::kCorruption, "cannot decode worker slot record '" + key + "'"};
    }
    if (*id >= pool->slots.size()) pool->slots.resize(*id + 1);
    pool->slots[*id] = std::move(*record);
    const auto& slot = pool->slots[*id];
    if (slot.generation != 0 && !slot.released) {
      pool->hold(*id, mono, slot.ttl_ms);
    }
    live += pool->held(*id, now, mono) ? 1 : 0;
  }
  if (pool->slots.size() > spec.size) {
    log::warn("worker pool '" + spec.name + "': records of worker IDs at or above the size " +
                  std::to_string(spec.size) + " are kept but those IDs are not granted again",
              {{"pool", spec.name}});
  }
  log::info("worker pool '" + spec.name + "': " + std::to_string(spec.size) + " worker IDs, " +
                std::to_string(live) + " leased",
            {{"pool", spec.name}});
  std::unique_lock lock(pools_mutex_);
  if (!pools_.emplace(spec.name, std::move(pool)).second) {
    return Error{TicketErrc::kAlreadyExists, "worker pool '" + spec.name + "' is defined twice"};
  }
  return {};
}

WorkerPoolService::Pool* WorkerPoolService::find(std::string_view name) const {
  std::shared_lock lock(pools_mutex_);
  auto it = pools_.find(name);
  return it == pools_.end() ? nullptr : it->second.get();
}

void WorkerPoolService::acquire(std::string_view pool_name, std::string holder,
                                std::optional<std::int64_t> ttl_ms, PoolLeaseCallback done) {
  Pool* pool = find(pool_name);
  if (pool == nullptr) return done(unknown_pool(pool_name));
  const auto& spec = pool->spec;
  const std::int64_t ttl = ttl_ms.value_or(spec.default_ttl_ms);
  if (ttl < spec.min_ttl_ms || ttl > spec.max_ttl_ms) {
    return done(Error{TicketErrc::kInvalidArgument, "worker pool '" + spec.name +
                                                        "': the TTL must be " +
                                                        std::to_string(spec.min_ttl_ms) + ".." +
                                                        std::to_string(spec.max_ttl_ms) + " ms"});
  }
  if (holder.empty()) {
    return done(Error{TicketErrc::kInvalidArgument, "a lease needs a non-empty holder"});
  }
  std::unique_lock order(pool->order);
  std::unique_lock lock(pool->mutex);
  const auto now = clock_.now_unix_ms();
  const auto mono = clock_.monotonic_ms();
  std::optional<std::uint32_t> free;
  std::int64_t next_expiry = 0;
  for (std::uint32_t id = 0; id < spec.size; ++id) {
    if (!pool->held(id, now, mono)) {
      free = id;
      break;
    }
    const auto ends = pool->held_until_wall(id, now, mono);
    next_expiry = next_expiry == 0 ? ends : std::min(next_expiry, ends);
  }
  if (!free) {
    lock.unlock();
    order.unlock();
    return done(Error{WorkerErrc::kPoolFull,
                      "worker pool '" + spec.name + "': all " + std::to_string(spec.size) +
                          " worker IDs are leased; the first lease ends at " +
                          format_utc_ms(next_expiry) + " unless kept alive"});
  }
  Change change{*free, pool->slots[*free], {}};
  auto& after = change.after;
  after.generation = change.before.generation + 1;
  after.holder = std::move(holder);
  after.granted_at_ms = now;
  after.ttl_ms = ttl;
  after.expires_at_ms = now + ttl;
  after.not_before_ms = change.before.next_not_before_ms();
  pool->slots[*free] = after;
  pool->hold(*free, mono, ttl);
  lock.unlock();
  persist(*pool, std::move(change), std::move(done));
}

void WorkerPoolService::keepalive(std::string_view pool, std::string_view lease_id,
                                  std::optional<std::int64_t> high_water_ms,
                                  PoolLeaseCallback done) {
  change_lease(pool, lease_id, high_water_ms, Op::kKeepalive, std::move(done));
}

void WorkerPoolService::release(std::string_view pool, std::string_view lease_id,
                                std::optional<std::int64_t> high_water_ms, PoolLeaseCallback done) {
  change_lease(pool, lease_id, high_water_ms, Op::kRelease, std::move(done));
}

void WorkerPoolService::change_lease(std::string_view pool_name, std::string_view lease_id,
                                     std::optional<std::int64_t> high_water_ms, Op op,
                                     PoolLeaseCallback done) {
  Pool* pool = find(pool_name);
  if (pool == nullptr) return done(unknown_pool(pool_name));
  const std::string where =
      "lease '" + std::string(lease_id) + "' of worker pool '" + pool->spec.name + "'";
  const auto parsed = parse_lease_id(lease_id);
  std::unique_lock order(pool->order);
  std::unique_lock lock(pool->mutex);
  const auto now = clock_.now_unix_ms();
  auto refuse = [&](Error e) {
    lock.unlock();
    order.unlock();
    done(std::move(e));
  };
  if (!parsed || parsed->first >= pool->slots.size() ||
      pool->slots[parsed->first].generation != parsed->second) {
    return refuse(Error{WorkerErrc::kUnknownLease, where + " does not exist"});
  }
  const auto& slot = pool->slots[parsed->first];
  if (slot.released) {
    return refuse(Error{WorkerErrc::kLeaseReleased,
                        where + " was released at " + format_utc_ms(slot.released_at_ms)});
  }
  const auto mono = clock_.monotonic_ms();
  if (!pool->held(parsed->first, now, mono)) {
    return refuse(Error{WorkerErrc::kLeaseExpired,
                        where + " expired at " + format_utc_ms(slot.expires_at_ms) +
                            "; acquire a new lease (and wait past its not_before_ms)"});
  }
  if (high_water_ms && (*high_water_ms < 0 || *high_water_ms > now + kMaxHighWaterAheadMs)) {
    return refuse(Error{TicketErrc::kInvalidArgument,
                        "high_water_ms " + std::to_string(*high_water_ms) +
                            " is negative or more than a day ahead of the server clock (" +
                            std::to_string(now) + ")"});
  }
  Change change{parsed->first, slot, slot};
  auto& after = change.after;
  after.high_water_ms = std::max(slot.high_water_ms, high_water_ms.value_or(0));
  if (op == Op::kKeepalive) {
    // On this process's clock from now on; a stored lease held longer keeps that hold.
    after.expires_at_ms = now + slot.ttl_ms;
    pool->hold(parsed->first, mono, slot.ttl_ms);
  } else {
    after.released = true;
    after.released_at_ms = now;
  }
  pool->slots[parsed->first] = after;
  lock.unlock();
  persist(*pool, std::move(change), std::move(done));
}

void WorkerPoolService::persist(Pool& pool, Change change, PoolLeaseCallback done) {
  std::vector<Mutation> mutations;
  mutations.push_back(Mutation{worker_slot_key(pool.spec.name, change.worker_id),
                               encode_worker_slot(change.after)});
  committer_.submit(std::move(mutations), [&pool, change = std::move(change),
                                           done = std::move(done)](const DetailedResult<void>& r) {
    if (!r) {
      // Undo, unless a later operation already moved the slot on (its own write decides then).
      {
        std::lock_guard lock(pool.mutex);
        auto& slot = pool.slots[change.worker_id];
        // The hold taken with the change stays: a lease held a little longer is safe.
        if (slot == change.after) slot = change.before;
      }
      return done(r.error());
    }
    PoolLease lease = lease_view(pool.spec.name, change.worker_id, change.after);
    log_lease_change(change.before, change.after, lease);
    done(std::move(lease));
  });
}

std::optional<WorkerPoolSpec> WorkerPoolService::spec(std::string_view name) const {
  const Pool* pool = find(name);
  if (pool == nullptr) return std::nullopt;
  return pool->spec;
}

std::optional<WorkerPoolStatus> WorkerPoolService::status(std::string_view name) const {
  const Pool* pool = find(name);
  if (pool == nullptr) return std::nullopt;
  WorkerPoolStatus out{pool->spec, {}};
  std::lock_guard lock(pool->mutex);
  const auto now = clock_.now_unix_ms();
  const auto mono = clock_.monotonic_ms();
  for (std::uint32_t id = 0; id < pool->slots.size(); ++id) {
    if (pool->held(id, now, mono))
      out.live.push_back(lease_view(pool->spec.name, id, pool->slots[id]));
  }
  return out;
}

std::vector<std::string> WorkerPoolService::pool_names() const {
  std::vector<std::string> out;
  std::shared_lock lock(pools_mutex_);
  for (const auto& [name, _] : pools_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

template <class Op>
DetailedResult<PoolLease> wait_for(Op op) {
  std::promise<DetailedResult<PoolLease>> p;
  auto f = p.get_future();
  op([&p](DetailedResult<PoolLease> r) { p.set_value(std::move(r)); });
  return f.get();
}

}  // namespace

DetailedResult<PoolLease> acquire_and_wait(WorkerPoolService& service, std::string_view pool,
                                           std::string holder, std::optional<std::int64_t> ttl_ms) {
  return wait_for([&](PoolLeaseCallback done) {
    service.acquire(pool, std::move(holder), ttl_ms, std::move(done));
  });
}

DetailedResult<PoolLease> keepalive_and_wait(WorkerPoolService& service, std::string_view pool,
                                             std::string_view lease_id,
                                             std::optional<std::int64_t> high_water_ms) {
  return wait_for([&](PoolLeaseCallback done) {
    service.keepalive(pool, lease_id, high_water_ms, std::move(done));
  });
}

DetailedResult<PoolLease> release_and_wait(WorkerPoolService& service, std::string_view pool,
                                           std::string_view lease_id,
                                           std::optional<std::int64_t> high_water_ms) {
  return wait_for([&](PoolLeaseCallback done) {
    service.release(pool, lease_id, high_water_ms, std::move(done));
  });
}

}  // namespace ticketd
