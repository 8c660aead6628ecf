// The executor's hooks wired to the daemon's Prometheus metrics, labelled frontend="mysql".
#pragma once

#include "server/metrics/metrics.h"
#include "server/mysql/statement_call.h"

namespace ticketd::mysql {

/// The front end's label in every metric it records.
inline constexpr std::string_view kMetricsFrontend = "mysql";

/// Hooks that record, as the HTTP front end does: ids issued per sequence, blocks leased (a
/// statement taking more than one ID), and ticketd_request_duration_seconds with the statement
/// kind as its `route` label. `metrics` must outlive the executor.
[[nodiscard]] ExecutorHooks metrics_hooks(metrics::Metrics& metrics);

}  // namespace ticketd::mysql
