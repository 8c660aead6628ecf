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
#include "server/core/group_committer.h"
#include "server/core/sequence_spec.h"
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

inline constexpr std::string_view kLeasePrefix = "lease/";

/// Key of a lease: "lease/<sequence>/<lease_id>". Sequence names never contain '/', so the
/// prefix "lease/<sequence>/" selects exactly one sequence's leases, in grant order.
[[nodiscard]] std::string lease_key(std::string_view sequence, std::string_view lease_id);
/// "first=.. step=.. count=.. granted_at_ms=.. holder=<rest of the line>" (holder last: free text).
[[nodiscard]] std::string encode_lease(const Lease& lease);
[[nodiscard]] std::optional<Lease> decode_lease(std::string_view key, std::string_view text);

/// Records leases through the GroupCommitter (so they share synced writes with the counters)
/// and lists the most recent ones with a CounterStore scan. Records are kept after a sequence
/// is dropped, as an audit trail. Thread safety: all members may be called concurrently;
/// recent() reads the store on the caller's thread.
class LeaseLog {
 public:
  LeaseLog(CounterStore& store, GroupCommitter& committer, const Clock& clock);

  /// Persists a lease of `block` (already issued by the sequence); `done` gets the Lease once
  /// the record is durable, on the committer thread or inline.
  void record(std::string_view sequence, const Block& block, std::string holder,
              LeaseCallback done);
  /// The `limit` most recent leases of `sequence`, newest first.
  [[nodiscard]] DetailedResult<std::vector<Lease>> recent(std::string_view sequence,
                                                          std::size_t limit) const;

 private:
  CounterStore& store_;
  GroupCommitter& committer_;
  const Clock& clock_;
};

}  // namespace ticketd
