#include "server/etcd/etcd_worker_lease.h"

#include <algorithm>
#include <set>
#include <utility>

#include "server/base/log.h"
#include "server/base/parse_int.h"
#include "server/core/snowflake_generator.h"
#include "storage/counter_store.h"

namespace ticketd {
namespace {

using steady = std::chrono::steady_clock;

std::int64_t micros_since(steady::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - start).count();
}

}  // namespace

EtcdWorkerLease::EtcdWorkerLease(etcd::EtcdClient& client, EtcdWorkerLeaseOptions options,
                                 const Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {}

EtcdWorkerLease::~EtcdWorkerLease() { stop(); }

std::string EtcdWorkerLease::worker_key(std::uint64_t id) const {
  return options_.prefix + std::to_string(id);
}

std::string EtcdWorkerLease::mark_key(std::uint64_t id) const { return worker_key(id) + "/hwm"; }

WorkerLeaseState EtcdWorkerLease::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

EtcdWorkerLeaseStats EtcdWorkerLease::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void EtcdWorkerLease::revoke_quietly(std::int64_t lease_id) {
  if (lease_id == 0) return;
  // Best effort: an unrevoked lease just expires after its TTL.
  if (auto r = client_.revoke(lease_id); !r && r.error().code != etcd::EtcdErrc::kLeaseNotFound) {
    log::debug("etcd worker lease: revoke failed: " + r.error().message, {{"lease", lease_id}});
  }
}

DetailedResult<bool> EtcdWorkerLease::write_mark(std::uint64_t id, std::int64_t create_revision,
                                                 std::int64_t mark_unix_ms) {
  etcd::TxnRequest t;
  t.compare.push_back(
      etcd::Compare::create_revision(worker_key(id), etcd::CompareResult::kEqual, create_revision));
  t.success.emplace_back(etcd::PutRequest{
      .key = mark_key(id),
      .value = encode_hwm(SnowflakeHwmRecord{mark_unix_ms, clock_.now_unix_ms()})});
  auto r = client_.txn(t);
  if (!r) return r.error();
  return r->succeeded;
}

DetailedResult<std::set<std::uint64_t>> EtcdWorkerLease::taken_worker_ids() {
  auto listed = client_.range(etcd::RangeRequest{
      .key = options_.prefix, .range_end = etcd::prefix_end(options_.prefix), .keys_only = true});
  if (!listed) return listed.error();
  std::set<std::uint64_t> taken;
  for (const auto& kv : listed->kvs) {
    const std::string_view rest = std::string_view(kv.key).substr(options_.prefix.size());
    if (const auto id = parse_u64(rest)) taken.insert(*id);
  }
  return taken;
}

DetailedResult<etcd::TxnResponse> EtcdWorkerLease::claim_txn(std::uint64_t id,
                                                             std::int64_t lease_id) {
  etcd::TxnRequest t;
  t.compare.push_back(etcd::Compare::absent(worker_key(id)));
  t.success.emplace_back(
      etcd::PutRequest{.key = worker_key(id), .value = options_.owner, .lease = lease_id});
  t.success.emplace_back(etcd::RangeRequest{.key = mark_key(id)});
  return client_.txn(t);
}

DetailedResult<std::int64_t> EtcdWorkerLease::decode_previous_mark(
    std::uint64_t id, const etcd::TxnResponse& claimed) const {
  std::int64_t previous_mark = 0;
  if (claimed.responses.size() == 2) {
    if (const auto* range = std::get_if<etcd::RangeResponse>(&claimed.responses[1]);
        range != nullptr && !range->kvs.empty()) {
      auto decoded = decode_hwm(range->kvs.front().value);
      if (!decoded) {
        return Error{StorageErrc::kCorruption, "etcd worker lease: " + mark_key(id) +
                                                   " does not decode: '" +
                                                   range->kvs.front().value + "'"};
      }
      previous_mark = decoded->hwm_unix_ms;
    }
  }
  return previous_mark;
}

std::int64_t EtcdWorkerLease::publish_claim(const WorkerClaim& c, std::int64_t t0,
                                            std::chrono::steady_clock::time_point started) {
  std::lock_guard lock(mutex_);
  lease_id_ = c.lease_id;
  create_revision_ = c.create_revision;
  granted_ttl_ms_ = c.ttl_ms;
  state_.held = true;
  ++state_.generation;
  state_.worker_id = c.id;
  state_.renewed_at_unix_ms = t0;
  state_.valid_until_unix_ms = t0 + c.ttl_ms - options_.margin_ms;
  state_.not_before_unix_ms = c.previous_mark;
  state_.issue_until_unix_ms = c.mark;
  ++stats_.claims;
  stats_.last_claim_us = micros_since(started);
  return stats_.last_claim_us;
}

void EtcdWorkerLease::log_claim(const WorkerClaim& c, std::int64_t took_us) const {
  log::info("etcd worker lease: claimed worker ID " + std::to_string(c.id) + " (" +
                worker_key(c.id) + ", lease " + std::to_string(c.lease_id) + ", TTL " +
                std::to_string(c.ttl_ms / 1000) + " s" +
                (c.previous_mark > 0 ? ", previous mark " + format_utc_ms(c.previous_mark) : "") +
                ") at " + client_.current_endpoint() + " in " + std::to_string(took_us / 1000) +
                "." + std::to_string(took_us % 1000 / 100) + " ms",
            {{"lease", c.lease_id}, {"worker_id", c.id}});
}

DetailedResult<void> EtcdWorkerLease::claim() {
  const auto started = steady::now();
  // Taken before the grant: etcd starts the TTL when it grants, so the window ends no later
  // than etcd's.
  const std::int64_t t0 = clock_.now_unix_ms();
  auto fail = [this](Error e) -> DetailedResult<void> {
    std::lock_guard lock(mutex_);
    ++stats_.claim_failures;
    return e;
  };
  auto grant = client_.grant_lease(options_.ttl_s);
  if (!grant) return fail(grant.error());
  const std::int64_t lease_id = grant->id;
  const std::int64_t ttl_ms = grant->ttl_s * 1000;

  auto taken = taken_worker_ids();
  if (!taken) {
    revoke_quietly(lease_id);
    return fail(taken.error());
  }

  const std::uint64_t max_id = (std::uint64_t{1} << options_.worker_bits) - 1;
  for (std::uint64_t id = 0; id <= max_id; ++id) {
    if (taken->contains(id)) continue;
    auto r = claim_txn(id, lease_id);
    if (!r) {
      // The outcome is unknown: revoking the lease deletes the key if the put did land.
      revoke_quietly(lease_id);
      return fail(r.error());
    }
    if (!r->succeeded) continue;  // another process claimed it since the listing
    const std::int64_t create_revision = r->header.revision;
    auto previous_mark = decode_previous_mark(id, *r);
    if (!previous_mark) {
      revoke_quietly(lease_id);
      return fail(previous_mark.error());
    }
    // IDs of this holder may carry times up to the new mark; the next holder waits past it.
    const std::int64_t mark = std::max(*previous_mark, clock_.now_unix_ms() + ttl_ms);
    auto written = write_mark(id, create_revision, mark);
    if (!written || !*written) {
      revoke_quietly(lease_id);
      return fail(written
                      ? Error{StorageErrc::kFenced, "etcd worker lease: lost worker key " +
                                                        worker_key(id) + " right after claiming"}
                      : written.error());
    }
    const WorkerClaim claimed{.id = id,
                              .lease_id = lease_id,
                              .ttl_ms = ttl_ms,
                              .create_revision = create_revision,
                              .previous_mark = *previous_mark,
                              .mark = mark};
    const std::int64_t took_us = publish_claim(claimed, t0, started);
    log_claim(claimed, took_us);
    return {};
  }
  revoke_quietly(lease_id);
  return fail(Error{StorageErrc::kFenced, "etcd worker lease: all " + std::to_string(max_id + 1) +
                                              " worker IDs under " + options_.prefix +
                                              " are taken"});
}

DetailedResult<void> EtcdWorkerLease::claim_within(std::chrono::milliseconds budget) {
  const auto deadline = steady::now() + budget;
  for (;;) {
    auto r = claim();
    if (r || steady::now() + std::chrono::milliseconds(200) >= deadline) return r;
    log::warn(r.error().message + "; retrying");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void EtcdWorkerLease::drop_locked(const std::string& why) {
  if (state_.held) {
    ++stats_.losses;
    log::warn(
        "etcd worker lease: worker ID " + std::to_string(state_.worker_id) + " dropped: " + why,
        {{"lease", lease_id_}, {"worker_id", state_.worker_id}});
  }
  state_.held = false;
  lease_id_ = 0;
  create_revision_ = 0;
}

DetailedResult<void> EtcdWorkerLease::renew() {
  const auto started = steady::now();
  std::int64_t lease_id = 0;
  std::int64_t create_revision = 0;
  std::uint64_t id = 0;
  std::int64_t previous_mark = 0;
  {
    std::lock_guard lock(mutex_);
    if (!state_.held) return Error{etcd::EtcdErrc::kLeaseNotFound, "no lease held"};
    lease_id = lease_id_;
    create_revision = create_revision_;
    id = state_.worker_id;
    previous_mark = state_.issue_until_unix_ms;
  }
  auto fail = [&](Error e, bool lost) -> DetailedResult<void> {
    std::lock_guard lock(mutex_);
    ++stats_.renewal_failures;
    // Only drop the lease this call renewed (a concurrent claim may have replaced it).
    if (lost && lease_id_ == lease_id) drop_locked(e.message);
    return e;
  };
  const std::int64_t t0 = clock_.now_unix_ms();
  auto alive = client_.keepalive(lease_id);
  if (!alive) return fail(alive.error(), alive.error().code == etcd::EtcdErrc::kLeaseNotFound);
  const std::int64_t ttl_ms = alive->ttl_s * 1000;
  const std::int64_t mark = std::max(previous_mark, clock_.now_unix_ms() + ttl_ms);
  auto written = write_mark(id, create_revision, mark);
  if (written && !*written) {
    revoke_quietly(lease_id);
    return fail(Error{StorageErrc::kFenced, "worker key " + worker_key(id) + " is gone"}, true);
  }
  std::lock_guard lock(mutex_);
  if (lease_id_ != lease_id) return {};
  state_.renewed_at_unix_ms = t0;
  state_.valid_until_unix_ms = t0 + ttl_ms - options_.margin_ms;
  granted_ttl_ms_ = ttl_ms;
  if (!written) {
    // The lease is renewed but the mark is not: the generator keeps issuing up to the old mark
    // (a TTL past the previous renewal) and answers kRetryLater past it until a write succeeds.
    ++stats_.renewal_failures;
    return written.error();
  }
  state_.issue_until_unix_ms = mark;
  ++stats_.renewals;
  stats_.last_renewal_us = micros_since(started);
  return {};
}

void EtcdWorkerLease::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void EtcdWorkerLease::run() {
  const auto interval = std::chrono::milliseconds(options_.renew_interval_ms);
  const auto retry = std::min(interval, std::chrono::milliseconds(500));
  bool failing = false;  // log the first failure of a run of them, and the recovery
  for (;;) {
    const auto started = steady::now();
    bool held = false;
    std::int64_t lease = 0;
    std::uint64_t worker = 0;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      held = state_.held;
      lease = lease_id_;
      worker = state_.worker_id;
    }
    auto r = held ? renew() : claim();
    bool now_held = false;
    {
      std::lock_guard lock(mutex_);
      now_held = state_.held;
    }
    if (!r && !failing && held) {
      log::warn("etcd worker lease: renewal failed: " + r.error().message,
                {{"lease", lease}, {"worker_id", worker}});
    } else if (!r && !failing) {
      log::warn("etcd worker lease: claim failed: " + r.error().message);
    } else if (r && failing) {
      log::info("etcd worker lease: etcd answers again");
    }
    failing = !r;
    // A lost lease is re-claimed at once; a failure is retried sooner than a renewal.
    auto next = started + (held && !now_held ? std::chrono::milliseconds(0) : r ? interval : retry);
    std::unique_lock lock(mutex_);
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

void EtcdWorkerLease::stop() {
  std::int64_t lease_id = 0;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(mutex_);
    lease_id = lease_id_;
    state_.held = false;
    lease_id_ = 0;
  }
  revoke_quietly(lease_id);
}

}  // namespace ticketd
