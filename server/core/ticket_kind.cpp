// Ticket sequences: counters whose record ("seq/") the registry loads, creates and configures
// itself; this module serves, describes and drops them.
#include <memory>
#include <string>
#include <vector>

#include "server/core/kind_module.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

std::shared_ptr<TicketSequence> as_ticket(const SequenceHandle& handle) {
  return std::get<std::shared_ptr<TicketSequence>>(handle);
}

class TicketKind final : public KindModule {
 public:
  SequenceKind kind() const override { return SequenceKind::kTicket; }

  DetailedResult<SequenceHandle> open(const SequenceDefinition& /*definition*/,
                                      std::optional<std::uint64_t> /*tombstone*/,
                                      const KindEnv& /*env*/) const override {
    return Error{TicketErrc::kInvalidArgument, "not a definition"};
  }

  void next(const SequenceHandle& handle, std::string_view /*name*/, std::uint64_t count,
            BlockCallback done, const KindEnv& /*env*/) const override {
    as_ticket(handle)->take(count, std::move(done));
  }

  std::string no_blocks(std::string_view name) const override {
    return "sequence '" + std::string(name) + "' is a ticket sequence";  // never refused
  }

  void describe(const SequenceHandle& handle, SequenceDescription& out) const override {
    out.ticket = as_ticket(handle)->info();
    out.spec = out.ticket->spec;
    out.fields = ticket_fields(*out.ticket);
    out.next_value = out.ticket->next_value;
  }

  std::optional<std::uint64_t> retire(const SequenceHandle& handle) const override {
    return as_ticket(handle)->mark_dropped();
  }

  std::vector<Mutation> drop_writes(std::string_view name) const override {
    return {Mutation{sequence_key(name), std::nullopt}};
  }

  // A dropped TicketSequence refuses for good: the record is still on disk, so a new one
  // resumes above the last ceiling known durable.
  SequenceHandle revive(const SequenceHandle& handle, const KindEnv& env) const override {
    const auto info = as_ticket(handle)->info();
    return std::make_shared<TicketSequence>(
        SequenceRecord{info.spec, info.durable_ceiling, info.fence, info.restrided,
                       info.rate_tat_us},
        env.committer, env.rate_clock);
  }
};

}  // namespace

std::vector<DescribedField> ticket_fields(const SequenceInfo& info) {
  const auto& spec = info.spec;
  const auto text = [](std::uint64_t v) { return DescribedValue{std::to_string(v)}; };
  std::vector<DescribedField> out{
      {"start", text(spec.start)},
      {"increment", spec.increment},
      {"offset", spec.offset},
      {"max_value", text(spec.max_value)},
      {"cache", spec.cache},
      {"max_rate", spec.max_rate},
      {"next_value", text(info.next_value)},
      {"durable_ceiling", text(info.durable_ceiling)},
      {"issued", text(info.issued)},
      {"remaining", text(info.remaining)},
      {"exhausted", info.exhausted},
  };
  // Only while a restride is under way or after one, so other sequences keep their shape.
  if (info.fence != 0) out.push_back({"fence", text(info.fence)});
  if (info.restrided) out.push_back({"restrided", true});
  return out;
}

const KindModule& ticket_kind() {
  static const TicketKind module;
  return module;
}

}  // namespace ticketd
