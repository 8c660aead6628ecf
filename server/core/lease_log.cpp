#include "server/core/lease_log.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <utility>

#include "server/base/log.h"
#include "server/base/record_codec.h"

namespace ticketd {

namespace {
// A lease id: the block's first value in 20 digits (every uint64 fits), zero-padded.
constexpr std::size_t kLeaseIdDigits = 20;
}  // namespace

std::string lease_key(std::string_view sequence, std::string_view lease_id) {
  std::string key(kLeasePrefix);
  key.append(sequence).append("/").append(lease_id);
  return key;
}

std::string encode_lease(const Lease& lease) {
  // No version field: lease records predate it and stay byte-identical.
  return RecordWriter()
      .add("first", lease.block.first)
      .add("step", lease.block.step)
      .add("count", lease.block.count)
      .add("granted_at_ms", lease.granted_at_ms)
      .finish("holder", lease.holder);
}

std::optional<Lease> decode_lease(std::string_view key, std::string_view text) {
  if (!key.starts_with(kLeasePrefix)) return std::nullopt;
  key.remove_prefix(kLeasePrefix.size());
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto r = RecordView::parse(text, "holder");
  if (!r) return std::nullopt;
  auto first = r->get_u64("first");
  auto step = r->get_u64("step");
  auto count = r->get_u64("count");
  auto granted = r->get_i64("granted_at_ms");
  auto holder = r->get("holder");
  if (!first || !step || !count || !granted || !holder || *granted < 0) return std::nullopt;
  Lease lease;
  lease.sequence = std::string(key.substr(0, slash));
  lease.lease_id = std::string(key.substr(slash + 1));
  lease.block = Block{*first, *step, *count};
  lease.granted_at_ms = *granted;
  lease.holder = std::string(*holder);
  return lease;
}

DetailedResult<std::size_t> LeaseLog::prune(const LeaseRetention& retention, std::size_t batch) {
  std::vector<Mutation> deletes;
  const std::int64_t cutoff_ms = clock_.now_unix_ms() - retention.max_age_ms;
  for (const auto& info : tickets_.list()) {
    const std::string prefix = lease_key(info.spec.name, "");
    if (retention.keep_count != 0) {
      // Newest first: whatever lies past the first keep_count is older than all of them.
      auto newest = store_.scan_last(prefix, retention.keep_count + batch);
      if (!newest) return newest.error();
      for (std::size_t i = retention.keep_count; i < newest->size(); ++i) {
        deletes.push_back(Mutation{(*newest)[i].first, std::nullopt});
      }
      continue;
    }
    auto oldest = store_.scan_first(prefix, batch);
    if (!oldest) return oldest.error();
    for (const auto& [key, value] : *oldest) {
      const auto lease = decode_lease(key, value);
      // Keys sort by grant time: the first young (or unreadable) record ends the sweep.
      if (!lease || lease->granted_at_ms >= cutoff_ms) break;
      deletes.push_back(Mutation{key, std::nullopt});
    }
  }
  if (deletes.empty()) return std::size_t{0};
  if (auto r = store_.commit(deletes); !r) return r.error();
  return deletes.size();
}

LeaseLog::LeaseLog(TicketService& tickets, CounterStore& store, TimerQueue& reads,
                   const Clock& clock)
    : tickets_(tickets), store_(store), reads_(reads), clock_(clock) {}

void LeaseLog::lease(std::string_view sequence, std::uint64_t count, std::string holder,
                     LeaseCallback done) {
  auto lease = std::make_shared<Lease>();
  lease->sequence = std::string(sequence);
  lease->holder = std::move(holder);
  lease->granted_at_ms = std::max<std::int64_t>(0, clock_.now_unix_ms());
  // Runs under the sequence's lock when the block's values are taken: the record goes into the
  // same write as the ceiling that covers them.
  auto record = [lease](const Block& block) {
    lease->block = block;
    // The id is the block's first value, zero-padded: values are never issued twice, so ids
    // are unique across restarts and clock steps, and byte-wise key order is grant order.
    lease->lease_id.assign(kLeaseIdDigits, '0');
    char digits[kLeaseIdDigits];
    const auto end = std::to_chars(digits, digits + kLeaseIdDigits, block.first).ptr;
    std::copy(digits, end, lease->lease_id.end() - (end - digits));
    return Mutation{lease_key(lease->sequence, lease->lease_id), encode_lease(*lease)};
  };
  tickets_.next_recorded(
      sequence, count, std::move(record), [lease, done = std::move(done)](DetailedResult<Block> r) {
        if (!r) return done(r.error());
        // Debug: a busy hi-lo client takes a block every few seconds. The line is built only
        // when it is written (leases are a hot path: tens of thousands a second).
        if (log::enabled(log::Level::kDebug)) {
          log::debug("sequence '" + lease->sequence + "': block " +
                         std::to_string(lease->block.first) + ".." +
                         std::to_string(lease->block.last()) + " leased to '" + lease->holder + "'",
                     {{"sequence", lease->sequence},
                      {"lease", lease->lease_id},
                      {"holder", lease->holder},
                      {"count", lease->block.count}});
        }
        done(*lease);
      });
}

DetailedResult<std::vector<Lease>> LeaseLog::recent_now(std::string_view sequence,
                                                        std::size_t limit) const {
  std::string prefix(kLeasePrefix);
  prefix.append(sequence).append("/");
  auto rows = store_.scan_last(prefix, limit);
  if (!rows) return rows.error();
  std::vector<Lease> out;
  out.reserve(rows->size());
  for (auto it = rows->begin(); it != rows->end(); ++it) {
    auto lease = decode_lease(it->first, it->second);
    if (!lease) {
      return Error{StorageErrc::kCorruption, "cannot decode lease record '" + it->first + "'"};
    }
    out.push_back(std::move(*lease));
  }
  return out;
}

void LeaseLog::recent(std::string_view sequence, std::size_t limit, LeaseListCallback done) const {
  reads_.after(std::chrono::milliseconds(0),
               [this, name = std::string(sequence), limit, done = std::move(done)] {
                 done(recent_now(name, limit));
               });
}

}  // namespace ticketd
