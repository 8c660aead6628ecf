#include "server/core/snowflake_layout.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <limits>

#include "server/core/clock.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

using i128 = __int128;

// The last unix ms the layout covers, in 128 bits so that absurd widths cannot overflow.
i128 end_ms_wide(const SnowflakeLayout& l) {
  return i128{l.epoch_unix_ms} + (i128{l.max_ticks()} + 1) * l.time_unit_ms - 1;
}

std::string bits_problem(const char* field, int value, int lo, int hi) {
  return std::string(field) + " is " + std::to_string(value) + "; it must be between " +
         std::to_string(lo) + " and " + std::to_string(hi);
}

}  // namespace

SnowflakeLayout SnowflakeLayout::twitter() {
  return SnowflakeLayout{.epoch_unix_ms = 1288834974657,
                         .time_bits = 41,
                         .worker_bits = 10,
                         .sequence_bits = 12,
                         .time_unit_ms = 1};
}

SnowflakeLayout SnowflakeLayout::instagram() {
  return SnowflakeLayout{.epoch_unix_ms = 1314220021721,
                         .time_bits = 40,
                         .worker_bits = 13,
                         .sequence_bits = 10,
                         .time_unit_ms = 1};
}

SnowflakeLayout SnowflakeLayout::discord() {
  return SnowflakeLayout{.epoch_unix_ms = 1420070400000,
                         .time_bits = 42,
                         .worker_bits = 9,
                         .sequence_bits = 12,
                         .time_unit_ms = 1};
}

SnowflakeLayout SnowflakeLayout::sonyflake() {
  return SnowflakeLayout{.epoch_unix_ms = 1409529600000,
                         .time_bits = 39,
                         .worker_bits = 16,
                         .sequence_bits = 8,
                         .time_unit_ms = 10,
                         .order = SnowflakeFieldOrder::kTimeSequenceWorker};
}

std::vector<LayoutProblem> SnowflakeLayout::validate(std::int64_t now_unix_ms,
                                                     std::uint64_t worker_id) const {
  std::vector<LayoutProblem> out;
  const bool time_ok = time_bits >= 1 && time_bits <= 62;
  const bool worker_ok = worker_bits >= 0 && worker_bits <= 61;
  const bool sequence_ok = sequence_bits >= 1 && sequence_bits <= 62;
  if (!time_ok) out.push_back({"time_bits", bits_problem("time_bits", time_bits, 1, 62)});
  if (!worker_ok) out.push_back({"worker_bits", bits_problem("worker_bits", worker_bits, 0, 61)});
  if (!sequence_ok) {
    out.push_back({"sequence_bits", bits_problem("sequence_bits", sequence_bits, 1, 62)});
  }
  const bool widths_ok = time_ok && worker_ok && sequence_ok;
  if (widths_ok && time_bits + worker_bits + sequence_bits != 63) {
    out.push_back({"", "time_bits + worker_bits + sequence_bits is " +
                           std::to_string(time_bits + worker_bits + sequence_bits) +
                           "; it must be 63 (the sign bit stays 0)"});
  }
  const bool unit_ok = time_unit_ms >= 1;
  if (!unit_ok) {
    out.push_back({"time_unit_ms",
                   "time_unit_ms is " + std::to_string(time_unit_ms) + "; it must be at least 1"});
  }
  if (epoch_unix_ms < 0) {
    out.push_back({"epoch", "epoch " + format_utc_ms(epoch_unix_ms) + " is before 1970"});
  } else if (epoch_unix_ms > now_unix_ms) {
    out.push_back({"epoch", "epoch " + format_utc_ms(epoch_unix_ms) +
                                " is in the future (the clock says " + format_utc_ms(now_unix_ms) +
                                ")"});
  }
  if (widths_ok && unit_ok && epoch_unix_ms >= 0) {
    const i128 end = end_ms_wide(*this);
    if (end > std::numeric_limits<std::int64_t>::max()) {
      out.push_back({"time_unit_ms", std::to_string(time_bits) + " bits of " +
                                         std::to_string(time_unit_ms) +
                                         " ms ticks run past the year 292 million"});
    } else if (end < now_unix_ms) {
      out.push_back({"time_bits", "the time range (" + std::to_string(time_bits) + " bits of " +
                                      std::to_string(time_unit_ms) +
                                      " ms from the epoch) ended at " +
                                      format_utc_ms(static_cast<std::int64_t>(end))});
    }
  }
  if (worker_ok && worker_id > max_worker()) {
    out.push_back({"worker_id", "worker_id " + std::to_string(worker_id) + " does not fit in " +
                                    std::to_string(worker_bits) + " worker bits (max " +
                                    std::to_string(max_worker()) + ")"});
  }
  return out;
}

std::int64_t SnowflakeLayout::end_unix_ms() const {
  const i128 end = end_ms_wide(*this);
  return end > std::numeric_limits<std::int64_t>::max() ? std::numeric_limits<std::int64_t>::max()
                                                        : static_cast<std::int64_t>(end);
}

Result<SnowflakeParts> SnowflakeLayout::decode(std::uint64_t id) const {
  if (id >> 63 != 0) return make_error_code(TicketErrc::kInvalidArgument);
  SnowflakeParts p;
  p.tick = id >> (worker_bits + sequence_bits);
  if (order == SnowflakeFieldOrder::kTimeWorkerSequence) {
    p.worker = (id >> sequence_bits) & max_worker();
    p.sequence = id & max_sequence();
  } else {
    p.sequence = (id >> worker_bits) & max_sequence();
    p.worker = id & max_worker();
  }
  p.unix_ms = unix_ms_of(static_cast<std::int64_t>(p.tick));
  return p;
}

}  // namespace ticketd
