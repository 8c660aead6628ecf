#include "server/app/background_tasks.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "server/base/log.h"
#include "server/core/kind_module.h"
#include "server/core/snowflake_generator.h"
#include "server/net/asio_support.h"

namespace ticketd {
namespace asio = boost::asio;

namespace {

// Keeps every Snowflake high-water mark and ULID mark ahead of the clock (a durable write
// every few hundred ms per sequence, group-committed), through the kinds' modules.
asio::awaitable<void> refresh_high_water_marks(asio::io_context& ioc, TicketService& service) {
  asio::steady_timer timer(ioc);
  for (;;) {
    for (const auto& [_, handle] : service.handles()) kind_module(handle).refresh(handle);
    timer.expires_after(std::chrono::milliseconds(250));
    auto [ec] = co_await timer.async_wait(net::use_nothrow);
    if (ec) co_return;
  }
}

// Ends what is past its deadline in every sequence that keeps deadlines (gapless reservations
// whose TTL ran out, strict-order waits that timed out).
asio::awaitable<void> expire_deadlines(asio::io_context& ioc, TicketService& service) {
  asio::steady_timer timer(ioc);
  for (;;) {
    // Read each time: with the etcd engine the sequences appear once this instance leads.
    for (const auto& h : service.with_deadlines()) kind_module(h).expire_due(h);
    timer.expires_after(std::chrono::milliseconds(20));
    auto [ec] = co_await timer.async_wait(net::use_nothrow);
    if (ec) co_return;
  }
}

// Lease records past the retention, a bounded number per round, read and deleted on the
// engine's store-reads thread (never on an I/O thread).
void prune_leases(LeaseLog& leases, const LeaseRetention& retention) {
  constexpr std::size_t kBatch = 1000;
  constexpr int kMaxBatchesPerRound = 20;
  std::size_t total = 0;
  for (int i = 0; i < kMaxBatchesPerRound; ++i) {
    auto pruned = leases.prune(retention, kBatch);
    if (!pruned) {
      // A follower's fenced store, a full disk: the next round tries again.
      log::debug("lease retention: " + pruned.error().message);
      break;
    }
    total += *pruned;
    if (*pruned == 0) break;
  }
  if (total != 0) log::info("lease retention: pruned " + std::to_string(total) + " lease records");
}

// The directory lock keeps a second server out whatever happens to the files in it, but a
// deleted or replaced ticketd.lock means someone is working on the directory of a running
// server: said loudly, and the file (with this pid) written again for the next refusal's message.
void check_lock_file(DataDirLock& lock) {
  auto problem = lock.lock_file_problem();
  if (!problem) return;
  log::error(*problem +
             "; the data directory itself stays locked by this process, so a second ticketd is "
             "still refused. Never remove lock files of a running server");
  if (auto r = lock.replace_lock_file(); !r) {
    log::error("writing a new lock file failed: " + r.error().message);
  }
}

// Every 10 s closes an issue-rate window (peaks kept for backups: a short window scaled to a
// minute only overstates a burst, the safe side for a restore's skip); once a minute prunes
// lease records, the first time a second after start; checks the data directory's lock file.
asio::awaitable<void> maintain(asio::io_context& ioc, Engine& engine, LeaseLog& leases,
                               LeaseRetention retention) {
  asio::steady_timer timer(ioc);
  timer.expires_after(std::chrono::seconds(1));
  for (unsigned round = 0;; ++round) {
    auto [ec] = co_await timer.async_wait(net::use_nothrow);
    if (ec) co_return;
    if (round != 0) engine.rates().sample();
    if (auto* lock = engine.data_dir_lock()) {
      engine.store_reads().after(std::chrono::milliseconds(0), [lock] { check_lock_file(*lock); });
    }
    if (round % 6 == 0) {
      engine.store_reads().after(std::chrono::milliseconds(0),
                                 [&leases, retention] { prune_leases(leases, retention); });
    }
    timer.expires_after(std::chrono::seconds(round == 0 ? 9 : 10));
  }
}

}  // namespace

void spawn_background_tasks(asio::io_context& ioc, Engine& engine, LeaseLog& leases,
                            LeaseRetention retention) {
  TicketService& service = engine.service();
  asio::co_spawn(ioc, refresh_high_water_marks(ioc, service), net::log_on_exit("snowflake"));
  asio::co_spawn(ioc, expire_deadlines(ioc, service), net::log_on_exit("deadlines"));
  asio::co_spawn(ioc, maintain(ioc, engine, leases, retention), net::log_on_exit("maintenance"));
}

}  // namespace ticketd
