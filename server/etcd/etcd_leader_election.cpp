#include "server/etcd/etcd_leader_election.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "server/base/log.h"

namespace ticketd {

std::string encode_leader_value(const InstanceAddress& a) {
  return "mysql=" + a.mysql + " http=" + a.http;
}

InstanceAddress decode_leader_value(std::string_view value) {
  InstanceAddress a;
  while (!value.empty()) {
    const auto space = value.find(' ');
    const auto field = value.substr(0, space);
    value = space == std::string_view::npos ? std::string_view{} : value.substr(space + 1);
    if (field.starts_with("mysql=")) a.mysql = std::string(field.substr(6));
    if (field.starts_with("http=")) a.http = std::string(field.substr(5));
  }
  return a;
}

EtcdLeaderElection::EtcdLeaderElection(etcd::EtcdClient& client, LeaderElectionOptions options,
                                       ServingGate& gate, const Clock& clock, Elected on_elected,
                                       Deposed on_deposed)
    : client_(client),
      options_(std::move(options)),
      gate_(gate),
      clock_(clock),
      on_elected_(std::move(on_elected)),
      on_deposed_(std::move(on_deposed)) {}

EtcdLeaderElection::~EtcdLeaderElection() { stop(); }

void EtcdLeaderElection::start() {
  thread_ = std::thread([this] { run(); });
}

void EtcdLeaderElection::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (watch_ != nullptr) watch_->cancel();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool EtcdLeaderElection::wait_for(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, d, [this] { return stopping_; });
}

std::optional<EtcdLeaderElection::Won> EtcdLeaderElection::campaign() {
  namespace e = etcd;
  observed_revision_ = 0;
  auto current = client_.get(options_.leader_key);
  if (!current) {
    log::warn("leader election: " + current.error().message);
    return std::nullopt;
  }
  if (!current->kvs.empty()) {
    const auto& kv = current->kvs.front();
    if (lease_id_ != 0 && kv.lease == lease_id_) {
      // An earlier campaign whose reply was lost did win. Its lease may be close to expiry:
      // one keepalive proves it alive before serving.
      const std::int64_t sent = clock_.monotonic_ms();
      if (client_.keepalive(lease_id_)) return Won{kv.create_revision, sent};
    }
    gate_.follow(decode_leader_value(kv.value), kv.create_revision);
    observed_revision_ = current->header.revision;
    return std::nullopt;
  }
  // The key is absent: a fresh lease (an older one may have expired unattended), then the
  // create-if-absent transaction.
  const std::int64_t sent = clock_.monotonic_ms();
  auto lease = client_.grant_lease(options_.ttl_s);
  if (!lease) {
    log::warn("leader election: " + lease.error().message);
    return std::nullopt;
  }
  lease_id_ = lease->id;
  e::TxnRequest txn;
  txn.compare.push_back(e::Compare::absent(options_.leader_key));
  txn.success.emplace_back(e::PutRequest{
      .key = options_.leader_key, .value = encode_leader_value(options_.self), .lease = lease_id_});
  txn.failure.emplace_back(e::RangeRequest{.key = options_.leader_key});
  auto r = client_.txn(txn);
  if (!r) {
    log::warn("leader election: " + r.error().message);
    return std::nullopt;
  }
  if (r->succeeded) {
    // The put ran at the transaction's revision: the key's create revision, our term.
    log::info("leader election: elected at revision " + std::to_string(r->header.revision),
              {{"lease", lease_id_}});
    return Won{r->header.revision, sent};
  }
  // Someone else won in between: our lease is useless, let it go.
  (void)client_.revoke(lease_id_);  // best effort: it expires on its own anyway
  lease_id_ = 0;
  const auto* range =
      r->responses.empty() ? nullptr : std::get_if<e::RangeResponse>(&r->responses[0]);
  if (range != nullptr && !range->kvs.empty()) {
    gate_.follow(decode_leader_value(range->kvs.front().value), range->kvs.front().create_revision);
  }
  observed_revision_ = r->header.revision;
  return std::nullopt;
}

bool EtcdLeaderElection::retry_later() {
  backoff_ = std::clamp(backoff_ * 2, std::chrono::milliseconds(50), options_.retry_max);
  return wait_for(backoff_);
}

bool EtcdLeaderElection::follow() {
  if (observed_revision_ == 0) return retry_later();
  auto opened = client_.watch(etcd::WatchCreateRequest{.key = options_.leader_key,
                                                       .start_revision = observed_revision_ + 1});
  if (!opened) {
    log::warn("leader election: watch: " + opened.error().message);
    return retry_later();
  }
  std::unique_ptr<etcd::EtcdWatch> watch = std::move(*opened);
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    watch_ = watch.get();
  }
  struct Unregister {
    EtcdLeaderElection& self;
    ~Unregister() {
      std::lock_guard lock(self.mutex_);
      self.watch_ = nullptr;
    }
  } unregister{*this};
  for (;;) {
    auto r = watch->next(options_.watch_idle);
    if (!r) {
      if (r.error().code == etcd::EtcdErrc::kCancelled) return false;
      if (r.error().code == etcd::EtcdErrc::kTimeout) {
        // Quiet: the leader is alive (or this member is cut off). Read the key again. The
        // stream held for a whole watch_idle, so etcd is healthy: the backoff starts over.
        log::debug("leader election: " + r.error().message);
        backoff_ = std::chrono::milliseconds(0);
        return true;
      }
      log::warn("leader election: watch broke: " + r.error().message);
      return retry_later();
    }
    // Not reset on `created`: a stream that etcd or a proxy ends right after creating it
    // must not make a range and a watch every 50 ms.
    if (!r->events.empty()) backoff_ = std::chrono::milliseconds(0);
    if (r->canceled) {
      // Compacted past our revision, or etcd ended the watch: the campaign reads the key anew.
      log::warn("leader election: etcd canceled the watch" +
                (r->cancel_reason.empty() ? std::string() : ": " + r->cancel_reason));
      return true;
    }
    for (const auto& event : r->events) {
      if (event.type == etcd::WatchEvent::Type::kDelete) {
        log::info("leader election: the leader key was deleted at revision " +
                  std::to_string(event.kv.mod_revision) + ": campaigning");
        return true;
      }
      gate_.follow(decode_leader_value(event.kv.value), event.kv.create_revision);
    }
  }
}

bool EtcdLeaderElection::keep_leading() {
  const auto interval = std::chrono::milliseconds(options_.ttl_s * 1000 / 3);
  const auto retry =
      std::chrono::milliseconds(std::max<std::int64_t>(options_.ttl_s * 1000 / 20, 50));
  auto next = interval;
  for (;;) {
    if (!wait_for(next)) return true;
    const std::int64_t sent = clock_.monotonic_ms();
    auto r = client_.keepalive(lease_id_);
    if (r) {
      gate_.renewed(sent);
      next = interval;
      continue;
    }
    if (r.error().code == etcd::EtcdErrc::kLeaseNotFound) {
      log::warn("leader election: lease lost: " + r.error().message, {{"lease", lease_id_}});
      return false;
    }
    // etcd unreachable or without quorum: the lease cannot expire without a quorum either.
    // The gate stops serving on its own once the last renewal is too old; retry soon.
    log::warn("leader election: keepalive failed: " + r.error().message, {{"lease", lease_id_}});
    next = retry;
  }
}

void EtcdLeaderElection::run() {
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    auto won = campaign();
    if (!won) {
      if (!follow()) break;
      continue;
    }
    if (auto r = on_elected_(won->revision); !r) {
      gate_.depose();
      on_deposed_("loading the engine after winning failed: " + r.error().message);
      break;
    }
    // Only now, with every sequence loaded, does the gate open. The renewal time is the one
    // proven before loading, so a load slower than the lease leaves the gate shut until the
    // next keepalive (or the lease turns out lost).
    gate_.lead(won->revision, won->renewal_sent_ms);
    if (keep_leading()) break;  // stopping
    gate_.depose();
    on_deposed_("the leader lease expired: another instance may lead");
    return;
  }
  if (lease_id_ != 0 && gate_.view().role == Role::kLeader) {
    // Resign: the key goes with the lease; a standby's watch sees the delete and it campaigns.
    auto r = client_.revoke(lease_id_);
    if (!r) {
      log::warn("leader election: revoke on stop: " + r.error().message, {{"lease", lease_id_}});
    }
  }
}

}  // namespace ticketd
