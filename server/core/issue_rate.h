// How fast each ticket sequence has issued values: the figure a safe restore needs to know how
// far a counter may have run since a backup was taken.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"
#include "storage/counter_store.h"

namespace ticketd {

inline constexpr std::string_view kRatePrefix = "rate/";

/// The busiest one-minute window of each UTC day, for the last kDays days: `peaks` maps a day
/// number (Unix ms / 86,400,000) to the most values issued in one minute of that day. Stored
/// under "rate/<name>" as "v=1 peaks=<day>:<values>,<day>:<values>…". A plain value type.
struct IssueRateHistory {
  static constexpr std::int64_t kDays = 30;
  static constexpr std::int64_t kDayMs = 86'400'000;

  std::map<std::int64_t, std::uint64_t> peaks;

  /// Records `values` issued in one minute of `day`; true when that day's peak rose.
  bool note(std::int64_t day, std::uint64_t values);
  /// Drops days older than the kDays days ending with `today`.
  void prune(std::int64_t today);
  /// The highest values per minute over the kDays days ending with `today` (0: none issued).
  [[nodiscard]] std::uint64_t peak_per_minute(std::int64_t today) const;
  friend bool operator==(const IssueRateHistory&, const IssueRateHistory&) = default;
};

[[nodiscard]] std::string rate_key(std::string_view name);
[[nodiscard]] std::string encode_rate_history(const IssueRateHistory& history);
[[nodiscard]] std::optional<IssueRateHistory> decode_rate_history(std::string_view text);

/// Measures every ticket sequence's issue rate over short windows and keeps the per-day
/// peaks in the store with the sequence ("rate/<name>"), so that a backup can say how fast each
/// counter ever ran. Values counted are those handed out (takes and hi-lo blocks), not forward
/// moves by SETVAL. The daemon calls sample() every 10 s, at each online backup and at
/// shutdown (tests after moving a FakeClock); a window's count is scaled to values per minute,
/// so a burst shorter than a minute reads as its own rate (never less). Changed peaks are written
/// in one commit through the GroupCommitter; a failed write is retried with the next sample.
/// A history outlives a drop of its sequence (a re-created name keeps its rate).
/// Thread safety: all members may be called concurrently; load() runs before serving.
class IssueRateTracker {
 public:
  IssueRateTracker(TicketService& service, GroupCommitter& committer, const Clock& clock);

  /// Reads the stored histories and takes the first sample's starting point.
  [[nodiscard]] DetailedResult<void> load(CounterStore& store);
  /// Closes one window. `done`, when given, runs once the changed peaks are durable (or at once
  /// when nothing changed).
  void sample(std::function<void(DetailedResult<void>)> done = {});
  /// Every sequence's history, as last sampled (tests and tools).
  [[nodiscard]] std::map<std::string, IssueRateHistory> histories() const;

 private:
  struct Mark {
    std::uint64_t handed_out = 0;
    std::int64_t at_ms = 0;
    // The sequence object the count belongs to: a drop and re-create restarts its count.
    const void* identity = nullptr;
  };

  TicketService& service_;
  GroupCommitter& committer_;
  const Clock& clock_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, IssueRateHistory> histories_;
  std::unordered_map<std::string, Mark> marks_;
  std::unordered_map<std::string, bool> unwritten_;  // changed since the last durable write
};

/// sample() and wait until its write is durable: for a backup's thread and shutdown, never an
/// I/O thread.
[[nodiscard]] DetailedResult<void> sample_and_wait(IssueRateTracker& tracker);

}  // namespace ticketd
