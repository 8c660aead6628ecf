#include "server/core/ticket_errc.h"

#include "server/base/error_category.h"

namespace ticketd {
namespace {

const char* describe_ticket(TicketErrc e) noexcept {
  switch (e) {
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
  return nullptr;
}

}  // namespace

const boost::system::error_category& ticket_category() noexcept {
  static const EnumCategory<TicketErrc> category("ticketd.ticket", describe_ticket,
                                                 "unknown ticket error");
  return category;
}

}  // namespace ticketd
