#include "server/core/sequence_allocation.h"

#include <string>
#include <utility>

#include "server/core/kind_module.h"
#include "server/core/ticket_errc.h"

namespace ticketd {

std::optional<Error> SequenceAllocation::check_count(std::uint64_t count) {
  if (count >= 1 && count <= kMaxIdsPerCall) return std::nullopt;
  return Error{TicketErrc::kInvalidArgument,
               "count must be 1.." + std::to_string(kMaxIdsPerCall) + " IDs per call"};
}

void SequenceAllocation::next(std::string_view name, std::uint64_t count,
                              BlockCallback done) const {
  if (auto bad = check_count(count)) return done(*bad);
  auto handle = registry_.find(name);
  if (!handle) return done(unknown_sequence(name));
  kind_module(*handle).next(*handle, name, count, std::move(done), kinds_.env());
}

void SequenceAllocation::next_text(std::string_view name, std::uint64_t count, TextForm form,
                                   TextIdsCallback done) const {
  if (auto bad = check_count(count)) return done(*bad);
  auto handle = registry_.find(name);
  if (!handle) return done(unknown_sequence(name));
  kind_module(*handle).next_text(*handle, name, count, form, std::move(done), kinds_.env());
}

Error SequenceAllocation::not_a_ticket_sequence(std::string_view name) const {
  const auto kind = registry_.kind_of(name);
  if (!kind || *kind == SequenceKind::kTicket) return unknown_sequence(name);
  return Error{TicketErrc::kWrongKind, kind_module(*kind).no_blocks(name)};
}

void SequenceAllocation::next_recorded(std::string_view name, std::uint64_t count,
                                       BlockRecorder record, BlockCallback done) const {
  if (auto bad = check_count(count)) return done(*bad);
  auto seq = registry_.find_as<TicketSequence>(name);
  if (!seq) return done(not_a_ticket_sequence(name));
  seq->take_recorded(count, std::move(record), std::move(done));
}

void SequenceAllocation::advance(std::string_view name, std::uint64_t value, bool past,
                                 BlockCallback done) const {
  auto seq = registry_.find_as<TicketSequence>(name);
  if (!seq) return done(unknown_sequence(name));
  BlockCallback then = std::move(done);
  if (audit_.has_sink()) {
    then = [&audit = audit_, n = std::string(name), value, past,
            done = std::move(then)](DetailedResult<Block> b) {
      if (b) {
        audit.record("sequence_advanced", n,
                     "sequence '" + n + "' moved " + (past ? "past " : "to at least ") +
                         std::to_string(value) + " (next value " + std::to_string(b->first) + ")");
      }
      done(std::move(b));
    };
  }
  if (past) {
    seq->advance_past(value, std::move(then));
  } else {
    seq->advance_to(value, std::move(then));
  }
}

Error SequenceAllocation::not_restridable(std::string_view name) const {
  const auto kind = registry_.kind_of(name);
  if (!kind) return unknown_sequence(name);
  return Error{TicketErrc::kWrongKind, "sequence '" + std::string(name) + "' is a " +
                                           std::string(kind_name(*kind)) +
                                           " sequence: only ticket sequences are restrided"};
}

void SequenceAllocation::set_fence(std::string_view name, std::uint64_t fence,
                                   BlockCallback done) const {
  auto seq = registry_.find_as<TicketSequence>(name);
  if (!seq) return done(not_restridable(name));
  seq->set_fence(fence, [&audit = audit_, n = std::string(name), fence,
                         done = std::move(done)](DetailedResult<Block> b) {
    if (b) {
      audit.record("sequence_fenced", n,
                   fence == 0 ? "sequence '" + n + "': fence lifted"
                              : "sequence '" + n + "' fenced at " + std::to_string(fence) +
                                    " for a restride");
    }
    done(std::move(b));
  });
}

void SequenceAllocation::restride(std::string_view name, const Restride& r,
                                  BlockCallback done) const {
  auto seq = registry_.find_as<TicketSequence>(name);
  if (!seq) return done(not_restridable(name));
  const auto before = seq->info().spec;
  seq->restride(r, [&audit = audit_, n = std::string(name), before, r,
                    done = std::move(done)](DetailedResult<Block> b) {
    if (b) {
      audit.record(
          "sequence_restrided", n,
          "sequence '" + n + "' restrided from increment " + std::to_string(before.increment) +
              " offset " + std::to_string(before.offset) + " to increment " +
              std::to_string(r.increment) + " offset " + std::to_string(r.offset) + " above " +
              std::to_string(r.floor) + " (next value " + std::to_string(b->first) + ")");
    }
    done(std::move(b));
  });
}

}  // namespace ticketd
