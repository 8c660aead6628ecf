// The CounterStore on etcd: every commit one transaction fenced on the leader key.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "storage/counter_store.h"
#include "storage/etcd/etcd_client.h"

namespace ticketd::etcd {

/// Where one group of ticketd instances keeps its state in etcd: `<prefix>leader` holds the
/// leader's addresses (attached to its lease), `<prefix>data/<key>` the engine's keys.
struct EtcdLayout {
  std::string prefix;  // ends with '/'
  [[nodiscard]] std::string leader_key() const { return prefix + "leader"; }
  [[nodiscard]] std::string data_prefix() const { return prefix + "data/"; }
};

/// etcd refuses a transaction that names one key twice, and the group committer may batch two
/// writes of one key (two callers extending one sequence): the last write of each key wins, as
/// it would in a RocksDB WriteBatch.
[[nodiscard]] std::vector<Mutation> last_write_per_key(std::span<const Mutation> mutations);

/// The fenced commit: if the leader key still has the create revision this instance made it
/// with (nobody else won since: a new leader's key always has a newer create revision), apply
/// every mutation under the data prefix; otherwise change nothing. `leader_revision` must be
/// positive: 0 would mean "the leader key is absent", which must never authorize a write.
[[nodiscard]] TxnRequest make_fenced_commit(const EtcdLayout& layout, std::int64_t leader_revision,
                                            std::span<const Mutation> mutations);

/// Implements CounterStore over an EtcdClient. Reads are linearizable range requests; commits
/// are fenced transactions (make_fenced_commit), acknowledged by a quorum when they return, so
/// they are as durable as the cluster. A failed compare is StorageErrc::kFenced: another
/// instance leads, and this one must stop serving. Before set_fence() every commit is kFenced.
///
/// Network failures and etcd refusals are StorageErrc::kIo carrying etcd's message. A commit
/// that times out may have been applied; the engine then issues nothing below the ceiling it
/// tried to write, so the worst case is a gap, never a duplicate.
/// Thread safety: all members may be called concurrently (the client serializes calls).
class EtcdCounterStore final : public CounterStore {
 public:
  EtcdCounterStore(EtcdClient& client, EtcdLayout layout);

  /// Authorizes commits while the leader key keeps `leader_revision` as its create revision.
  void set_fence(std::int64_t leader_revision);

  [[nodiscard]] DetailedResult<std::optional<std::string>> get(std::string_view key) override;
  [[nodiscard]] DetailedResult<KeyValues> scan(std::string_view prefix) override;
  /// Reads the whole prefix and keeps the last `limit` keys: the JSON client has no sorted
  /// range yet. Fine for the small prefixes the engine scans this way.
  [[nodiscard]] DetailedResult<KeyValues> scan_first(std::string_view prefix,
                                                     std::size_t limit) override;
  [[nodiscard]] DetailedResult<KeyValues> scan_last(std::string_view prefix,
                                                    std::size_t limit) override;
  [[nodiscard]] DetailedResult<void> commit(std::span<const Mutation> mutations) override;

 private:
  EtcdClient& client_;
  const EtcdLayout layout_;
  std::atomic<std::int64_t> fence_revision_{0};
};

}  // namespace ticketd::etcd
