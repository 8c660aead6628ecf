#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "config/config.h"
#include "server/base/gapless_bounds.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_spec.h"

namespace ticketd::config {
namespace {

LoadResult load(const std::string& text) { return load_string(text, "t.yaml", validate_name); }

// Asserts the load failed with an error containing every fragment given.
void expect_error(const std::string& text, std::initializer_list<std::string> fragments) {
  auto r = load(text);
  ASSERT_FALSE(r.config) << text;
  ASSERT_FALSE(r.errors.empty());
  std::string all;
  for (const auto& e : r.errors) all += e + "\n";
  for (const auto& f : fragments) EXPECT_NE(all.find(f), std::string::npos) << f << " in\n" << all;
}

TEST(ConfigLoader, ShippedConfigLoads) {
  auto r = load_file(std::string(TICKETD_SOURCE_DIR) + "/config/ticketd.yaml", validate_name);
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const auto& c = *r.config;
  EXPECT_EQ(c.data_dir, "./data");
  EXPECT_EQ(c.mysql.listen.to_string(), "127.0.0.1:3306");
  EXPECT_EQ(c.mysql.database, "tickets");
  ASSERT_EQ(c.mysql.users.size(), 1u);
  EXPECT_EQ(c.mysql.users[0].name, "ticket");
  EXPECT_EQ(c.http.listen.port, 8080);
  EXPECT_TRUE(c.http.tokens.empty());
  ASSERT_EQ(c.sequences.size(), 2u);
  EXPECT_EQ(c.sequences[0].name, "Tickets64");
  EXPECT_EQ(c.sequences[0].increment, 1u);
  EXPECT_EQ(c.sequences[0].cache, 1000u);
  EXPECT_EQ(c.sequences[1].increment, 2u);
  EXPECT_EQ(c.sequences[1].max_value, 4294967295u);
  EXPECT_TRUE(check_exposure(c).empty());
}

TEST(ConfigLoader, DefaultsApplyToSequencesWherever_DefaultsAppear) {
  auto r = load(
      "sequences:\n  - { name: A }\n  - { name: B, increment: 5, offset: 5 }\n"
      "defaults:\n  auto_increment_increment: 2\n  auto_increment_offset: 2\n  cache: 50\n");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->sequences[0].increment, 2u);
  EXPECT_EQ(r.config->sequences[0].offset, 2u);
  EXPECT_EQ(r.config->sequences[0].cache, 50u);
  EXPECT_EQ(r.config->sequences[1].increment, 5u);
}

TEST(ConfigLoader, UnsetKeysGetDefaults) {
  auto r = load("data_dir: /tmp/x\n");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->mysql.wait_timeout, std::chrono::seconds(28800));
}

TEST(ConfigLoader, ErrorsNameTheKeyAndTheLine) {
  expect_error("data_dir: x\nmysqll:\n  listen: 1\n", {"t.yaml:2: mysqll: unknown key"});
  expect_error("mysql:\n  listen: 127.0.0.1:3306\n  bogus: 1\n",
               {"t.yaml:3: mysql.bogus: unknown key"});
  expect_error("mysql:\n  max_connections: lots\n",
               {"t.yaml:2: mysql.max_connections: expected a non-negative integer"});
  expect_error("mysql:\n  listen: nowhere\n", {"t.yaml:2: mysql.listen: expected HOST:PORT"});
  expect_error("sequences:\n  - { name: A, increment: 2, offset: 3 }\n",
               {"t.yaml:2: sequences[0].offset: offset 3 is greater than increment 2"});
  expect_error(
      "sequences:\n  - { name: A }\n  - { name: A }\n",
      {"t.yaml:3: sequences[1].name: duplicate sequence name 'A' (first defined on line 2)"});
  expect_error("sequences:\n  - { name: G, kind: gapless, order: sorted }\n",
               {"sequences[0].order: unknown order 'sorted'"});
  expect_error("sequences:\n  - { name: T, kind: ticket, order: strict }\n",
               {"sequences[0].order: not used by kind ticket"});
  // Each kind's row names the keys it takes: the rest are refused, never silently ignored.
  expect_error("sequences:\n  - { name: S, kind: snowflake, start: 5 }\n",
               {"sequences[0].start: not used by kind snowflake"});
  expect_error("sequences:\n  - { name: G, kind: gapless, cache: 10 }\n",
               {"sequences[0].cache: not used by kind gapless"});
  expect_error("sequences:\n  - { name: G, kind: gapless, max_rate: 10 }\n",
               {"sequences[0].max_rate: not used by kind gapless"});
  expect_error("sequences:\n  - { name: X, kind: uuid }\n",
               {"sequences[0].kind: unknown kind 'uuid' (expected ticket, gapless, snowflake, "
                "uuidv7 or ulid)"});
  expect_error("sequences:\n  - { name: L, kind: ulid, cache: 10 }\n",
               {"sequences[0].cache: not used by kind ulid"});
  expect_error(
      "sequences:\n  - { name: G, kind: gapless, reservation_ttl_ms: 10, "
      "max_reservation_ttl_ms: 5 }\n",
      {"reservation_ttl_ms is greater than max_reservation_ttl_ms"});
  expect_error("sequences:\n  - { name: G, kind: uuid }\n", {"unknown kind 'uuid'"});
  expect_error("sequences:\n  - { name: A, colour: red }\n", {"sequences[0].colour: unknown key"});
  expect_error("sequences:\n  - { kind: ticket }\n", {"sequences[0].name"});
  expect_error("sequences:\n  - { name: A, start: 10, max_value: 5 }\n", {"max_value is less"});
  expect_error("defaults:\n  auto_increment_increment: 70000\n", {"between 1 and 65535"});
  expect_error("http:\n  tokens: [short]\n", {"http.tokens[0]"});
  expect_error("mysql:\n  users:\n    - { name: '' , password: x }\n", {"no anonymous logins"});
  expect_error("threads: [1]\n", {"threads: expected a non-negative integer"});
  expect_error("data_dir: [unclosed\n", {"YAML syntax error"});
}

// mysqld's net_write_timeout (60 s) and connect_timeout (10 s) were constants of the session.
TEST(ConfigLoader, MySqlWriteAndConnectTimeoutsAreSettings) {
  auto defaults = load("data_dir: ./data\n");
  ASSERT_TRUE(defaults.config);
  EXPECT_EQ(defaults.config->mysql.net_write_timeout, std::chrono::seconds(60));
  EXPECT_EQ(defaults.config->mysql.connect_timeout, std::chrono::seconds(10));
  auto r = load("mysql:\n  net_write_timeout: 5\n  connect_timeout: 3\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.config->mysql.net_write_timeout, std::chrono::seconds(5));
  EXPECT_EQ(r.config->mysql.connect_timeout, std::chrono::seconds(3));
  expect_error("mysql:\n  net_write_timeout: 0\n", {"t.yaml:2: mysql.net_write_timeout: must be"});
  expect_error("mysql:\n  connect_timeout: 0\n", {"t.yaml:2: mysql.connect_timeout: must be"});
}

TEST(ConfigLoader, MySqlReadTimeoutAndMemoryBudgets) {
  auto defaults = load("data_dir: ./data\n");
  ASSERT_TRUE(defaults.config);
  EXPECT_EQ(defaults.config->mysql.net_read_timeout, std::chrono::seconds(30));
  EXPECT_EQ(defaults.config->mysql.connection_memory_limit, 64u * 1024 * 1024);
  EXPECT_EQ(defaults.config->mysql.global_connection_memory_limit, 1024u * 1024 * 1024);
  auto r = load(
      "mysql:\n  net_read_timeout: 1\n  connection_memory_limit: 33554432\n"
      "  global_connection_memory_limit: 67108864\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.config->mysql.net_read_timeout, std::chrono::seconds(1));
  EXPECT_EQ(r.config->mysql.connection_memory_limit, 33554432u);
  EXPECT_EQ(r.config->mysql.global_connection_memory_limit, 67108864u);
  expect_error("mysql:\n  net_read_timeout: 0\n", {"t.yaml:2: mysql.net_read_timeout: must be"});
  expect_error("mysql:\n  connection_memory_limit: 10\n",
               {"t.yaml:2: mysql.connection_memory_limit: must be"});
}

TEST(ConfigLoader, LogLevelAndFormatAreWords) {
  auto defaults = load("data_dir: ./data\n");
  ASSERT_TRUE(defaults.config);
  EXPECT_EQ(defaults.config->log_level, LogLevel::kInfo);
  EXPECT_EQ(defaults.config->log_format, LogFormat::kText);
  auto json = load("log_format: json\nlog_level: debug\n");
  ASSERT_TRUE(json.config) << (json.errors.empty() ? "" : json.errors[0]);
  EXPECT_EQ(json.config->log_format, LogFormat::kJson);
  EXPECT_EQ(json.config->log_level, LogLevel::kDebug);
  auto text = load("log_format: text\n");
  ASSERT_TRUE(text.config);
  EXPECT_EQ(text.config->log_format, LogFormat::kText);
  for (const char* bad : {"JSON", "logfmt", "\"\"", "json5", "1"}) {
    expect_error(std::string("data_dir: x\nlog_format: ") + bad + "\n",
                 {"t.yaml:2: log_format: expected text or json"});
  }
  expect_error("log_format: [json]\n", {"t.yaml:1: log_format: expected a string"});
  expect_error("log_level: verbose\n",
               {"t.yaml:1: log_level: expected debug, info, warn or error"});
}

TEST(ConfigLoader, BackupDirAndLeaseRetention) {
  auto defaults = load("data_dir: ./data\n");
  ASSERT_TRUE(defaults.config);
  EXPECT_TRUE(defaults.config->backup.dir.empty());
  EXPECT_EQ(defaults.config->http.lease_retention, std::chrono::hours(24 * 30));
  EXPECT_EQ(defaults.config->http.lease_retention_count, 0u);
  auto days = load("backup:\n  dir: /srv/backups\nhttp:\n  lease_retention: 7d\n");
  ASSERT_TRUE(days.config) << (days.errors.empty() ? "" : days.errors[0]);
  EXPECT_EQ(days.config->backup.dir, "/srv/backups");
  EXPECT_EQ(days.config->http.lease_retention, std::chrono::hours(24 * 7));
  auto count = load("http:\n  lease_retention: 100000\n");
  ASSERT_TRUE(count.config);
  EXPECT_EQ(count.config->http.lease_retention_count, 100000u);
  for (const char* bad : {"0", "0d", "-3d", "7 days", "d", "36501d"}) {
    expect_error(std::string("http:\n  lease_retention: ") + bad + "\n",
                 {"t.yaml:2: http.lease_retention: expected a number of days"});
  }
  expect_error("backup:\n  dir: \"\"\n", {"backup.dir: must not be empty"});
  expect_error("backup:\n  path: /x\n", {"backup.path"});
}

TEST(ConfigLoader, ReportsEveryErrorAtOnce) {
  auto r = load("bogus: 1\nmysql:\n  listen: x\nsequences:\n  - { name: A, offset: 9 }\n");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(r.errors.size(), 3u);
}

TEST(ConfigLoader, MissingFileIsAClearError) {
  auto r = load_file("/nonexistent/ticketd.yaml", validate_name);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("cannot read"), std::string::npos);
}

TEST(ConfigLoader, GaplessSequenceSettings) {
  auto r = load_string(
      "sequences:\n  - { name: Invoices, kind: gapless, order: strict, reservation_ttl_ms: 900,"
      " strict_wait_ms: 70 }\n  - { name: Credit, kind: gapless }\n",
      "t.yaml", validate_name);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front();
  const auto& s = r.config->sequences;
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, SequenceKind::kGapless);
  EXPECT_EQ(s[0].order, GaplessOrder::kStrict);
  EXPECT_EQ(s[0].reservation_ttl, std::chrono::milliseconds(900));
  EXPECT_EQ(s[0].strict_wait, std::chrono::milliseconds(70));
  EXPECT_EQ(s[1].order, GaplessOrder::kRelaxed);
  EXPECT_EQ(s[1].reservation_ttl, std::chrono::milliseconds(30000));
}

// The file takes what a gapless sequence created at run time takes: both read the bounds from
// server/base/gapless_bounds.h, and the core's validate() accepts what the loader accepted.
TEST(ConfigLoader, GaplessBoundsAreTheCoresBounds) {
  const std::string ttl = std::to_string(kMaxReservationTtlMs);
  const std::string wait = std::to_string(kMaxStrictWaitMs);
  auto r = load("sequences:\n  - { name: G, kind: gapless, reservation_ttl_ms: " + ttl +
                ", max_reservation_ttl_ms: " + ttl + ", strict_wait_ms: " + wait + " }\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const auto& g = r.config->sequences.at(0);
  SequenceDefinition d{.spec = SequenceSpec{.name = "G", .kind = ticketd::SequenceKind::kGapless},
                       .options = GaplessOptions{
                           .reservation_ttl_ms = g.reservation_ttl.count(),
                           .max_reservation_ttl_ms = g.max_reservation_ttl.count(),
                           .strict_wait_ms = g.strict_wait.count(),
                       }};
  EXPECT_EQ(validate(d), "");
  const std::string ttl_over = std::to_string(kMaxReservationTtlMs + 1);
  expect_error(
      "sequences:\n  - { name: G, kind: gapless, max_reservation_ttl_ms: " + ttl_over + " }\n",
      {"sequences[0].max_reservation_ttl_ms: must be between 1 and " + ttl});
  expect_error("sequences:\n  - { name: G, kind: gapless, reservation_ttl_ms: " + ttl_over + " }\n",
               {"sequences[0].reservation_ttl_ms: must be between 1 and " + ttl});
  expect_error("sequences:\n  - { name: G, kind: gapless, strict_wait_ms: " +
                   std::to_string(kMaxStrictWaitMs + 1) + " }\n",
               {"sequences[0].strict_wait_ms: must be between 1 and " + wait});
}

TEST(ConfigLoader, SnowflakeSection) {
  auto r = load(
      "snowflake:\n  epoch: \"2026-01-01T00:00:00.250Z\"\n  time_bits: 39\n  worker_bits: 16\n"
      "  sequence_bits: 8\n  time_unit_ms: 10\n  order: time_sequence_worker\n  worker_id: { "
      "source: env, variable: POD }\n"
      "  clock: { policy: logical }\nsequences:\n  - { name: S, kind: snowflake }\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const auto& sf = r.config->snowflake;
  EXPECT_EQ(sf.epoch_unix_ms, 1767225600250);
  EXPECT_EQ(sf.time_bits, 39);
  EXPECT_EQ(sf.time_unit, std::chrono::milliseconds(10));
  EXPECT_EQ(sf.order, SnowflakeFieldOrder::kTimeSequenceWorker);
  EXPECT_EQ(sf.worker_source, WorkerSource::kEnv);
  EXPECT_EQ(sf.worker_env, "POD");
  EXPECT_EQ(sf.clock_policy, ClockPolicy::kLogical);
  EXPECT_EQ(r.config->sequences[0].kind, SequenceKind::kSnowflake);
  expect_error("snowflake:\n  sequence_bits: 13\n", {"snowflake: time_bits + worker_bits"});
  expect_error("snowflake:\n  epoch: yesterday\n", {"t.yaml:2: snowflake.epoch"});
  expect_error("snowflake:\n  order: random\n", {"snowflake.order"});
  expect_error("snowflake:\n  clock: { policy: pray }\n", {"snowflake.clock.policy"});
  expect_error("snowflake:\n  worker_id: { source: etcd }\n",
               {"t.yaml:2: snowflake.worker_id.endpoints: source etcd needs a list"});
  expect_error("snowflake:\n  worker_id: { source: zookeeper }\n",
               {"expected static, env or etcd"});
  expect_error("snowflake:\n  worker_id: { source: env }\n", {"needs the name"});
}

TEST(ConfigLoader, Uuidv7SequencesAreAcceptedWithoutCounterKeys) {
  auto r = load("sequences:\n  - { name: U, kind: uuidv7 }\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.config->sequences[0].kind, SequenceKind::kUuidV7);
  expect_error("sequences:\n  - { name: U, kind: uuidv7, start: 5 }\n",
               {"t.yaml:2: sequences[0].start: not used by kind uuidv7"});
  expect_error("sequences:\n  - { name: U, kind: uuidv7,\n      cache: 5 }\n",
               {"t.yaml:3: sequences[0].cache: not used by kind uuidv7"});
}

TEST(ConfigLoader, WorkerPoolsSection) {
  auto r = load(
      "worker_pools:\n  - { name: orders, worker_bits: 10 }\n"
      "  - { name: small, size: 3, min_ttl_s: 2, max_ttl_s: 60, default_ttl_s: 5 }\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const auto& pools = r.config->worker_pools;
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].name, "orders");
  EXPECT_EQ(pools[0].size, 1024u);
  EXPECT_EQ(pools[0].min_ttl, std::chrono::seconds(1));
  EXPECT_EQ(pools[0].default_ttl, std::chrono::seconds(10));
  EXPECT_EQ(pools[0].max_ttl, std::chrono::seconds(300));
  EXPECT_EQ(pools[0].line, 2);
  EXPECT_EQ(pools[1].size, 3u);
  EXPECT_EQ(pools[1].min_ttl, std::chrono::seconds(2));
  EXPECT_EQ(pools[1].default_ttl, std::chrono::seconds(5));
  EXPECT_EQ(pools[1].max_ttl, std::chrono::seconds(60));
}

TEST(ConfigLoader, WorkerPoolErrorsNameTheKeyAndTheLine) {
  expect_error("worker_pools:\n  - { name: a }\n",
               {"t.yaml:2: worker_pools[0].size: a worker pool needs size or worker_bits"});
  expect_error("worker_pools:\n  - { name: a, size: 4, worker_bits: 2 }\n",
               {"t.yaml:2: worker_pools[0].worker_bits: give size or worker_bits, not both"});
  expect_error("worker_pools:\n  - { name: a, size: 0 }\n",
               {"worker_pools[0].size: must be between 1 and 65536"});
  expect_error("worker_pools:\n  - { name: a, worker_bits: 17 }\n",
               {"worker_pools[0].worker_bits: must be between 0 and 16"});
  expect_error("worker_pools:\n  - { name: a, size: 4, min_ttl_s: 20 }\n",
               {"t.yaml:2: worker_pools[0]: TTLs must satisfy min_ttl_s <= default_ttl_s"});
  expect_error("worker_pools:\n  - { name: a, size: 4, max_ttl_s: 90000 }\n",
               {"worker_pools[0].max_ttl_s: must be between 1 and 86400"});
  expect_error("worker_pools:\n  - { name: a, size: 4 }\n  - { name: a, size: 2 }\n",
               {"t.yaml:3: worker_pools[1].name: duplicate worker pool name 'a' (first defined "
                "on line 2)"});
  expect_error("worker_pools:\n  - { name: 'a/b', size: 4 }\n", {"not a valid name"});
  expect_error("worker_pools:\n  - { size: 4 }\n", {"worker_pools[0].name"});
  expect_error("worker_pools:\n  - { name: a, size: 4, ttl: 3 }\n",
               {"t.yaml:2: worker_pools[0].ttl: unknown key"});
  expect_error("worker_pools: { name: a }\n", {"worker_pools: expected a list"});
}

TEST(ConfigLoader, SnowflakeWorkerIdFromEtcd) {
  auto r = load(
      "snowflake:\n  worker_id:\n    source: etcd\n"
      "    endpoints: [http://127.0.0.1:2379, \"http://[::1]:2380\"]\n"
      "    prefix: /svc/workers/\n    ttl_s: 3\n    margin_ms: 700\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const auto& sf = r.config->snowflake;
  EXPECT_EQ(sf.worker_source, WorkerSource::kEtcd);
  EXPECT_EQ(sf.etcd_endpoints,
            (std::vector<std::string>{"http://127.0.0.1:2379", "http://[::1]:2380"}));
  EXPECT_EQ(sf.etcd_prefix, "/svc/workers/");
  EXPECT_EQ(sf.etcd_ttl, std::chrono::seconds(3));
  EXPECT_EQ(sf.etcd_margin, std::chrono::milliseconds(700));

  auto defaults = load("snowflake:\n  worker_id: { source: etcd, endpoints: [http://e:2379] }\n");
  ASSERT_TRUE(defaults.config) << (defaults.errors.empty() ? "" : defaults.errors[0]);
  EXPECT_EQ(defaults.config->snowflake.etcd_prefix, "/ticketd/workers/");
  EXPECT_EQ(defaults.config->snowflake.etcd_ttl, std::chrono::seconds(10));
  EXPECT_EQ(defaults.config->snowflake.etcd_margin, std::chrono::milliseconds(0));

  // Every problem at once, each with its line.
  auto bad = load(
      "snowflake:\n  worker_id:\n    source: etcd\n"
      "    endpoints: [ftp://e:2379, http://e]\n"
      "    prefix: /no-slash\n    ttl_s: 1\n    margin_ms: 9000\n    lease: x\n");
  ASSERT_FALSE(bad.config);
  std::string all;
  for (const auto& e : bad.errors) all += e + "\n";
  for (const char* f : {"t.yaml:4: snowflake.worker_id.endpoints[0]: expected http://HOST:PORT or "
                        "https://HOST:PORT, got 'ftp://e:2379'",
                        "t.yaml:4: snowflake.worker_id.endpoints[1]",
                        "t.yaml:5: snowflake.worker_id.prefix: must be non-empty and end with",
                        "t.yaml:6: snowflake.worker_id.ttl_s: must be between 2 and 3600",
                        "t.yaml:7: snowflake.worker_id.margin_ms: must be at most half the TTL",
                        "t.yaml:8: snowflake.worker_id.lease: unknown key"}) {
    EXPECT_NE(all.find(f), std::string::npos) << f << " in\n" << all;
  }
}

TEST(ParseUtcMs, AcceptsIsoUtcOnly) {
  EXPECT_EQ(parse_utc_ms("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_utc_ms("2026-01-01T00:00:00Z"), 1767225600000);
  EXPECT_EQ(parse_utc_ms("2026-01-01T00:00:01.5Z"), 1767225601500);
  EXPECT_FALSE(parse_utc_ms("2026-01-01T00:00:00"));
  EXPECT_FALSE(parse_utc_ms("2026-01-01 00:00:00Z"));
  EXPECT_FALSE(parse_utc_ms("2026-13-01T00:00:00Z"));
  EXPECT_FALSE(parse_utc_ms("2026-01-01T00:00:00+01:00"));
}

TEST(ListenAddress, Parses) {
  EXPECT_EQ(parse_listen("127.0.0.1:3306")->port, 3306);
  EXPECT_EQ(parse_listen("[::1]:80")->host, "::1");
  EXPECT_EQ(parse_listen("0.0.0.0:1")->host, "0.0.0.0");
  EXPECT_FALSE(parse_listen("127.0.0.1"));
  EXPECT_FALSE(parse_listen("127.0.0.1:70000"));
  EXPECT_FALSE(parse_listen("::1:80"));
  EXPECT_FALSE(parse_listen(":80"));
}

TEST(Exposure, RefusesDefaultPasswordOrTokenlessHttpOffLoopback) {
  Config c;
  c.mysql.users.push_back({"ticket", kDefaultPassword});
  EXPECT_TRUE(check_exposure(c).empty());
  c.mysql.listen.host = "0.0.0.0";
  auto p = check_exposure(c);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("default or an empty password"), std::string::npos);
  EXPECT_EQ(p[0].find(kDefaultPassword + std::string(",")), std::string::npos);  // no secret
  c.mysql.users[0].password = "a-real-secret";
  EXPECT_TRUE(check_exposure(c).empty());
  c.http.listen.host = "10.0.0.1";
  p = check_exposure(c);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("http.tokens is empty"), std::string::npos);
  c.http.tokens.push_back("0123456789abcdef0123");
  EXPECT_TRUE(check_exposure(c).empty());
}

TEST(ConfigLoader, EtcdStorageLoads) {
  auto r = load(
      "storage:\n  engine: etcd\n  endpoints: [http://127.0.0.1:2379, http://10.0.0.2:22379]\n"
      "  prefix: /ticketd/prod/\n  leader_ttl_s: 3\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.config->storage.engine, StorageEngine::kEtcd);
  EXPECT_EQ(r.config->storage.endpoints.size(), 2u);
  EXPECT_EQ(r.config->storage.prefix, "/ticketd/prod/");
  EXPECT_EQ(r.config->storage.leader_ttl, std::chrono::seconds(3));
}

TEST(ConfigLoader, RocksDbIsTheDefaultEngine) {
  auto r = load("data_dir: /tmp/x\n");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->storage.engine, StorageEngine::kRocksDb);
}

TEST(ConfigLoader, EtcdStorageErrorsNameKeyAndLine) {
  expect_error("storage:\n  engine: zookeeper\n", {"t.yaml:2: storage.engine", "rocksdb or etcd"});
  expect_error("storage:\n  engine: etcd\n", {"storage.endpoints", "needs a list"});
  expect_error("storage:\n  engine: etcd\n  endpoints: [127.0.0.1:2379]\n",
               {"t.yaml:3: storage.endpoints[0]", "http://HOST:PORT"});
  expect_error("storage:\n  engine: etcd\n  endpoints: [http://a:1]\n  prefix: ticketd\n",
               {"t.yaml:4: storage.prefix", "start and end with '/'"});
  expect_error("storage:\n  engine: etcd\n  endpoints: [http://a:1]\n  leader_ttl_s: 1\n",
               {"t.yaml:4: storage.leader_ttl_s", "between 2 and 600"});
  expect_error("storage:\n  engine: rocksdb\n  prefix: /x/\n",
               {"storage.prefix", "only used with engine etcd"});
  expect_error("storage:\n  engine: etcd\n  endpoints: [http://a:1]\n  ttl: 3\n",
               {"storage.ttl", "unknown key"});
}

TEST(ConfigLoader, FollowerHttpIsRefuseOrRedirectWithEtcd) {
  const std::string etcd = "storage:\n  engine: etcd\n  endpoints: [http://a:1]\n";
  auto def = load(etcd);
  ASSERT_TRUE(def.config);
  EXPECT_EQ(def.config->ha.follower_http, FollowerHttp::kRefuse);
  auto r = load(etcd + "ha:\n  follower_http: redirect\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.config->ha.follower_http, FollowerHttp::kRedirect);
  expect_error(etcd + "ha:\n  follower_http: proxy\n",
               {"t.yaml:5: ha.follower_http", "expected refuse or redirect"});
  expect_error(etcd + "ha:\n  follower: redirect\n", {"ha.follower", "unknown key"});
  expect_error("ha:\n  follower_http: redirect\n",
               {"t.yaml:2: ha", "only used with storage.engine etcd"});
}

TEST(ConfigLoader, EveryKindAndWorkerPoolsServeOnTheEtcdEngine) {
  auto r = load(
      "storage:\n  engine: etcd\n  endpoints: [http://a:1]\nsequences:\n"
      "  - { name: S, kind: snowflake }\n  - { name: U, kind: uuidv7 }\n"
      "  - { name: G, kind: gapless }\n  - { name: T }\n"
      "worker_pools:\n  - { name: orders, size: 8 }\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.config->sequences.size(), 4u);
  EXPECT_EQ(r.config->worker_pools.size(), 1u);
}

TEST(ConfigLoader, SecuredEtcdLoadsForStorageAndWorkerIds) {
  auto r = load(
      "storage:\n  engine: etcd\n  endpoints: [https://127.0.0.1:2379]\n"
      "  ca_file: /etc/ticketd/etcd-ca.pem\n  cert_file: /etc/ticketd/etcd-client.pem\n"
      "  key_file: /etc/ticketd/etcd-client.key\n  username: ticketd\n  password: s3cret\n"
      "snowflake:\n  worker_id:\n    source: etcd\n    endpoints: [https://10.0.0.2:2379]\n"
      "    ca_file: /ca.pem\n    username: w\n    password: pw\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.config->storage.access,
            (EtcdAccess{"/etc/ticketd/etcd-ca.pem", "/etc/ticketd/etcd-client.pem",
                        "/etc/ticketd/etcd-client.key", "ticketd", "s3cret"}));
  EXPECT_EQ(r.config->snowflake.etcd_access, (EtcdAccess{"/ca.pem", "", "", "w", "pw"}));
  EXPECT_EQ(r.config->snowflake.etcd_endpoints, std::vector<std::string>{"https://10.0.0.2:2379"});
  // An etcd password in clear makes the file one to keep private.
  EXPECT_TRUE(has_plaintext_secrets(*r.config));
}

TEST(ConfigLoader, SecuredEtcdErrorsNameKeyAndLine) {
  const std::string etcd = "storage:\n  engine: etcd\n  endpoints: [http://a:1]\n";
  const std::string tls = "storage:\n  engine: etcd\n  endpoints: [https://a:1]\n";
  expect_error(etcd + "  ca_file: /ca.pem\n", {"t.yaml:4: storage.ca_file", "needs https://"});
  expect_error(tls + "  cert_file: /c.pem\n", {"t.yaml:4: storage.cert_file", "needs key_file"});
  expect_error(tls + "  key_file: /c.key\n", {"t.yaml:4: storage.key_file", "needs cert_file"});
  expect_error(etcd + "  username: u\n", {"t.yaml:4: storage.username", "needs password"});
  expect_error(etcd + "  password: p\n", {"t.yaml:4: storage.password", "needs username"});
  expect_error(etcd + "  username: ''\n  password: p\n",
               {"t.yaml:4: storage.username", "must not be empty"});
  expect_error("storage:\n  engine: etcd\n  endpoints: [ftp://a:1]\n",
               {"t.yaml:3: storage.endpoints[0]", "https://HOST:PORT"});
  expect_error("storage:\n  engine: rocksdb\n  username: u\n",
               {"t.yaml:3: storage.username", "only used with engine etcd"});
  expect_error(
      "snowflake:\n  worker_id:\n    source: etcd\n    endpoints: [http://a:1]\n"
      "    key_file: /k\n",
      {"t.yaml:5: snowflake.worker_id.key_file", "needs https://"});
}

TEST(ConfigLoader, EmptyOrNullConfigIsRefused) {
  for (const char* text : {"", "~", "null", "\n\n", "# only a comment\n", "---\n", "--- ~\n"}) {
    expect_error(text, {"t.yaml: the config is empty", "refusing to start on defaults"});
  }
}

TEST(ConfigLoader, DirectoryIsNotAConfig) {
  auto r = load_file(std::string(TICKETD_SOURCE_DIR) + "/config", validate_name);
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("is a directory"), std::string::npos) << r.errors[0];
}

TEST(ConfigLoader, AFifoOrAHugeFileIsRefusedWithoutReadingIt) {
  // Issue 27.13: a FIFO would block start-up (or a reload) forever; a huge file would be read
  // into memory whole. Both are refused from their status alone.
  const std::string dir = ::testing::TempDir() + "ticketd-config-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = load_file(fifo, validate_name);  // returns at once: nothing writes to the FIFO
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("is a FIFO"), std::string::npos) << r.errors[0];
  const std::string huge = dir + "/huge.yaml";
  std::fclose(std::fopen(huge.c_str(), "w"));
  std::filesystem::resize_file(huge, kMaxConfigBytes + 1);
  r = load_file(huge, validate_name);
  ASSERT_FALSE(r.config);
  EXPECT_NE(r.errors[0].find("is larger than 4194304 bytes"), std::string::npos) << r.errors[0];
  std::filesystem::remove_all(dir);
}

TEST(ConfigLoader, DuplicateKeysAreRefusedAtEveryLevelNamingBothLines) {
  expect_error("data_dir: /a\ndata_dir: /b\n",
               {"t.yaml:2: data_dir: duplicate key 'data_dir' (first given on line 1, again on "
                "line 2)"});
  expect_error("mysql:\n  listen: 127.0.0.1:1\n  database: x\n  listen: 0.0.0.0:2\n",
               {"t.yaml:4: mysql.listen: duplicate key", "line 2, again on line 4"});
  expect_error("http:\n  listen: 127.0.0.1:1\nmysql: {}\nhttp:\n  listen: 127.0.0.1:2\n",
               {"t.yaml:4: http: duplicate key 'http' (first given on line 1"});
  expect_error("sequences:\n  - { name: A, start: 5,\n      start: 9 }\n",
               {"t.yaml:3: sequences[0].start: duplicate key", "line 2, again on line 3"});
  expect_error("snowflake:\n  clock:\n    policy: wait\n    policy: fail\n",
               {"t.yaml:4: snowflake.clock.policy: duplicate key"});
  // Every duplicate is reported, not only the first.
  auto r = load("threads: 1\nthreads: 2\nlog_level: info\nlog_level: warn\n");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(r.errors.size(), 2u);
}

// A node that contains itself: yaml-cpp accepts `&l [*l]`, and a walk without a depth bound
// recursed until the stack ran out (ticketd crashed at start and on reload; found by fuzzing).
TEST(ConfigLoader, ACyclicAliasIsRefusedNotWalkedOffTheStack) {
  expect_error("a: &a [x, x]\nl: &l [*l, *a]\nsequences: *l\n",
               {"t.yaml:2: l[0][0]", "nested more than 64 levels deep (a cyclic alias?)"});
  std::string deep = "sequences: ";
  for (int i = 0; i < 70; ++i) deep += "[";
  for (int i = 0; i < 70; ++i) deep += "]";
  expect_error(deep + "\n", {"sequences[0][0]", "nested more than 64 levels deep"});
}

TEST(ConfigLoader, AnAliasBombIsRefusedAsTooLarge) {
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 6; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
    text += "]\n";
  }
  expect_error(text, {"t.yaml: the document is too large (aliases expand to more than 100000 "
                      "nodes)"});
}

TEST(ConfigLoader, SequenceAndPoolNamesFollowTheCoreRule) {
  for (const char* bad : {"'a b'", "'.'", "'..'", "'a/b'", "'a`b'", "\"a\\tb\"", "' lead'"}) {
    expect_error(std::string("sequences:\n  - { name: ") + bad + " }\n",
                 {"t.yaml:2: sequences[0].name: not a valid name"});
    expect_error(std::string("worker_pools:\n  - { name: ") + bad + ", size: 2 }\n",
                 {"t.yaml:2: worker_pools[0].name: not a valid name"});
  }
  EXPECT_TRUE(load("sequences:\n  - { name: 'orders.v2' }\n").config);
}

}  // namespace
}  // namespace ticketd::config

namespace ticketd::config {
namespace {

TEST(ConfigLoader, UsersTakeAPasswordOrAHashAndOnePlugin) {
  auto r = load(
      "mysql:\n  default_auth_plugin: caching_sha2_password\n  users:\n"
      "    - { name: a, password: pw-a }\n"
      "    - { name: b, password: pw-b, plugin: mysql_native_password }\n"
      "    - { name: c, password_hash: '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7' }\n"
      "    - { name: d, password_hash: "
      "'sha256x2:3881219d087dd9c634373fd33dfa33a2cb6bfc6c520b64b8bb60ef2ceb534ae7' }\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const auto& u = r.config->mysql.users;
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(r.config->mysql.default_auth_plugin, AuthPlugin::kCachingSha2Password);
  EXPECT_EQ(u[0].plugin, AuthPlugin::kCachingSha2Password);  // the default
  EXPECT_EQ(u[1].plugin, AuthPlugin::kNativePassword);       // named
  EXPECT_EQ(u[2].plugin, AuthPlugin::kNativePassword);       // implied by the hash
  EXPECT_TRUE(u[2].password.empty());
  EXPECT_EQ(u[3].plugin, AuthPlugin::kCachingSha2Password);
  EXPECT_TRUE(has_plaintext_secrets(*r.config));
}

TEST(ConfigLoader, BadSecretsAreReportedWithTheirPaths) {
  expect_error("mysql:\n  users:\n    - { name: a }\n",
               {"mysql.users[0]: a user needs exactly one of password and password_hash"});
  expect_error("mysql:\n  users:\n    - { name: a, password: x, password_hash: '*00' }\n",
               {"exactly one of password and password_hash"});
  expect_error("mysql:\n  users:\n    - { name: a, password_hash: '*1234' }\n",
               {"mysql.users[0].password_hash: expected '*' and 40 hex digits"});
  expect_error("mysql:\n  users:\n    - { name: a, password_hash: 'sha256x2:zz' }\n",
               {"mysql.users[0].password_hash"});
  expect_error(
      "mysql:\n  users:\n    - { name: a, plugin: caching_sha2_password, password_hash: "
      "'*14E65567ABDB5135D0CFD9A70B3032C179A49EE7' }\n",
      {"mysql.users[0].plugin: does not match the form of password_hash"});
  expect_error("mysql:\n  users:\n    - { name: a, password: x, plugin: sha256_password }\n",
               {"mysql.users[0].plugin: expected mysql_native_password or caching_sha2_password"});
  expect_error("mysql:\n  default_auth_plugin: old_password\n", {"mysql.default_auth_plugin"});
  expect_error("http:\n  tokens: ['sha256:0123456789abcdef']\n",
               {"http.tokens[0]: 'sha256:' must be followed by 64 hex digits"});
}

TEST(ConfigLoader, HashedTokensAndUsersAreNotPlaintextSecrets) {
  auto r = load(
      "mysql:\n  users:\n    - { name: c, password_hash: "
      "'*14E65567ABDB5135D0CFD9A70B3032C179A49EE7' }\n"
      "http:\n  tokens: ['sha256:" +
      std::string(64, 'a') + "']\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_FALSE(has_plaintext_secrets(*r.config));
  r = load("http:\n  tokens: ['0123456789abcdef-clear']\n");
  ASSERT_TRUE(r.config);
  EXPECT_TRUE(has_plaintext_secrets(*r.config));
}

TEST(ConfigLoader, TlsSectionsOfBothFrontEnds) {
  auto r = load(
      "mysql:\n  tls: { cert_file: /c.pem, key_file: /k.pem, ca_file: /ca.pem, "
      "require_client_cert: true }\n  require_secure_transport: true\n"
      "http:\n  tls: { cert_file: /hc.pem, key_file: /hk.pem }\n"
      "security:\n  strict_config_permissions: true\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const auto& c = *r.config;
  ASSERT_TRUE(c.mysql.tls);
  EXPECT_EQ(c.mysql.tls->cert_file, "/c.pem");
  EXPECT_EQ(c.mysql.tls->key_file, "/k.pem");
  EXPECT_EQ(c.mysql.tls->ca_file, "/ca.pem");
  EXPECT_TRUE(c.mysql.tls->require_client_cert);
  EXPECT_TRUE(c.mysql.require_secure_transport);
  ASSERT_TRUE(c.http.tls);
  EXPECT_EQ(c.http.tls->cert_file, "/hc.pem");
  EXPECT_TRUE(c.http.tls->ca_file.empty());
  EXPECT_TRUE(c.security.strict_config_permissions);
  EXPECT_FALSE(load("data_dir: ./d\n").config->mysql.tls);
}

TEST(ConfigLoader, TlsMistakesAreReported) {
  expect_error("mysql:\n  tls: { cert_file: /c.pem }\n",
               {"mysql.tls.key_file: required: a PEM file"});
  expect_error("http:\n  tls: { key_file: /k.pem }\n", {"http.tls.cert_file: required"});
  expect_error("mysql:\n  tls: { cert_file: /c, key_file: /k, require_client_cert: true }\n",
               {"mysql.tls.require_client_cert: needs ca_file"});
  expect_error("mysql:\n  tls: { cert_file: /c, key_file: /k, cipher: x }\n",
               {"mysql.tls.cipher: unknown key"});
  expect_error("mysql:\n  require_secure_transport: true\n",
               {"mysql.require_secure_transport: needs mysql.tls"});
  expect_error("security:\n  strict: true\n", {"security.strict: unknown key"});
}

TEST(Exposure, HashedDefaultPasswordIsCheckedByTheApp) {
  // config/ cannot hash: a password_hash is never judged here (server/app checks it).
  Config c;
  c.mysql.listen.host = "0.0.0.0";
  MySqlUser u;
  u.name = "ticket";
  u.password_hash = "*00";
  c.mysql.users.push_back(u);
  EXPECT_TRUE(check_exposure(c).empty());
}

}  // namespace
}  // namespace ticketd::config

namespace ticketd::config {
namespace {

// The Debian package's /etc/ticketd/ticketd.yaml ships no password: its one user's
// password_hash is the placeholder, refused with the file, line and key until it is replaced.
TEST(ConfigLoader, PackagedConfigIsRefusedUntilAPasswordIsSet) {
  const std::string path = std::string(TICKETD_SOURCE_DIR) + "/packaging/ticketd.yaml";
  auto r = load_file(path, validate_name);
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find(path + ":"), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[0].find("mysql.users[0].password_hash: is the shipped placeholder"),
            std::string::npos)
      << r.errors[0];
  EXPECT_NE(r.errors[0].find("ticketd hash-password"), std::string::npos) << r.errors[0];

  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string placeholder = "password_hash: " + std::string(kPasswordHashPlaceholder);
  const auto at = text.find(placeholder);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, placeholder.size(),
               "password_hash: '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7'");
  auto set = load_string(text, "ticketd.yaml", validate_name);
  ASSERT_TRUE(set.config) << (set.errors.empty() ? "" : set.errors[0]);
  EXPECT_EQ(set.config->data_dir, "/var/lib/ticketd");
  EXPECT_TRUE(is_loopback(set.config->mysql.listen.host));
  EXPECT_TRUE(is_loopback(set.config->http.listen.host));
  EXPECT_FALSE(has_plaintext_secrets(*set.config));
}

TEST(ConfigLoader, PasswordHashPlaceholderIsRefusedWithItsPath) {
  expect_error("mysql:\n  users:\n    - { name: ops, password_hash: CHANGE-ME }\n",
               {"t.yaml:3: mysql.users[0].password_hash: is the shipped placeholder: set a "
                "password for user 'ops'"});
}

}  // namespace
}  // namespace ticketd::config
