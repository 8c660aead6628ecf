// Allocation: IDs of any kind by name, and the moves of a ticket sequence's counter (SETVAL,
// fences and restrides).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "server/core/audit.h"
#include "server/core/kind_context.h"
#include "server/core/sequence_registry.h"
#include "server/core/ticket_sequence.h"

namespace ticketd {

/// Looks the name up in the registry and hands the call to the sequence, through its kind's
/// module for IDs. Holds no state of its own; what moves a counter by other than issuing is
/// audited. Thread safety: every member may be called concurrently; callbacks run inline, on
/// the committer thread or on a run-time kind's queue.
class SequenceAllocation {
 public:
  SequenceAllocation(const SequenceRegistry& registry, const KindContext& kinds,
                     const AuditTrail& audit)
      : registry_(registry), kinds_(kinds), audit_(audit) {}

  /// `count` values of sequence `name` as one Block (at most kMaxIdsPerCall).
  void next(std::string_view name, std::uint64_t count, BlockCallback done) const;
  /// `count` IDs of a sequence whose IDs are text (UUIDv7, ULID), at most kMaxIdsPerCall; a
  /// kind of integers refuses (kWrongKind). May complete inline.
  void next_text(std::string_view name, std::uint64_t count, TextForm form,
                 TextIdsCallback done) const;
  /// `count` values of ticket sequence `name`, with `record(block)` written in the same atomic
  /// commit as the ceiling that covers them (TicketSequence::take_recorded): hi-lo leases.
  /// The other kinds refuse blocks (kWrongKind).
  void next_recorded(std::string_view name, std::uint64_t count, BlockRecorder record,
                     BlockCallback done) const;
  void advance_to(std::string_view name, std::uint64_t value, BlockCallback done) const {
    advance(name, value, false, std::move(done));
  }
  /// Marks every value up to `last_used` as used (SETVAL): see TicketSequence::advance_past.
  void advance_past(std::string_view name, std::uint64_t last_used, BlockCallback done) const {
    advance(name, last_used, true, std::move(done));
  }
  /// Fences a ticket sequence before a restride (TicketSequence::set_fence); audited.
  void set_fence(std::string_view name, std::uint64_t fence, BlockCallback done) const;
  /// Moves a ticket sequence onto a new increment/offset grid above a floor
  /// (TicketSequence::restride); audited. The one way to change the grid of a sequence that
  /// other servers share a value space with: see docs/restride.md.
  void restride(std::string_view name, const Restride& r, BlockCallback done) const;

 private:
  [[nodiscard]] static std::optional<Error> check_count(std::uint64_t count);
  /// kWrongKind for a block (or any recorded take) asked of a sequence that is not a ticket
  /// sequence, or kUnknownSequence when there is none.
  [[nodiscard]] Error not_a_ticket_sequence(std::string_view name) const;
  /// kWrongKind for a fence or restride of another kind, or kUnknownSequence.
  [[nodiscard]] Error not_restridable(std::string_view name) const;
  void advance(std::string_view name, std::uint64_t value, bool past, BlockCallback done) const;

  const SequenceRegistry& registry_;
  const KindContext& kinds_;
  const AuditTrail& audit_;
};

}  // namespace ticketd
