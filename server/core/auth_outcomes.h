// What every front end does with a credential check, in one place: the auth throttle admits it
// (or refuses it unchecked), and a refusal is audited, counted by the throttle, logged when the
// throttle's rate limit allows, and answered after the throttle's delay. The sessions ask and
// wait; the policy is here.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "server/base/log.h"
#include "server/core/audit.h"
#include "server/core/auth_throttle.h"

namespace ticketd {

/// One refused credential, as the front end that refused it describes it. `who` and `detail`
/// are printable already; never a password, token or scramble.
struct AuthRefusal {
  std::string_view address;  // the client's
  std::string_view user;     // the throttle's pair: a MySQL user; empty for a bearer token
  std::string_view what;     // the log line's subject: "mysql login", "http authorization"
  std::string_view who;      // "user 'app'", "GET /v1/sequences (wrong bearer token)"
  std::string_view event;    // the audit event: "login_failed", "token_refused"
  std::string_view detail;   // the audit detail
};

/// One per server, shared by both front ends. Either part may be absent (no throttle: every
/// check is admitted and answered at once; no audit sink: nothing is audited). Thread safety:
/// as its throttle and sink, which may be called from any thread.
class AuthOutcomes {
 public:
  AuthOutcomes() = default;
  AuthOutcomes(AuthThrottle* throttle, AuditSink audit)
      : throttle_(throttle), audit_(std::move(audit)) {}

  /// A check of `user` (empty for a token) from `address` is about to run: false when the
  /// throttle refuses it unchecked (this pair's checks are all being answered slowly). `slot`
  /// holds the check's place until its answer is sent.
  [[nodiscard]] bool admit(std::string_view address, std::string_view user,
                           AuthThrottle::Slot& slot) const;

  /// The check failed: audited with `fields`, counted (a failure found without an admitted
  /// check takes a slot first), and logged as a warning when the throttle's rate limit allows.
  /// Returns how long its answer waits, in ms (0 without a throttle).
  std::int64_t refused(AuthThrottle::Slot& slot, const AuthRefusal& refusal,
                       log::Fields fields) const;

 private:
  AuthThrottle* throttle_ = nullptr;
  AuditSink audit_;
};

}  // namespace ticketd
