// A WorkerLease that tests set by hand.
#pragma once

#include <mutex>

#include "server/core/worker_lease.h"

namespace ticketd::testing {

/// Returns whatever the test last set, standing in for a lease keeper (claims, renewals and
/// losses are set() calls). Thread safety: all members may be called concurrently.
class FakeWorkerLease final : public WorkerLease {
 public:
  explicit FakeWorkerLease(WorkerLeaseState state = {}) : state_(state) {}
  [[nodiscard]] WorkerLeaseState state() const override {
    std::lock_guard lock(mutex_);
    return state_;
  }
  void set(const WorkerLeaseState& state) {
    std::lock_guard lock(mutex_);
    state_ = state;
  }

 private:
  mutable std::mutex mutex_;
  WorkerLeaseState state_;
};

}  // namespace ticketd::testing
