// Child of the crash test: allocates values as fast as it can and reports each one on stdout only
// after the engine returned it. The parent kill -9s it at random moments and checks that no value
// is ever reported twice across restarts.
//
// Usage: crash_child DATA_DIR
// Output lines: "<sequence> <first> <step> <count>\n", one write(2) per line.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/app/data_dir_lock.h"
#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"
#include "storage/rocksdb_counter_store.h"

using namespace ticketd;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: crash_child DATA_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  auto lock = DataDirLock::acquire(dir);
  if (!lock) {
    std::fprintf(stderr, "%s\n", lock.error().message.c_str());
    return 1;
  }
  auto store = RocksDbCounterStore::open(dir);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  GroupCommitter committer(**store);
  TicketService service(**store, committer);
  if (auto r = service.load(); !r) return 1;
  // Three sequences with different caches and increment/offset pairs; one thread each, so each
  // sequence's lines come out in issue order.
  const std::vector<SequenceSpec> specs = {
      {.name = "big_cache", .cache = 1000},
      {.name = "even", .increment = 2, .offset = 2, .cache = 10},
      {.name = "every_value_synced", .increment = 3, .offset = 1, .cache = 1},
  };
  for (const auto& s : specs) {
    if (auto r = service.ensure_configured(s); !r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return 1;
    }
  }
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(std::random_device{}());
      const auto& name = specs[t].name;
      for (;;) {
        // Mostly singles, sometimes a block of up to 2,500 (larger than the biggest cache).
        const std::uint64_t count = rng() % 4 == 0 ? 1 + rng() % 2500 : 1;
        auto b = next_and_wait(service, name, count);
        if (!b) {
          std::fprintf(stderr, "error: %s\n", b.error().message.c_str());
          _exit(1);
        }
        const std::string line = name + " " + std::to_string(b->first) + " " +
                                 std::to_string(b->step) + " " + std::to_string(b->count) + "\n";
        if (::write(STDOUT_FILENO, line.data(), line.size()) < 0) _exit(1);
      }
    });
  }
  for (auto& th : threads) th.join();
}
