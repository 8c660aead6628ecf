#include "server/plan/capacity_plan.h"

#include <algorithm>
#include <string>

namespace ticketd::plan {

u128 ceil_div(u128 a, u128 b) { return a / b + (a % b != 0 ? 1 : 0); }

std::string digits(u128 v) {
  if (v == 0) return "0";
  std::string out;
  for (; v != 0; v /= 10) out.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string decimal(u128 num, u128 den, int places) {
  std::string out = digits(num / den);
  if (places <= 0) return out;
  out.push_back('.');
  u128 rest = num % den;
  for (int i = 0; i < places; ++i) {
    // rest < den, so rest * 10 passes 2^128 only for a den above 2^124: never one of ours.
    rest *= 10;
    out.push_back(static_cast<char>('0' + static_cast<int>(rest / den)));
    rest %= den;
  }
  return out;
}

std::uint64_t ids_per_core(const ReferenceFigure& ids) { return ids.value / kReferenceCores; }

u128 cpu_ids_per_server(const ReferenceFigure& ids, std::uint64_t cores) {
  return u128{ids.value} * cores / kReferenceCores;
}

std::uint64_t commits_per_second(std::uint64_t synced_write_us) {
  return std::max<std::uint64_t>(1, 1000000 / std::max<std::uint64_t>(synced_write_us, 1));
}

u128 write_bound(std::uint64_t cache, std::uint64_t commits) { return u128{cache} * commits; }

u128 durable_writes(u128 ids_per_second, std::uint64_t cache) {
  return ceil_div(ids_per_second, std::max<std::uint64_t>(cache, 1));
}

u128 fsyncs(u128 writes, bool external_mark) {
  if (writes == 0) return 0;
  return writes + 1 + (external_mark ? writes : 0);
}

u128 servers_for_load(std::uint64_t target, u128 per_server) {
  return ceil_div(target, std::max<u128>(per_server, 1));
}

u128 servers_with_spare(u128 for_load) { return for_load + 1; }

u128 share(std::uint64_t target, u128 servers) {
  return ceil_div(target, std::max<u128>(servers, 1));
}

u128 value_space(std::uint64_t start, std::uint64_t max_value) {
  return start > max_value ? 0 : u128{max_value} - start + 1;
}

u128 values_needed(std::uint64_t ids_per_second, std::uint64_t years) {
  return u128{ids_per_second} * years * kSecondsPerYear;
}

SnowflakeBudget snowflake_budget(const SnowflakeLayout& layout) {
  SnowflakeBudget b;
  const auto unit = static_cast<std::uint64_t>(std::max<std::int64_t>(layout.time_unit_ms, 1));
  b.ids_per_tick = u128{layout.max_sequence()} + 1;
  b.ids_per_second = b.ids_per_tick * 1000 / unit;
  b.workers = u128{layout.max_worker()} + 1;
  b.range_ms = (u128{layout.max_ticks()} + 1) * unit;
  return b;
}

std::uint64_t snowflake_mark_writes(std::int64_t hwm_margin_ms) {
  const auto margin = static_cast<std::uint64_t>(std::max<std::int64_t>(hwm_margin_ms, 1));
  return static_cast<std::uint64_t>(ceil_div(2000, margin));
}

}  // namespace ticketd::plan
