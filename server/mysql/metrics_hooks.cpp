#include "server/mysql/metrics_hooks.h"

namespace ticketd::mysql {

ExecutorHooks metrics_hooks(metrics::Metrics& metrics) {
  ExecutorHooks hooks;
  hooks.on_issued = [&metrics](std::string_view sequence, std::uint64_t count) {
    metrics.ids_issued(sequence, kMetricsFrontend, count);
  };
  hooks.on_block_leased = [&metrics](std::string_view sequence, std::uint64_t size) {
    metrics.block_leased(sequence, kMetricsFrontend, size);
  };
  hooks.on_statement = [&metrics](std::string_view kind, double seconds) {
    metrics.request_latency(kMetricsFrontend, kind, seconds);
  };
  return hooks;
}

}  // namespace ticketd::mysql
