#include "server/core/kind_context.h"

#include <utility>

namespace ticketd {

void KindContext::enable_runtime_kinds(RuntimeKinds kinds) {
  runtime_ = std::move(kinds);
  use_retry_timers(runtime_.retries != nullptr ? runtime_.retries : runtime_.background,
                   runtime_.clock);
}

void KindContext::use_retry_timers(TimerQueue* timers, const Clock* clock) {
  if (timers == nullptr || clock == nullptr) return;
  std::lock_guard lock(retry_mutex_);
  if (retry_timers_storage_ != nullptr) return;  // the first pair serves every sequence
  retry_timers_storage_ = std::make_unique<RetryTimers>(RetryTimers{timers, clock});
  retry_timers_.store(retry_timers_storage_.get(), std::memory_order_release);
}

}  // namespace ticketd
