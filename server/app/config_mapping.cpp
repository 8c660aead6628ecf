#include "server/app/config_mapping.h"

static_assert(ticketd::config::kDefaultMaxRate == ticketd::kDefaultMaxRate,
              "the config and the engine agree on the default max_rate");
static_assert(ticketd::config::kMaxMaxRate == ticketd::kMaxMaxRate,
              "the config and the engine agree on the largest max_rate");

namespace ticketd {

// Each switch names every enumerator and has no default, so a new one is a compile warning
// (an error here) until it is mapped; the return after it only quiets "control reaches end".

log::Level to_core(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kDebug:
      return log::Level::kDebug;
    case config::LogLevel::kInfo:
      return log::Level::kInfo;
    case config::LogLevel::kWarn:
      return log::Level::kWarn;
    case config::LogLevel::kError:
      return log::Level::kError;
  }
  return log::Level::kInfo;
}

log::Format to_core(config::LogFormat format) {
  switch (format) {
    case config::LogFormat::kText:
      return log::Format::kText;
    case config::LogFormat::kJson:
      return log::Format::kJson;
  }
  return log::Format::kText;
}

GaplessOrder to_core(config::GaplessOrder order) {
  switch (order) {
    case config::GaplessOrder::kRelaxed:
      return GaplessOrder::kRelaxed;
    case config::GaplessOrder::kStrict:
      return GaplessOrder::kStrict;
  }
  return GaplessOrder::kRelaxed;
}

SnowflakeFieldOrder to_core(config::SnowflakeFieldOrder order) {
  switch (order) {
    case config::SnowflakeFieldOrder::kTimeWorkerSequence:
      return SnowflakeFieldOrder::kTimeWorkerSequence;
    case config::SnowflakeFieldOrder::kTimeSequenceWorker:
      return SnowflakeFieldOrder::kTimeSequenceWorker;
  }
  return SnowflakeFieldOrder::kTimeWorkerSequence;
}

ClockPolicy to_core(config::ClockPolicy policy) {
  switch (policy) {
    case config::ClockPolicy::kFail:
      return ClockPolicy::kFail;
    case config::ClockPolicy::kWait:
      return ClockPolicy::kWait;
    case config::ClockPolicy::kLogical:
      return ClockPolicy::kLogical;
  }
  return ClockPolicy::kWait;
}

SequenceSpec to_spec(const config::SequenceConfig& s) {
  SequenceSpec spec;
  spec.name = s.name;
  spec.kind = s.kind;
  spec.start = s.start;
  spec.increment = s.increment;
  spec.offset = s.offset;
  spec.max_value = s.max_value == 0 ? kDefaultMaxValue : s.max_value;
  spec.cache = s.cache;
  spec.max_rate = s.max_rate;
  return spec;
}

GaplessOptions gapless_options(const config::SequenceConfig& s) {
  GaplessOptions o;
  o.order = to_core(s.order);
  o.reservation_ttl_ms = s.reservation_ttl.count();
  o.max_reservation_ttl_ms = s.max_reservation_ttl.count();
  o.strict_wait_ms = s.strict_wait.count();
  return o;
}

SequenceDefinition to_definition(const config::SequenceConfig& sequence) {
  SequenceDefinition d{to_spec(sequence), {}};
  if (sequence.kind == SequenceKind::kGapless) d.options = gapless_options(sequence);
  return d;
}

WorkerPoolSpec to_spec(const config::WorkerPoolConfig& p) {
  using std::chrono::milliseconds;
  return WorkerPoolSpec{.name = p.name,
                        .size = p.size,
                        .min_ttl_ms = milliseconds(p.min_ttl).count(),
                        .max_ttl_ms = milliseconds(p.max_ttl).count(),
                        .default_ttl_ms = milliseconds(p.default_ttl).count()};
}

etcd::EtcdClientOptions etcd_client_options(const std::vector<std::string>& endpoints,
                                            const config::EtcdAccess& access) {
  etcd::EtcdClientOptions o;
  o.endpoints = endpoints;
  o.ca_file = access.ca_file;
  o.cert_file = access.cert_file;
  o.key_file = access.key_file;
  o.username = access.username;
  o.password = access.password;
  return o;
}

}  // namespace ticketd
