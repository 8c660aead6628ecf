#include "server/app/reload.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "server/core/sequence_spec.h"

namespace ticketd {
namespace {

config::Config base() {
  auto r = config::load_string(
      "data_dir: /var/lib/ticketd\n"
      "mysql:\n  users:\n    - { name: ticket, password: ticket }\n"
      "sequences:\n"
      "  - { name: T, kind: ticket }\n"
      "  - { name: G, kind: gapless }\n"
      "worker_pools:\n  - { name: p, worker_bits: 4 }\n",
      "t.yaml", validate_name);
  EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  return *r.config;
}

struct Case {
  const char* name;
  std::function<void(config::Config&)> change;
  std::vector<std::string> fixed;  // the first fragment of each expected entry
};

TEST(Reload, TellsWhichChangesCannotApplyWhileRunning) {
  const std::vector<Case> cases = {
      {"nothing", [](config::Config&) {}, {}},
      {"users", [](config::Config& c) { c.mysql.users.push_back({.name = "app"}); }, {}},
      {"default plugin",
       [](config::Config& c) {
         c.mysql.default_auth_plugin = config::AuthPlugin::kCachingSha2Password;
       },
       {}},
      {"tokens", [](config::Config& c) { c.http.tokens = {"0123456789abcdef"}; }, {}},
      {"log level", [](config::Config& c) { c.log_level = config::LogLevel::kWarn; }, {}},
      {"log format", [](config::Config& c) { c.log_format = config::LogFormat::kJson; }, {}},
      {"added sequence",
       [](config::Config& c) { c.sequences.push_back({.name = "New", .line = 40}); },
       {}},
      {"changed ticket sequence", [](config::Config& c) { c.sequences[0].start = 1000; }, {}},
      {"moved in the file", [](config::Config& c) { c.sequences[1].line = 99; }, {}},
      {"removed sequence", [](config::Config& c) { c.sequences.erase(c.sequences.begin()); }, {}},
      {"added pool",
       [](config::Config& c) { c.worker_pools.push_back({.name = "q", .size = 4}); },
       {}},
      {"data dir", [](config::Config& c) { c.data_dir = "/elsewhere"; }, {"data_dir"}},
      {"threads", [](config::Config& c) { c.threads = 7; }, {"threads"}},
      {"mysql listen", [](config::Config& c) { c.mysql.listen.port = 1; }, {"mysql.listen"}},
      {"http listen", [](config::Config& c) { c.http.listen.host = "0.0.0.0"; }, {"http.listen"}},
      {"mysql limit", [](config::Config& c) { c.mysql.max_connections = 5; }, {"mysql ("}},
      {"mysql tls", [](config::Config& c) { c.mysql.tls = config::TlsConfig{}; }, {"mysql.tls"}},
      {"lease retention", [](config::Config& c) { c.http.lease_retention_count = 5; }, {"http ("}},
      {"snowflake", [](config::Config& c) { c.snowflake.worker_id = 3; }, {"snowflake"}},
      {"storage",
       [](config::Config& c) { c.storage.engine = config::StorageEngine::kEtcd; },
       {"storage"}},
      {"backup", [](config::Config& c) { c.backup.dir = "/b"; }, {"backup"}},
      {"ha",
       [](config::Config& c) { c.ha.follower_http = config::FollowerHttp::kRedirect; },
       {"ha"}},
      {"security",
       [](config::Config& c) { c.security.strict_config_permissions = true; },
       {"security"}},
      {"kind",
       [](config::Config& c) { c.sequences[0].kind = SequenceKind::kGapless; },
       {"sequences.T.kind"}},
      {"changed gapless sequence",
       [](config::Config& c) { c.sequences[1].reservation_ttl = std::chrono::seconds(5); },
       {"sequences.G"}},
      {"removed pool", [](config::Config& c) { c.worker_pools.clear(); }, {"worker_pools.p"}},
      {"changed pool", [](config::Config& c) { c.worker_pools[0].size = 2; }, {"worker_pools.p"}},
      {"two at once",
       [](config::Config& c) {
         c.data_dir = "/x";
         c.mysql.listen.port = 2;
       },
       {"data_dir", "mysql.listen"}},
  };
  const config::Config running = base();
  for (const auto& c : cases) {
    config::Config next = running;
    c.change(next);
    const auto fixed = fixed_changes(running, next);
    ASSERT_EQ(fixed.size(), c.fixed.size()) << c.name << ": " << (fixed.empty() ? "" : fixed[0]);
    for (std::size_t i = 0; i < fixed.size(); ++i) {
      EXPECT_EQ(fixed[i].rfind(c.fixed[i], 0), 0u) << c.name << ": " << fixed[i];
    }
  }
}

TEST(Reload, WithTheEtcdEngineSequencesAndPoolsChangeOnlyAtTheNextStart) {
  config::Config running = base();
  running.storage.engine = config::StorageEngine::kEtcd;
  running.worker_pools.clear();
  config::Config added = running;
  added.sequences.push_back({.name = "New"});
  ASSERT_EQ(fixed_changes(running, added).size(), 1u);
  config::Config changed = running;
  changed.sequences[0].cache = 5;
  ASSERT_EQ(fixed_changes(running, changed).size(), 1u);
  config::Config pool = running;
  pool.worker_pools.push_back({.name = "render", .size = 4});
  const auto fixed = fixed_changes(running, pool);
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].rfind("worker_pools.render (added: with storage.engine etcd", 0), 0u)
      << fixed[0];
  config::Config users = running;
  users.mysql.users.push_back({.name = "app"});
  EXPECT_TRUE(fixed_changes(running, users).empty());
}

}  // namespace
}  // namespace ticketd
