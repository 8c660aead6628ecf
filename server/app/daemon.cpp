#include "server/app/daemon.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "server/app/data_dir_lock.h"
#include "server/base/log.h"
#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {
namespace asio = boost::asio;

namespace {

SequenceSpec to_spec(const config::SequenceConfig& s) {
  SequenceSpec spec;
  spec.name = s.name;
  spec.kind = parse_kind(s.kind).value_or(SequenceKind::kTicket);
  spec.start = s.start;
  spec.increment = s.increment;
  spec.offset = s.offset;
  spec.max_value = s.max_value == 0 ? kDefaultMaxValue : s.max_value;
  spec.cache = s.cache;
  return spec;
}

}  // namespace

int Daemon::run() {
  auto lock = DataDirLock::acquire(config_.data_dir);
  if (!lock) {
    log::error(lock.error().message);
    return 1;
  }
  auto store = RocksDbCounterStore::open(config_.data_dir);
  if (!store) {
    log::error(store.error().message);
    return 1;
  }
  GroupCommitter committer(**store);
  TicketService service(**store, committer);
  if (auto r = service.load(); !r) {
    log::error("loading sequences: " + r.error().message);
    return 1;
  }
  for (const auto& s : config_.sequences) {
    if (auto r = service.ensure_configured(to_spec(s)); !r) {
      log::error("config sequence '" + s.name + "': " + r.error().message);
      return 1;
    }
  }
  log::info("ticketd ready: data_dir " + config_.data_dir + ", " +
            std::to_string(service.list().size()) + " sequences");

  const unsigned threads =
      config_.threads != 0 ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  asio::io_context ioc(static_cast<int>(threads));
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    log::info("signal " + std::to_string(sig) + ": shutting down");
    ioc.stop();
  });

  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();

  // Everything accepted has been answered or failed; commit what is queued, then close.
  committer.stop();
  log::info("ticketd stopped");
  return 0;
}

}  // namespace ticketd
