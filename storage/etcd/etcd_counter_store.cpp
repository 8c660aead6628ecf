#include "storage/etcd/etcd_counter_store.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace ticketd::etcd {
namespace {

Error io_error(const Error& e) { return Error{StorageErrc::kIo, e.message}; }

}  // namespace

std::vector<Mutation> last_write_per_key(std::span<const Mutation> mutations) {
  std::unordered_map<std::string_view, std::size_t> last;
  for (std::size_t i = 0; i < mutations.size(); ++i) last[mutations[i].key] = i;
  std::vector<Mutation> out;
  out.reserve(last.size());
  for (std::size_t i = 0; i < mutations.size(); ++i) {
    if (last[mutations[i].key] == i) out.push_back(mutations[i]);
  }
  return out;
}

TxnRequest make_fenced_commit(const EtcdLayout& layout, std::int64_t leader_revision,
                              std::span<const Mutation> mutations) {
  TxnRequest txn;
  txn.compare.push_back(
      Compare::create_revision(layout.leader_key(), CompareResult::kEqual, leader_revision));
  const std::string data = layout.data_prefix();
  for (auto& m : last_write_per_key(mutations)) {
    if (m.value) {
      txn.success.emplace_back(PutRequest{.key = data + m.key, .value = std::move(*m.value)});
    } else {
      txn.success.emplace_back(DeleteRangeRequest{.key = data + m.key});
    }
  }
  return txn;
}

EtcdCounterStore::EtcdCounterStore(EtcdClient& client, EtcdLayout layout)
    : client_(client), layout_(std::move(layout)) {}

void EtcdCounterStore::set_fence(std::int64_t leader_revision) {
  fence_revision_.store(leader_revision, std::memory_order_release);
}

DetailedResult<std::optional<std::string>> EtcdCounterStore::get(std::string_view key) {
  auto r = client_.get(layout_.data_prefix() + std::string(key));
  if (!r) return io_error(r.error());
  if (r->kvs.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(r->kvs.front().value));
}

DetailedResult<KeyValues> EtcdCounterStore::scan(std::string_view prefix) {
  const std::string data = layout_.data_prefix();
  auto r = client_.get_prefix(data + std::string(prefix));
  if (!r) return io_error(r.error());
  KeyValues out;
  out.reserve(r->kvs.size());
  for (auto& kv : r->kvs) out.emplace_back(kv.key.substr(data.size()), std::move(kv.value));
  return out;
}

DetailedResult<KeyValues> EtcdCounterStore::scan_first(std::string_view prefix, std::size_t limit) {
  if (limit == 0) return KeyValues{};
  // One range request in key order, limited: etcd returns only what is asked for.
  const std::string data = layout_.data_prefix();
  RangeRequest request;
  request.key = data + std::string(prefix);
  request.range_end = prefix_end(request.key);
  request.limit = static_cast<std::int64_t>(limit);
  auto r = client_.range(request);
  if (!r) return io_error(r.error());
  KeyValues out;
  out.reserve(r->kvs.size());
  for (auto& kv : r->kvs) out.emplace_back(kv.key.substr(data.size()), std::move(kv.value));
  return out;
}

DetailedResult<KeyValues> EtcdCounterStore::scan_last(std::string_view prefix, std::size_t limit) {
  if (limit == 0) return KeyValues{};
  // One range request sorted by key, descending, limited: etcd returns only what is asked for.
  const std::string data = layout_.data_prefix();
  RangeRequest request;
  request.key = data + std::string(prefix);
  request.range_end = prefix_end(request.key);
  request.limit = static_cast<std::int64_t>(limit);
  request.descending = true;
  auto r = client_.range(request);
  if (!r) return io_error(r.error());
  KeyValues out;
  out.reserve(r->kvs.size());
  for (auto& kv : r->kvs) out.emplace_back(kv.key.substr(data.size()), std::move(kv.value));
  return out;
}

DetailedResult<void> EtcdCounterStore::commit(std::span<const Mutation> mutations) {
  const std::int64_t fence = fence_revision_.load(std::memory_order_acquire);
  if (fence <= 0) {
    return Error{StorageErrc::kFenced, "etcd store: this instance is not the elected leader"};
  }
  if (mutations.empty()) return {};
  auto r = client_.txn(make_fenced_commit(layout_, fence, mutations));
  if (!r) {
    // A deadline passed or the connection broke after the transaction was sent: etcd may have
    // applied it. Whoever is told must not read this as "nothing happened" (the nemesis suite
    // found a client that did). A transaction that never left (no endpoint reachable) is a
    // plain failure.
    if (r.error().code == EtcdErrc::kOutcomeUnknown) {
      return Error{StorageErrc::kOutcomeUnknown,
                   r.error().message + "; the write's outcome is unknown: it may have applied"};
    }
    return io_error(r.error());
  }
  if (!r->succeeded) {
    return Error{StorageErrc::kFenced, "etcd store: leader key " + layout_.leader_key() +
                                           " is no longer ours (created at revision " +
                                           std::to_string(fence) + "): another instance leads"};
  }
  return {};
}

}  // namespace ticketd::etcd
