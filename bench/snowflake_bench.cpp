// Snowflake and UUIDv7 generator throughput, in process. Figures, not assertions.
//
// With 12 sequence bits one worker can issue at most 4,096 IDs per 1 ms tick: 4,096,000 IDs/s.
// BM_SnowflakeSystemClock runs against the real clock and reports `vs_limit`, its rate as a
// fraction of that bound; BM_SnowflakeCpuCost steps a fake clock whenever a tick is full, so
// it shows what one try_next() costs when the clock is not the limit.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/snowflake_generator.h"
#include "server/core/uuidv7_generator.h"
#include "storage/memory_counter_store.h"

namespace ticketd {
namespace {

constexpr double kLayoutLimitPerSecond = 4'096'000.0;  // 2^12 IDs per 1 ms tick

// A Clock the benchmark steps by hand (tests/support/fake_clock.h is for tests only).
class SteppedClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_unix_ms() const override {
    return now_.load(std::memory_order_relaxed);
  }
  // Only moves forward, at the rate it is moved: its own reading serves as the monotonic one.
  [[nodiscard]] std::int64_t monotonic_ms() const override { return now_unix_ms(); }
  void advance_to(std::int64_t ms) {
    std::int64_t cur = now_.load(std::memory_order_relaxed);
    while (cur < ms && !now_.compare_exchange_weak(cur, ms)) {
    }
  }

 private:
  std::atomic<std::int64_t> now_{SystemClock{}.now_unix_ms()};
};

struct Engine {
  MemoryCounterStore store;
  GroupCommitter committer{store};
  std::shared_ptr<SnowflakeGenerator> generator;

  Engine(const Clock& clock, const char* name) {
    auto g = SnowflakeGenerator::open(
        SnowflakeOptions{.name = name, .layout = SnowflakeLayout::twitter(), .worker_id = 1}, store,
        committer, clock);
    if (!g) std::abort();
    generator = *g;
  }
};

SystemClock& system_clock() {
  static SystemClock clock;
  return clock;
}

Engine& system_engine() {
  static Engine e(system_clock(), "system");
  return e;
}

// Real clock, Twitter layout (12 sequence bits), one worker shared by the benchmark threads. A
// caller told to retry spins on the clock until retry_at, standing in for the front end's timer.
void BM_SnowflakeSystemClock(benchmark::State& state) {
  SnowflakeGenerator& g = *system_engine().generator;
  const Clock& clock = system_clock();
  std::int64_t retries = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (;;) {
      auto r = g.try_next();
      if (r.ok()) {
        benchmark::DoNotOptimize(r.id);
        break;
      }
      if (!r.retry_later()) std::abort();
      ++retries;
      while (clock.now_unix_ms() < r.retry_at_unix_ms) {
      }
    }
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
  state.SetItemsProcessed(state.iterations());
  // This thread's share of the layout's bound; summed over threads: the whole worker's.
  state.counters["vs_limit"] =
      static_cast<double>(state.iterations()) / elapsed.count() / kLayoutLimitPerSecond;
  state.counters["retries_per_id"] =
      benchmark::Counter(static_cast<double>(retries) / static_cast<double>(state.iterations()),
                         benchmark::Counter::kAvgThreads);
}
BENCHMARK(BM_SnowflakeSystemClock)->Threads(1)->Threads(2)->UseRealTime()->MinTime(2.0);

// The generator's own cost: a full tick moves the fake clock to retry_at at once.
void BM_SnowflakeCpuCost(benchmark::State& state) {
  static SteppedClock clock;
  static Engine engine(clock, "cpu");
  SnowflakeGenerator& g = *engine.generator;
  for (auto _ : state) {
    for (;;) {
      auto r = g.try_next();
      if (r.ok()) {
        benchmark::DoNotOptimize(r.id);
        break;
      }
      if (!r.retry_later()) std::abort();
      if (r.retry_at_unix_ms > clock.now_unix_ms()) {
        clock.advance_to(r.retry_at_unix_ms);
      } else {
        std::this_thread::yield();  // a high-water-mark write is in flight
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SnowflakeCpuCost)->Threads(1)->Threads(2)->UseRealTime();

// Past 2,048 to 4,096 IDs per ms the counter runs out and timestamps move ahead of the clock
// (RFC 9562 allows it); `ahead_ms` is how far the newest UUID is ahead at the end of the run.
void BM_UuidV7(benchmark::State& state) {
  static UuidV7Generator gen(system_clock());
  for (auto _ : state) benchmark::DoNotOptimize(gen.next());
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    state.counters["ahead_ms"] =
        static_cast<double>(uuidv7_unix_ms(gen.next()) - system_clock().now_unix_ms());
  }
}
BENCHMARK(BM_UuidV7)->Threads(1)->Threads(2)->UseRealTime();

void BM_UuidV7ToString(benchmark::State& state) {
  static UuidV7Generator gen(system_clock());
  for (auto _ : state) benchmark::DoNotOptimize(to_string(gen.next()));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UuidV7ToString)->UseRealTime();

}  // namespace
}  // namespace ticketd

BENCHMARK_MAIN();
