// The audit trail's port: where login failures and administrative changes are reported.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "server/base/log.h"

namespace ticketd {

/// Receives one audit event: `event` is a fixed word ("login_failed", "sequence_created",
/// "sequence_dropped", "sequence_advanced", "token_refused"), `detail` says what and who, fit
/// for a log line (never a password, token or scramble), and `fields` name it for log shippers
/// (`sequence`, `client`, `user`; valid for the call only). The daemon's sink writes one log
/// line with the `audit` category and counts the event in metrics. May be called from any
/// thread (the committer's among them): it must be quick and thread-safe. Empty: no audit.
using AuditSink =
    std::function<void(std::string_view event, std::string_view detail, log::Fields fields)>;

/// Where the engine reports its administrative changes about a sequence: the sink once one is
/// set (before serving), else an info log line.
class AuditTrail {
 public:
  void set_sink(AuditSink sink) { sink_ = std::move(sink); }
  [[nodiscard]] bool has_sink() const { return static_cast<bool>(sink_); }
  /// One event about `sequence` (its field).
  void record(std::string_view event, std::string_view sequence, const std::string& detail) const {
    if (sink_) {
      sink_(event, detail, {{"sequence", sequence}});
    } else {
      log::info(detail, {{"sequence", sequence}});
    }
  }

 private:
  AuditSink sink_;
};

}  // namespace ticketd
