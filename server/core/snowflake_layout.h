// How a Snowflake ID divides its 63 bits between time, worker and sequence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/base/result.h"

namespace ticketd {

/// Where the worker field sits relative to the sequence field. Twitter, Instagram and Discord
/// put the worker above the sequence; Sonyflake puts the sequence above the machine ID. Either
/// way one worker's IDs increase with (tick, sequence).
enum class SnowflakeFieldOrder { kTimeWorkerSequence, kTimeSequenceWorker };

/// One field of a layout that validate() refused, named as in the config (`time_bits`, `epoch`,
/// `worker_id`, ...), so the config loader can prefix its YAML path.
struct LayoutProblem {
  std::string field;
  std::string message;
  friend bool operator==(const LayoutProblem&, const LayoutProblem&) = default;
};

/// An ID split into its fields. `unix_ms` is the start of the tick (tick * time_unit_ms + epoch).
struct SnowflakeParts {
  std::int64_t unix_ms = 0;
  std::uint64_t worker = 0;
  std::uint64_t sequence = 0;
  std::uint64_t tick = 0;
  friend bool operator==(const SnowflakeParts&, const SnowflakeParts&) = default;
};

/// The shape of a Snowflake ID: bit 63 is always 0 (safe for signed 64-bit drivers), then
/// `time_bits` of ticks since `epoch_unix_ms` (a tick is `time_unit_ms` long), then worker and
/// sequence in `order`. A plain value: copy it freely. Only validate()d layouts may be used with
/// compose()/decode(); the named presets are valid.
///
/// Bounds (checked by validate): the three widths sum to 63; time_bits >= 1 and sequence_bits
/// >= 1 (without sequence bits a worker could issue one ID per tick, never what a config
/// means); worker_bits may be 0: a single-instance layout in which only worker 0 exists.
struct SnowflakeLayout {
  std::int64_t epoch_unix_ms = 0;
  int time_bits = 41;
  int worker_bits = 10;
  int sequence_bits = 12;
  std::int64_t time_unit_ms = 1;
  SnowflakeFieldOrder order = SnowflakeFieldOrder::kTimeWorkerSequence;

  /// Twitter's original: 41/10/12 in 1 ms ticks since 2010-11-04T01:42:54.657Z.
  [[nodiscard]] static SnowflakeLayout twitter();
  /// Instagram's: 13-bit shard ID as worker and 10-bit sequence below ms since 2011-08-24.
  /// Instagram spends 64 bits (41 of time); its IDs live in PostgreSQL's signed bigint, so the
  /// top time bit stays 0 until 2046. 40/13/10 keeps every field where Instagram puts it, so
  /// its IDs decode bit for bit.
  [[nodiscard]] static SnowflakeLayout instagram();
  /// Discord-style: 42 bits of ms since 2015-01-01, 9 worker bits, 12 sequence bits. Discord
  /// itself spends 64 bits (42 + 5 worker + 5 process + 12); keeping the sign bit 0 costs one
  /// worker bit. (Real Discord IDs, positive until 2084, decode with twitter()'s widths at
  /// Discord's epoch: the 10 worker bits are its worker << 5 | process.)
  [[nodiscard]] static SnowflakeLayout discord();
  /// Sonyflake: 39 bits of 10 ms ticks since 2014-09-01, 8-bit sequence above a 16-bit
  /// machine ID (the sequence-then-worker order), so real Sonyflake IDs decode.
  [[nodiscard]] static SnowflakeLayout sonyflake();

  /// Every problem with this layout and `worker_id` at once (empty when valid): widths,
  /// time unit, an epoch after `now_unix_ms`, a clock already past the time range, a worker ID
  /// that does not fit.
  [[nodiscard]] std::vector<LayoutProblem> validate(std::int64_t now_unix_ms,
                                                    std::uint64_t worker_id) const;

  [[nodiscard]] std::uint64_t max_worker() const { return mask(worker_bits); }
  [[nodiscard]] std::uint64_t max_sequence() const { return mask(sequence_bits); }
  /// The last tick the time field can hold.
  [[nodiscard]] std::uint64_t max_ticks() const { return mask(time_bits); }
  /// The last unix ms the layout can represent (the end of its last tick).
  [[nodiscard]] std::int64_t end_unix_ms() const;

  /// The tick containing `unix_ms` (negative before the epoch).
  [[nodiscard]] std::int64_t tick_of(std::int64_t unix_ms) const {
    const std::int64_t d = unix_ms - epoch_unix_ms;
    return d >= 0 ? d / time_unit_ms : -((-d + time_unit_ms - 1) / time_unit_ms);
  }
  /// The first unix ms of `tick`.
  [[nodiscard]] std::int64_t unix_ms_of(std::int64_t tick) const {
    return epoch_unix_ms + tick * time_unit_ms;
  }

  /// Precondition: tick <= max_ticks(), worker <= max_worker(), sequence <= max_sequence().
  [[nodiscard]] std::uint64_t compose(std::uint64_t tick, std::uint64_t worker,
                                      std::uint64_t sequence) const {
    if (order == SnowflakeFieldOrder::kTimeWorkerSequence) {
      return tick << (worker_bits + sequence_bits) | worker << sequence_bits | sequence;
    }
    return tick << (worker_bits + sequence_bits) | sequence << worker_bits | worker;
  }
  /// The fields of `id`; kInvalidArgument when bit 63 is set (no layout here produces it).
  [[nodiscard]] Result<SnowflakeParts> decode(std::uint64_t id) const;

  friend bool operator==(const SnowflakeLayout&, const SnowflakeLayout&) = default;

 private:
  [[nodiscard]] static std::uint64_t mask(int bits) {
    return bits <= 0 ? 0 : bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  }
};

}  // namespace ticketd
