#include "server/core/auth_outcomes.h"

namespace ticketd {

bool AuthOutcomes::admit(std::string_view address, std::string_view user,
                         AuthThrottle::Slot& slot) const {
  if (throttle_ == nullptr) return true;
  slot = throttle_->admit(address, user);
  return slot.admitted();
}

std::int64_t AuthOutcomes::refused(AuthThrottle::Slot& slot, const AuthRefusal& refusal,
                                   log::Fields fields) const {
  if (audit_) audit_(refusal.event, refusal.detail, fields);
  if (throttle_ == nullptr) return 0;
  if (!slot.admitted()) slot = throttle_->admit(refusal.address, refusal.user);
  const AuthThrottle::Failure f = throttle_->record_failure(slot);
  if (f.log) log::warn(failure_line(refusal.what, refusal.who, refusal.address, f), fields);
  return f.delay_ms;
}

}  // namespace ticketd
