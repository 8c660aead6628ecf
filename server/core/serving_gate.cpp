#include "server/core/serving_gate.h"

#include <utility>

#include "server/core/ticket_errc.h"

namespace ticketd {

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kFollower:
      return "follower";
    case Role::kLeader:
      return "leader";
    case Role::kDeposed:
      return "deposed";
  }
  return "follower";
}

ServingGate::ServingGate(const Clock& clock) : clock_(clock), standalone_(true) {
  view_.role = Role::kLeader;
}

ServingGate::ServingGate(const Clock& clock, InstanceAddress self, std::int64_t ttl_ms,
                         std::int64_t margin_ms)
    : clock_(clock), standalone_(false), ttl_ms_(ttl_ms), margin_ms_(margin_ms) {
  view_.self = std::move(self);
}

bool ServingGate::serving() const { return serving_term().has_value(); }

std::optional<std::int64_t> ServingGate::serving_term() const {
  if (standalone_) return 0;
  std::lock_guard lock(mutex_);
  if (view_.role != Role::kLeader) return std::nullopt;
  if (clock_.monotonic_ms() - renewal_sent_ms_ >= ttl_ms_ - margin_ms_) return std::nullopt;
  return view_.revision;
}

ClusterView ServingGate::view() const {
  std::lock_guard lock(mutex_);
  return view_;
}

Error ServingGate::not_serving_error(bool for_http) const {
  const ClusterView v = view();
  const std::string& leader = for_http ? v.leader.http : v.leader.mysql;
  std::string reason = v.role == Role::kLeader ? "leader lease not renewed in time; stepping down"
                       : v.role == Role::kDeposed ? "no longer the leader; restarting as a standby"
                                                  : "not the leader";
  reason += leader.empty() ? "; no leader elected yet" : "; leader is at " + leader;
  if (for_http) return Error{TicketErrc::kNotLeader, std::move(reason)};
  // MySQL's own --read-only wording (ER_OPTION_PREVENTS_STATEMENT), which proxies recognize.
  return Error{TicketErrc::kNotLeader,
               "The ticketd server is running with the --read-only option (" + reason +
                   ") so it cannot execute this statement"};
}

void ServingGate::set_self(InstanceAddress self) {
  std::lock_guard lock(mutex_);
  view_.self = std::move(self);
}

void ServingGate::follow(InstanceAddress leader, std::int64_t leader_term) {
  std::lock_guard lock(mutex_);
  if (view_.role == Role::kDeposed) return;
  view_.role = Role::kFollower;
  view_.leader = std::move(leader);
  view_.revision = leader_term;
}

void ServingGate::lead(std::int64_t revision, std::int64_t renewal_sent_ms) {
  std::lock_guard lock(mutex_);
  if (view_.role == Role::kDeposed) return;
  view_.role = Role::kLeader;
  view_.leader = view_.self;
  view_.revision = revision;
  renewal_sent_ms_ = renewal_sent_ms;
}

void ServingGate::renewed(std::int64_t sent_ms) {
  std::lock_guard lock(mutex_);
  if (sent_ms > renewal_sent_ms_) renewal_sent_ms_ = sent_ms;
}

void ServingGate::depose() {
  std::lock_guard lock(mutex_);
  view_.role = Role::kDeposed;
  view_.leader = {};
}

}  // namespace ticketd
