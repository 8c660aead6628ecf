// Engine benchmarks: the cached next() path, next() with durable writes on RocksDB, hi-lo blocks
// and the latency of one synced ceiling write. Figures, not assertions: see bench/engine.sh.
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>

#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"
#include "storage/memory_counter_store.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {
namespace {

// One engine per store kind for the whole process, shared by benchmark threads.
struct Engine {
  std::unique_ptr<CounterStore> store;
  std::unique_ptr<GroupCommitter> committer;
  std::unique_ptr<TicketService> service;
  std::filesystem::path dir;

  std::shared_ptr<TicketSequence> sequence(const SequenceSpec& spec) {
    if (!service->exists(spec.name)) {
      if (!service->ensure_configured(spec)) std::abort();
    }
    return service->find(spec.name);
  }
};

Engine& rocks() {
  static Engine e = [] {
    Engine x;
    x.dir = std::filesystem::temp_directory_path() /
            ("ticketd-bench-" + std::to_string(std::random_device{}()));
    auto s = RocksDbCounterStore::open(x.dir.string());
    if (!s) std::abort();
    x.store = std::move(*s);
    x.committer = std::make_unique<GroupCommitter>(*x.store);
    x.service = std::make_unique<TicketService>(*x.store, *x.committer);
    if (!x.service->load()) std::abort();
    std::atexit([] { std::filesystem::remove_all(rocks().dir); });
    return x;
  }();
  return e;
}

Engine& memory() {
  static Engine e = [] {
    Engine x;
    x.store = std::make_unique<MemoryCounterStore>();
    x.committer = std::make_unique<GroupCommitter>(*x.store);
    x.service = std::make_unique<TicketService>(*x.store, *x.committer);
    return x;
  }();
  return e;
}

// Takes `count` values: the cached path first, as the front ends do; otherwise waits (futex,
// not a spin: on two cores a spinning caller would starve the committer thread).
inline std::uint64_t take(TicketSequence& seq, std::uint64_t count) {
  if (auto b = seq.try_take(count)) return b->first;
  std::atomic<std::uint64_t> got{0};
  seq.take(count, [&got](DetailedResult<Block> b) {
    got.store(b ? b->first : ~std::uint64_t{0}, std::memory_order_release);
    got.notify_one();
  });
  got.wait(0, std::memory_order_acquire);
  const auto v = got.load(std::memory_order_acquire);
  if (v == ~std::uint64_t{0}) std::abort();
  return v;
}

// The cached path alone: the ceiling is already far above, so no call waits for a write.
void BM_NextCachedPath(benchmark::State& state) {
  static std::once_flag once;
  static std::shared_ptr<TicketSequence> seq;
  std::call_once(once, [] {
    // A cache of 2^40 values: the first take writes a ceiling that covers every value of the
    // run, so what is measured is the cached path alone (lock, check, add).
    seq = std::make_shared<TicketSequence>(
        SequenceRecord{SequenceSpec{.name = "cached", .cache = std::uint64_t{1} << 40}, 0},
        *memory().committer);
    take(*seq, 1);
  });
  for (auto _ : state) benchmark::DoNotOptimize(take(*seq, 1));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NextCachedPath)->Threads(1)->Threads(2)->UseRealTime();

// next() end to end on RocksDB with cache 1000: one synced write per 1,000 values, prefetched.
void BM_NextRocksDbCache1000(benchmark::State& state) {
  auto seq = rocks().sequence(SequenceSpec{.name = "cache1000", .cache = 1000});
  const auto writes0 = rocks().committer->stats().commits;
  for (auto _ : state) benchmark::DoNotOptimize(take(*seq, 1));
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    const auto writes = rocks().committer->stats().commits - writes0;
    state.counters["synced_writes"] = static_cast<double>(writes);
    state.counters["values_per_write"] =
        writes == 0 ? 0.0
                    : static_cast<double>(state.iterations() * state.threads()) /
                          static_cast<double>(writes);
  }
}
BENCHMARK(BM_NextRocksDbCache1000)->Threads(1)->Threads(2)->UseRealTime();

// Hi-lo: one call takes a block of 1,000 values (the front ends' lease building block).
void BM_NextBlock1000(benchmark::State& state) {
  auto seq = rocks().sequence(SequenceSpec{.name = "blocks", .cache = 1000});
  for (auto _ : state) benchmark::DoNotOptimize(take(*seq, 1000));
  state.SetItemsProcessed(state.iterations() * 1000);
  state.counters["blocks_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_NextBlock1000)->UseRealTime();

// cache 1: every next() waits for its own synced write: the latency of one ceiling write.
void BM_SyncedCeilingWrite(benchmark::State& state) {
  auto seq = rocks().sequence(SequenceSpec{.name = "cache1", .cache = 1});
  for (auto _ : state) benchmark::DoNotOptimize(take(*seq, 1));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SyncedCeilingWrite)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ticketd

BENCHMARK_MAIN();
