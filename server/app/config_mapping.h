// The config's enums as the core and the logger spell them: one switch each, so config/ stays a
// lower layer that knows nothing of the core.
#pragma once

#include "config/config.h"
#include "server/base/log.h"
#include "server/core/gapless_sequence.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_spec.h"
#include "server/core/snowflake_generator.h"
#include "server/core/snowflake_layout.h"
#include "server/core/worker_pool_service.h"
#include "storage/etcd/etcd_client.h"

namespace ticketd {

[[nodiscard]] log::Level to_core(config::LogLevel level);
[[nodiscard]] log::Format to_core(config::LogFormat format);
[[nodiscard]] GaplessOrder to_core(config::GaplessOrder order);
[[nodiscard]] SnowflakeFieldOrder to_core(config::SnowflakeFieldOrder order);
[[nodiscard]] ClockPolicy to_core(config::ClockPolicy policy);
/// A `sequences:` entry as the engine's spec (max_value 0 becomes the engine default).
[[nodiscard]] SequenceSpec to_spec(const config::SequenceConfig& sequence);
/// A `worker_pools:` entry as the engine's spec.
[[nodiscard]] WorkerPoolSpec to_spec(const config::WorkerPoolConfig& pool);
/// A gapless `sequences:` entry's options.
[[nodiscard]] GaplessOptions gapless_options(const config::SequenceConfig& sequence);
/// A `sequences:` entry as what the registry's configure() takes: its spec and, for a gapless
/// one, its options.
[[nodiscard]] SequenceDefinition to_definition(const config::SequenceConfig& sequence);
/// etcd endpoints and their TLS files and credentials as the client's options (timeouts left
/// at their defaults for the caller to set).
[[nodiscard]] etcd::EtcdClientOptions etcd_client_options(const std::vector<std::string>& endpoints,
                                                          const config::EtcdAccess& access);

}  // namespace ticketd
