// A durable record of hi-lo block leases, so an operator can see who took which values.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/sequence_spec.h"
#include "server/core/ticket_service.h"
#include "server/core/timer_queue.h"
#include "storage/counter_store.h"

namespace ticketd {

/// One block handed out to a holder. `lease_id` is unique within the sequence and sorts in
/// grant order ("<zero-padded unix ms>-<zero-padded counter>").
struct Lease {
  std::string lease_id;
  std::string sequence;
  Block block;
  std::string holder;
  std::int64_t granted_at_ms = 0;
  friend bool operator==(const Lease&, const Lease&) = default;
};

using LeaseCallback = std::function<void(DetailedResult<Lease>)>;
using LeaseListCallback = std::function<void(DetailedResult<std::vector<Lease>>)>;

inline constexpr std::string_view kLeasePrefix = "lease/";

/// Key of a lease: "lease/<sequence>/<lease_id>". Sequence names never contain '/', so the
/// prefix "lease/<sequence>/" selects exactly one sequence's leases, in grant order.
[[nodiscard]] std::string lease_key(std::string_view sequence, std::string_view lease_id);
/// "first=.. step=.. count=.. granted_at_ms=.. holder=<rest of the line>" (holder last: free text).
[[nodiscard]] std::string encode_lease(const Lease& lease);
[[nodiscard]] std::optional<Lease> decode_lease(std::string_view key, std::string_view text);

/// How long lease records are kept: by age, or as a count per sequence.
struct LeaseRetention {
  std::int64_t max_age_ms = 30LL * 86'400'000;
  std::uint64_t keep_count = 0;  // set: keep the newest this many per sequence, whatever their age
};

/// Hi-lo block leases: takes a block of a ticket sequence and records who took it, in the same
/// atomic write as the ceiling that covers the block (TicketSequence::take_recorded), so a
/// leased block that passes the ceiling costs one synced write and is never handed out without
/// its record. Records are kept after a sequence is dropped, as an audit trail.
/// Listing reads the store on `reads` (a background thread), never on the caller's thread: with
/// the etcd engine a read is a network call. Thread safety: all members may be called
/// concurrently.
class LeaseLog {
 public:
  LeaseLog(TicketService& tickets, CounterStore& store, TimerQueue& reads, const Clock& clock);

  /// Leases `count` values of `sequence` to `holder`; `done` gets the Lease once the block and
  /// its record are durable (inline on a failure, otherwise on the committer thread). Only
  /// ticket sequences lease blocks (kWrongKind for the other kinds).
  void lease(std::string_view sequence, std::uint64_t count, std::string holder,
             LeaseCallback done);
  /// The `limit` most recent leases of `sequence`, newest first, read on the background thread
  /// (only those `limit` records are read); `done` runs there.
  void recent(std::string_view sequence, std::size_t limit, LeaseListCallback done) const;
  /// Deletes the records of leases past `retention`, oldest first, at most `batch` per ticket
  /// sequence per call; never a record younger than the retention or among the newest
  /// `keep_count`. Leases of dropped sequences are kept (an audit trail of a name no one serves
  /// now). Blocking (bounded reads, then one synced commit): run it on a background thread.
  /// Returns how many records it deleted.
  [[nodiscard]] DetailedResult<std::size_t> prune(const LeaseRetention& retention,
                                                  std::size_t batch);
  /// The same, read on the caller's thread: for tools and tests only.
  [[nodiscard]] DetailedResult<std::vector<Lease>> recent_now(std::string_view sequence,
                                                              std::size_t limit) const;

 private:
  TicketService& tickets_;
  CounterStore& store_;
  TimerQueue& reads_;
  const Clock& clock_;
};

}  // namespace ticketd
