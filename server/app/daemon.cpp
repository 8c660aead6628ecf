#include "server/app/daemon.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/app/background_tasks.h"
#include "server/app/election.h"
#include "server/app/engine.h"
#include "server/app/front_ends.h"
#include "server/app/reload.h"
#include "server/app/service_notify.h"
#include "server/base/exit_code.h"
#include "server/base/log.h"

namespace ticketd {
namespace asio = boost::asio;

namespace {

int failed(const StartupError& e) {
  log::error(e.message);
  return exit_status(e.exit_code);
}

LeaseRetention lease_retention(const config::Config& c) {
  LeaseRetention r;
  r.max_age_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(c.http.lease_retention).count();
  r.keep_count = c.http.lease_retention_count;
  return r;
}

unsigned thread_count(const config::Config& c) {
  return c.threads != 0 ? c.threads : std::max(1u, std::thread::hardware_concurrency());
}

// Tells the service manager a SIGHUP reload is over, and logs what it applied or why it
// changed nothing.
void report_reload_result(DetailedResult<std::vector<std::string>> r) {
  notify_ready();
  if (!r) {
    log::error(r.error().message);
    return;
  }
  std::string what;
  for (const auto& a : *r) what += (what.empty() ? "" : ", ") + a;
  log::info("reload: applied " + what);
}

// Reloads the config file on each SIGHUP, until `hangups` is cancelled.
void reload_on_hangup(asio::signal_set& hangups, Reloader& reloader,
                      const std::string& config_path) {
  hangups.async_wait([&hangups, &reloader, &config_path](const boost::system::error_code& ec, int) {
    if (ec) return;
    log::info("signal 1 (SIGHUP): reloading " + config_path);
    notify_reloading();
    reloader.reload_async(report_reload_result);
    reload_on_hangup(hangups, reloader, config_path);
  });
}

}  // namespace

int Daemon::run() {
  // The store, the group committer and the registry of sequences (loaded now with RocksDB,
  // on winning the election with etcd), the Snowflake generators and the worker pools.
  // Certificates first: a bad one is found before the data dir is opened.
  auto tls = load_tls(config_);
  if (!tls) return failed(tls.error());
  auto opened = Engine::open(config_);
  if (!opened) return failed(opened.error());
  Engine& engine = **opened;
  FrontEnds front_ends(config_, engine, *tls);

  // Declared after everything a session references: destroying the I/O contexts destroys the
  // frames of sessions still suspended at exit, and their destructors report to the registries,
  // the metrics and the executor, which must still be alive then.
  net::IoPool pool(thread_count(config_));
  asio::io_context& ioc = pool.main();
  auto listeners = Listeners::bind(pool, config_, front_ends);
  if (!listeners) return failed(listeners.error());
  listeners->start();

  // SIGHUP and POST /v1/admin/reload re-read the config file (off the I/O threads).
  Reloader reloader(source_, config_, engine, front_ends);
  front_ends.http_deps.reload = [&reloader](Reloader::Done done) {
    reloader.reload_async(std::move(done));
  };
  asio::signal_set hangups(ioc, SIGHUP);
  reload_on_hangup(hangups, reloader, source_.path);

  auto shut_down = [&] { begin_shutdown(pool, *listeners, front_ends); };
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    log::info("signal " + std::to_string(sig) + ": shutting down");
    hangups.cancel();
    notify_stopping();
    shut_down();
  });

  // storage.engine etcd: serve once elected; a deposed leader shuts down and is re-executed.
  std::unique_ptr<EtcdLeaderElection> election;
  std::atomic<bool> deposed{false};
  election = start_election(config_, engine, front_ends, *listeners, [&] {
    deposed = true;
    asio::post(ioc, shut_down);
  });
  log::info("ticketd ready: data_dir " + config_.data_dir + ", " +
            std::to_string(engine.service().describe_all().size()) + " sequences");

  spawn_background_tasks(ioc, engine, front_ends.leases, lease_retention(config_));
  // Posted, so the service manager hears READY=1 once the I/O threads run the accept loops.
  asio::post(ioc, [] { notify_ready(); });
  pool.run();

  // Resigns (revokes the lease) when still leading, so a standby takes over at once; first
  // the Snowflake and ULID marks come down to the newest ID (fenced: only while still leading),
  // so the next leader does not wait out the margin.
  if (election) {
    engine.close_time_marks();
    election->stop();
  }
  reloader.stop();
  engine.stop();
  log::info("ticketd stopped");
  return exit_status(deposed ? ExitCode::kRestartAsFollower : ExitCode::kOk);
}

}  // namespace ticketd
