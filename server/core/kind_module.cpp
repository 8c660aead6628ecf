#include "server/core/kind_module.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <iterator>
#include <string>

#include "server/core/ticket_errc.h"

namespace ticketd {

const KindModule& kind_module(SequenceKind kind) {
  // One row per kind, in SequenceKind's order (checked below at first use).
  static const std::array<const KindModule*, std::size(kSequenceKindRows)> modules = {
      &ticket_kind(), &gapless_kind(), &snowflake_kind(), &uuidv7_kind(), &ulid_kind()};
  static const bool in_order = in_kind_order(modules);
  if (!in_order) std::abort();  // a registration row out of place: a programming error
  return *modules[static_cast<std::size_t>(kind)];
}

bool retry_on_queue(const RetryTimers* retries, std::int64_t retry_at_unix_ms, int attempts,
                    std::function<void()> again) {
  constexpr int kMaxAttempts = 1000;
  // A longer wait (a clock far behind a mark) is answered at once: holding the request that
  // long would only tie up the client.
  constexpr std::int64_t kMaxWaitMs = 5000;
  if (retries == nullptr || attempts >= kMaxAttempts) return false;
  const auto now_ms = retries->clock->now_unix_ms();
  if (retry_at_unix_ms - now_ms > kMaxWaitMs) return false;
  const auto delay =
      std::chrono::milliseconds(std::clamp<std::int64_t>(retry_at_unix_ms - now_ms, 0, 1000));
  retries->timers->after(delay, std::move(again));
  return true;
}

void KindModule::next_text(const SequenceHandle& /*handle*/, std::string_view name,
                           std::uint64_t /*count*/, TextForm /*form*/, TextIdsCallback done,
                           const KindEnv& /*env*/) const {
  done(Error{TicketErrc::kWrongKind, "sequence '" + std::string(name) + "' is a " +
                                         std::string(kind_name(kind())) +
                                         " sequence: its IDs are integers, not text"});
}

}  // namespace ticketd
