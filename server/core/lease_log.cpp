#include "server/core/lease_log.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

namespace ticketd {
namespace {

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Takes "name=value " from the front of `text`; the value ends at the next space.
std::optional<std::string_view> take_field(std::string_view& text, std::string_view name) {
  if (!text.starts_with(name) || text.size() <= name.size() || text[name.size()] != '=') {
    return std::nullopt;
  }
  text.remove_prefix(name.size() + 1);
  const auto end = std::min(text.find(' '), text.size());
  auto value = text.substr(0, end);
  text.remove_prefix(std::min(end + 1, text.size()));
  return value;
}

}  // namespace

std::string lease_key(std::string_view sequence, std::string_view lease_id) {
  std::string key(kLeasePrefix);
  key.append(sequence).append("/").append(lease_id);
  return key;
}

std::string encode_lease(const Lease& lease) {
  return "first=" + std::to_string(lease.block.first) +
         " step=" + std::to_string(lease.block.step) +
         " count=" + std::to_string(lease.block.count) +
         " granted_at_ms=" + std::to_string(lease.granted_at_ms) + " holder=" + lease.holder;
}

std::optional<Lease> decode_lease(std::string_view key, std::string_view text) {
  if (!key.starts_with(kLeasePrefix)) return std::nullopt;
  key.remove_prefix(kLeasePrefix.size());
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  Lease lease;
  lease.sequence = std::string(key.substr(0, slash));
  lease.lease_id = std::string(key.substr(slash + 1));
  auto first = take_field(text, "first");
  auto step = first ? take_field(text, "step") : std::nullopt;
  auto count = step ? take_field(text, "count") : std::nullopt;
  auto granted = count ? take_field(text, "granted_at_ms") : std::nullopt;
  if (!granted || !text.starts_with("holder=")) return std::nullopt;
  auto f = parse_u64(*first);
  auto s = parse_u64(*step);
  auto c = parse_u64(*count);
  auto g = parse_u64(*granted);
  if (!f || !s || !c || !g) return std::nullopt;
  lease.block = Block{*f, *s, *c};
  lease.granted_at_ms = static_cast<std::int64_t>(*g);
  lease.holder = std::string(text.substr(7));
  return lease;
}

LeaseLog::LeaseLog(TicketService& tickets, CounterStore& store, RetryScheduler& reads,
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
    char id[24];
    std::snprintf(id, sizeof id, "%020llu", static_cast<unsigned long long>(block.first));
    lease->lease_id = id;
    return Mutation{lease_key(lease->sequence, lease->lease_id), encode_lease(*lease)};
  };
  tickets_.next_recorded(sequence, count, std::move(record),
                         [lease, done = std::move(done)](DetailedResult<Block> r) {
                           if (!r) return done(r.error());
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
