#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

class TicketCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "ticketd.ticket"; }
  std::string message(int ev) const override {
    switch (static_cast<TicketErrc>(ev)) {
      case TicketErrc::kUnknownSequence:
        return "unknown sequence";
      case TicketErrc::kAlreadyExists:
        return "sequence already exists";
      case TicketErrc::kExhausted:
        return "sequence exhausted: the next value would pass max_value";
      case TicketErrc::kInvalidArgument:
        return "invalid argument";
      case TicketErrc::kStorageFailed:
        return "durable write failed";
      case TicketErrc::kRetryLater:
        return "retry later";
      case TicketErrc::kShuttingDown:
        return "shutting down";
      case TicketErrc::kWrongKind:
        return "operation not supported by this sequence kind";
      case TicketErrc::kReservationNotFound:
        return "unknown reservation";
      case TicketErrc::kReservationEnded:
        return "reservation no longer held";
      case TicketErrc::kQueueTimeout:
        return "timed out waiting for the sequence's strict-order turn";
      case TicketErrc::kNotLeader:
        return "not the leader";
    }
    return "unknown ticket error";
  }
};

}  // namespace

const boost::system::error_category& ticket_category() noexcept {
  static const TicketCategory category;
  return category;
}

}  // namespace ticketd
