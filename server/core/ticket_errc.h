// Error codes of the sequence engine.
#pragma once

#include <boost/system/error_code.hpp>
#include <string>
#include <type_traits>

namespace ticketd {

enum class TicketErrc {
  kUnknownSequence = 1,  // no sequence of that name
  kAlreadyExists,        // create of a name that is live
  kExhausted,            // the next value would pass max_value
  kInvalidArgument,      // count 0, bad spec, backwards move
  kStorageFailed,        // the durable write failed; nothing was issued
  kRetryLater,           // try again after a short wait (Snowflake clock, busy)
  kShuttingDown,         // the engine is stopping
  kWrongKind,            // operation not supported by this sequence kind
  kReservationNotFound,  // no reservation with that id (gapless)
  kReservationEnded,     // the reservation expired, was released or is being committed
  kQueueTimeout,         // a strict-order gapless caller waited too long for its turn
  kNotLeader,            // this instance is a standby (or was deposed): another one serves
};

const boost::system::error_category& ticket_category() noexcept;

inline boost::system::error_code make_error_code(TicketErrc e) noexcept {
  return {static_cast<int>(e), ticket_category()};
}

}  // namespace ticketd

template <>
struct boost::system::is_error_code_enum<ticketd::TicketErrc> : std::true_type {};
