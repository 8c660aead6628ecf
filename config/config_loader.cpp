#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "config/config.h"
#include "config/yaml_reader.h"
#include "server/base/bounded_file.h"
#include "server/base/gapless_bounds.h"
#include "server/base/hex.h"
#include "server/base/parse_int.h"

namespace ticketd::config {
namespace {

using detail::Word;
using detail::YamlReader;

constexpr Word<LogLevel> kLogLevels[] = {{"debug", LogLevel::kDebug},
                                         {"info", LogLevel::kInfo},
                                         {"warn", LogLevel::kWarn},
                                         {"error", LogLevel::kError}};
constexpr Word<FollowerHttp> kFollowerHttp[] = {{"refuse", FollowerHttp::kRefuse},
                                                {"redirect", FollowerHttp::kRedirect}};
constexpr Word<LogFormat> kLogFormats[] = {{"text", LogFormat::kText}, {"json", LogFormat::kJson}};
constexpr Word<StorageEngine> kStorageEngines[] = {{"rocksdb", StorageEngine::kRocksDb},
                                                   {"etcd", StorageEngine::kEtcd}};
constexpr Word<GaplessOrder> kGaplessOrders[] = {{"relaxed", GaplessOrder::kRelaxed},
                                                 {"strict", GaplessOrder::kStrict}};
constexpr Word<SnowflakeFieldOrder> kFieldOrders[] = {
    {"time_worker_sequence", SnowflakeFieldOrder::kTimeWorkerSequence},
    {"time_sequence_worker", SnowflakeFieldOrder::kTimeSequenceWorker}};
constexpr Word<WorkerSource> kWorkerSources[] = {
    {"static", WorkerSource::kStatic}, {"env", WorkerSource::kEnv}, {"etcd", WorkerSource::kEtcd}};
constexpr Word<AuthPlugin> kAuthPlugins[] = {
    {"mysql_native_password", AuthPlugin::kNativePassword},
    {"caching_sha2_password", AuthPlugin::kCachingSha2Password}};
// The keys of a secured etcd's access, shared by `storage` and `snowflake.worker_id`.
struct EtcdAccessKey {
  const char* key;
  std::string EtcdAccess::*field;
  bool needs_https;  // a TLS file: meaningless with http:// endpoints
};
constexpr EtcdAccessKey kEtcdAccessKeys[] = {
    {"ca_file", &EtcdAccess::ca_file, true},    {"cert_file", &EtcdAccess::cert_file, true},
    {"key_file", &EtcdAccess::key_file, true},  {"username", &EtcdAccess::username, false},
    {"password", &EtcdAccess::password, false},
};

constexpr Word<ClockPolicy> kClockPolicies[] = {
    {"fail", ClockPolicy::kFail}, {"wait", ClockPolicy::kWait}, {"logical", ClockPolicy::kLogical}};

// Walks the YAML tree and records every problem with its path and line, so one run of ticketd
// reports all of them before any socket is bound. The sections of the config file; the
// reading of values, with their checks and errors, is YamlReader's.
class Loader : public YamlReader {
 public:
  using YamlReader::YamlReader;

  Config load(const YAML::Node& root) {
    Config c;
    if (!root.IsDefined() || root.IsNull()) {
      // An empty file, `~` or only comments: most likely a truncated deploy. Starting on every
      // default would open ./data (an empty data dir) on the default ports.
      errors_.push_back(source_ +
                        ": the config is empty (no settings at all); refusing to start on "
                        "defaults. Give at least data_dir and the listen addresses");
      return c;
    }
    if (!check_duplicate_keys(root)) return c;
    if (!expect_map(root, "",
                    {"data_dir", "threads", "log_level", "log_format", "mysql", "http", "defaults",
                     "snowflake", "storage", "ha", "security", "backup", "durability", "sequences",
                     "worker_pools"})) {
      return c;
    }
    get_string(root, "", "data_dir", c.data_dir);
    if (c.data_dir.empty()) error(root["data_dir"], "data_dir", "must not be empty");
    get_small_uint(root, "", "threads", c.threads, 0, 256);
    get_word(root, "", "log_level", kLogLevels, c.log_level,
             [](const std::string&) { return "expected debug, info, warn or error"; });
    get_word(root, "", "log_format", kLogFormats, c.log_format,
             [](const std::string&) { return "expected text or json"; });
    if (auto m = root["mysql"]) load_mysql(m, c.mysql);
    if (auto h = root["http"]) load_http(h, c.http);
    if (auto d = root["defaults"]) load_defaults(d, c.defaults);
    if (auto sf = root["snowflake"]) load_snowflake(sf, c.snowflake);
    if (auto st = root["storage"]) load_storage(st, c.storage);
    if (auto sec = root["security"]) {
      if (expect_map(sec, "security", {"strict_config_permissions"})) {
        get_bool(sec, "security", "strict_config_permissions",
                 c.security.strict_config_permissions);
      }
    }
    if (auto ha = root["ha"]) {
      if (expect_map(ha, "ha", {"follower_http"})) {
        get_word(ha, "ha", "follower_http", kFollowerHttp, c.ha.follower_http,
                 [](const std::string&) { return "expected refuse or redirect"; });
        if (c.storage.engine != StorageEngine::kEtcd) {
          error(ha, "ha", "only used with storage.engine etcd");
        }
      }
    }
    if (auto b = root["backup"]) {
      if (expect_map(b, "backup", {"dir"})) {
        get_string(b, "backup", "dir", c.backup.dir);
        if (c.backup.dir.empty()) error(b["dir"], "backup.dir", "must not be empty");
      }
    }
    if (auto d = root["durability"]) {
      if (expect_map(d, "durability", {"external_mark"})) {
        get_string(d, "durability", "external_mark", c.durability.external_mark);
        const std::string& mark = c.durability.external_mark;
        if (mark.empty() || mark.back() == '/') {
          error(d["external_mark"], "durability.external_mark",
                "must name a file (on another volume than data_dir)");
        } else if (c.storage.engine == StorageEngine::kEtcd) {
          error(d, "durability", "only used with storage.engine rocksdb (etcd keeps its own)");
        }
      }
    }
    if (auto s = root["sequences"]) load_sequences(s, c);
    if (auto w = root["worker_pools"]) load_worker_pools(w, c);
    return c;
  }

  void load_mysql(const YAML::Node& node, MySqlConfig& m) {
    const std::string p = "mysql";
    if (!expect_map(
            node, p,
            {"listen", "database", "users", "default_auth_plugin", "tls",
             "require_secure_transport", "max_connections", "wait_timeout", "max_allowed_packet",
             "max_prepared_stmt_count", "net_read_timeout", "net_write_timeout", "connect_timeout",
             "connection_memory_limit", "global_connection_memory_limit"})) {
      return;
    }
    get_listen(node, p, m.listen);
    get_string(node, p, "database", m.database);
    if (m.database.empty()) error(node["database"], "mysql.database", "must not be empty");
    get_small_uint(node, p, "max_connections", m.max_connections, 1, 1000000);
    get_duration(node, p, "wait_timeout", m.wait_timeout, 1, 31536000);
    get_small_uint(node, p, "max_allowed_packet", m.max_allowed_packet, 1024, 1073741824);
    get_small_uint(node, p, "max_prepared_stmt_count", m.max_prepared_stmt_count, 0, 1048576);
    get_duration(node, p, "net_read_timeout", m.net_read_timeout, 1, 31536000);
    get_duration(node, p, "net_write_timeout", m.net_write_timeout, 1, 31536000);
    get_duration(node, p, "connect_timeout", m.connect_timeout, 1, 31536000);
    get_uint(node, p, "connection_memory_limit", m.connection_memory_limit, 1024,
             std::uint64_t{1} << 40);
    get_uint(node, p, "global_connection_memory_limit", m.global_connection_memory_limit, 1024,
             std::uint64_t{1} << 40);
    get_word(node, p, "default_auth_plugin", kAuthPlugins, m.default_auth_plugin,
             [](const std::string&) {
               return "expected mysql_native_password or caching_sha2_password";
             });
    if (auto tls = node["tls"]) m.tls = load_tls(tls, "mysql.tls");
    get_bool(node, p, "require_secure_transport", m.require_secure_transport);
    if (m.require_secure_transport && !m.tls) {
      error(node["require_secure_transport"], "mysql.require_secure_transport",
            "needs mysql.tls (no client could log in)");
    }
    if (auto users = node["users"]) {
      if (!users.IsSequence()) {
        error(users, "mysql.users", "expected a list of {name, password}");
        return;
      }
      std::map<std::string, int> seen;
      for (std::size_t i = 0; i < users.size(); ++i) {
        const auto u = users[i];
        const std::string up = "mysql.users[" + std::to_string(i) + "]";
        if (!expect_map(u, up, {"name", "password", "password_hash", "plugin"})) continue;
        MySqlUser user;
        if (!get_string(u, up, "name", user.name) || user.name.empty()) {
          error(u, up + ".name", "a user needs a non-empty name (no anonymous logins)");
          continue;
        }
        const bool clear = get_string(u, up, "password", user.password);
        const bool hashed = get_string(u, up, "password_hash", user.password_hash);
        if (clear == hashed) {
          error(u, up, "a user needs exactly one of password and password_hash");
          continue;
        }
        std::optional<AuthPlugin> implied;
        if (hashed && user.password_hash == kPasswordHashPlaceholder) {
          error(u["password_hash"], up + ".password_hash",
                "is the shipped placeholder: set a password for user '" + user.name +
                    "' (`ticketd hash-password` prints the password_hash to put here)");
          continue;
        }
        if (hashed) {
          implied = hash_plugin(user.password_hash);
          if (!implied) {
            error(u["password_hash"], up + ".password_hash",
                  "expected '*' and 40 hex digits (mysql_native_password) or 'sha256x2:' and 64 "
                  "hex digits (caching_sha2_password); `ticketd hash-password` prints both");
            continue;
          }
        }
        user.plugin = implied.value_or(m.default_auth_plugin);
        if (u["plugin"]) {
          AuthPlugin named = user.plugin;
          const bool known = get_word(u, up, "plugin", kAuthPlugins, named, [](const std::string&) {
            return "expected mysql_native_password or caching_sha2_password";
          });
          if (!known) continue;
          if (implied && named != *implied) {
            error(u["plugin"], up + ".plugin", "does not match the form of password_hash");
            continue;
          }
          user.plugin = named;
        }
        if (!seen.emplace(user.name, u.Mark().line + 1).second) {
          error(u, up + ".name", "duplicate user '" + user.name + "'");
          continue;
        }
        m.users.push_back(std::move(user));
      }
    }
  }

  // Which plugin a password_hash is the verifier of, by its form; nullopt for neither form.
  static std::optional<AuthPlugin> hash_plugin(std::string_view hash) {
    if (hash.starts_with('*') && from_hex<20>(hash.substr(1))) return AuthPlugin::kNativePassword;
    if (hash.starts_with(kSha256x2Prefix) && from_hex<32>(hash.substr(kSha256x2Prefix.size()))) {
      return AuthPlugin::kCachingSha2Password;
    }
    return std::nullopt;
  }

  std::optional<TlsConfig> load_tls(const YAML::Node& node, const std::string& p) {
    if (!expect_map(node, p, {"cert_file", "key_file", "ca_file", "require_client_cert"})) {
      return std::nullopt;
    }
    TlsConfig t;
    bool ok = true;
    for (auto [key, out] : {std::pair{"cert_file", &t.cert_file}, {"key_file", &t.key_file}}) {
      if (!get_string(node, p, key, *out) || out->empty()) {
        error(node, join(p, key), "required: a PEM file");
        ok = false;
      }
    }
    get_string(node, p, "ca_file", t.ca_file);
    get_bool(node, p, "require_client_cert", t.require_client_cert);
    if (t.require_client_cert && t.ca_file.empty()) {
      error(node["require_client_cert"], join(p, "require_client_cert"),
            "needs ca_file (the CAs client certificates must chain to)");
      ok = false;
    }
    if (!ok) return std::nullopt;
    return t;
  }

  // "30d": days; a bare integer: a count of leases kept per sequence.
  void load_lease_retention(const YAML::Node& node, HttpConfig& h) {
    const std::string text = node.IsScalar() ? node.Scalar() : std::string();
    if (text.size() > 1 && text.back() == 'd') {
      const auto days = parse_u64(std::string_view(text).substr(0, text.size() - 1));
      if (days && *days >= 1 && *days <= 36500) {
        h.lease_retention = std::chrono::hours(24 * *days);
        h.lease_retention_count = 0;
        return;
      }
    } else if (const auto count = parse_u64(text); count && *count >= 1) {
      h.lease_retention_count = *count;
      return;
    }
    error(node, "http.lease_retention",
          "expected a number of days (\"30d\", 1d to 36500d) or a count of leases (\"100000\")");
  }

  void load_http(const YAML::Node& node, HttpConfig& h) {
    const std::string p = "http";
    if (!expect_map(
            node, p,
            {"listen", "tokens", "tls", "max_block_size", "metrics_public", "max_connections",
             "header_timeout_ms", "idle_timeout_ms", "lease_retention"})) {
      return;
    }
    get_listen(node, p, h.listen);
    if (auto r = node["lease_retention"]) load_lease_retention(r, h);
    // The engine takes at most 100000 IDs per call (kMaxIdsPerCall), over every front end.
    get_uint(node, p, "max_block_size", h.max_block_size, 1, 100000);
    get_bool(node, p, "metrics_public", h.metrics_public);
    get_small_uint(node, p, "max_connections", h.max_connections, 1, 1000000);
    get_duration(node, p, "header_timeout_ms", h.header_timeout, 100, 600000);
    get_duration(node, p, "idle_timeout_ms", h.idle_timeout, 100, 3600000);
    if (auto tls = node["tls"]) h.tls = load_tls(tls, "http.tls");
    if (auto tokens = node["tokens"]) {
      if (!tokens.IsSequence()) {
        error(tokens, "http.tokens", "expected a list of strings");
        return;
      }
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (!tokens[i].IsScalar() || tokens[i].Scalar().size() < 16) {
          error(tokens[i], "http.tokens[" + std::to_string(i) + "]",
                "expected a string of at least 16 characters");
          continue;
        }
        const std::string_view t = tokens[i].Scalar();
        if (t.starts_with(kTokenSha256Prefix) &&
            !from_hex<32>(t.substr(kTokenSha256Prefix.size()))) {
          error(tokens[i], "http.tokens[" + std::to_string(i) + "]",
                "'sha256:' must be followed by 64 hex digits (`ticketd hash-token` prints them)");
          continue;
        }
        h.tokens.push_back(tokens[i].Scalar());
      }
    }
  }

  void load_defaults(const YAML::Node& node, Defaults& d) {
    const std::string p = "defaults";
    if (!expect_map(node, p,
                    {"auto_increment_increment", "auto_increment_offset", "cache", "max_rate"})) {
      return;
    }
    get_uint(node, p, "max_rate", d.max_rate, 1, kMaxMaxRate);
    get_uint(node, p, "auto_increment_increment", d.auto_increment_increment, 1, 65535);
    get_uint(node, p, "auto_increment_offset", d.auto_increment_offset, 1, 65535);
    get_uint(node, p, "cache", d.cache, 1, 1000000000);
    if (d.auto_increment_offset > d.auto_increment_increment) {
      error(node["auto_increment_offset"], "defaults.auto_increment_offset",
            "offset " + std::to_string(d.auto_increment_offset) +
                " is greater than auto_increment_increment " +
                std::to_string(d.auto_increment_increment));
    }
  }

  void load_snowflake(const YAML::Node& node, SnowflakeConfig& sf) {
    const std::string p = "snowflake";
    if (!expect_map(node, p,
                    {"epoch", "time_bits", "worker_bits", "sequence_bits", "time_unit_ms", "order",
                     "worker_id", "clock"})) {
      return;
    }
    sf.line = node.Mark().line + 1;
    if (get_string(node, p, "epoch", sf.epoch)) {
      if (auto ms = parse_utc_ms(sf.epoch)) {
        sf.epoch_unix_ms = *ms;
      } else {
        error(node["epoch"], "snowflake.epoch",
              "expected a UTC time like 2026-01-01T00:00:00Z, got '" + sf.epoch + "'");
      }
    }
    get_small_uint(node, p, "time_bits", sf.time_bits, 1, 63);
    get_small_uint(node, p, "worker_bits", sf.worker_bits, 0, 62);
    get_small_uint(node, p, "sequence_bits", sf.sequence_bits, 1, 62);
    get_duration(node, p, "time_unit_ms", sf.time_unit, 1, 86400000);
    get_word(node, p, "order", kFieldOrders, sf.order, [](const std::string& order) {
      return "expected time_worker_sequence or time_sequence_worker, got '" + order + "'";
    });
    if (auto w = node["worker_id"]) {
      const std::string wp = "snowflake.worker_id";
      if (expect_map(w, wp,
                     {"source", "id", "variable", "endpoints", "prefix", "ttl_s", "margin_ms",
                      "ca_file", "cert_file", "key_file", "username", "password"})) {
        if (get_word(w, wp, "source", kWorkerSources, sf.worker_source,
                     [](const std::string& source) {
                       return "expected static, env or etcd, got '" + source + "'";
                     })) {
          switch (sf.worker_source) {
            case WorkerSource::kStatic:
              get_uint(w, wp, "id", sf.worker_id);
              break;
            case WorkerSource::kEnv:
              if (!get_string(w, wp, "variable", sf.worker_env) || sf.worker_env.empty()) {
                error(w, wp + ".variable", "source env needs the name of the variable");
              }
              break;
            case WorkerSource::kEtcd:
              load_etcd_worker(w, wp, sf);
              break;
          }
        }
      }
    }
    if (auto c = node["clock"]) {
      const std::string cp = "snowflake.clock";
      if (expect_map(c, cp, {"policy", "max_backward_ms"})) {
        get_word(c, cp, "policy", kClockPolicies, sf.clock_policy, [](const std::string& policy) {
          return "expected fail, wait or logical, got '" + policy + "'";
        });
        get_duration(c, cp, "max_backward_ms", sf.max_backward, 0, 60000);
      }
    }
    if (sf.time_bits + sf.worker_bits + sf.sequence_bits != 63) {
      error(node, p,
            "time_bits + worker_bits + sequence_bits must be 63 (the sign bit stays 0), got " +
                std::to_string(sf.time_bits + sf.worker_bits + sf.sequence_bits));
    }
  }

  // Validates http://HOST:PORT endpoint lists (snowflake.worker_id and storage share the rule).
  void load_endpoints(const YAML::Node& endpoints, const YAML::Node& parent,
                      const std::string& path, std::vector<std::string>& out,
                      std::string_view needs = "needs") {
    if (!endpoints || !endpoints.IsSequence() || endpoints.size() == 0) {
      error(endpoints ? endpoints : parent, path,
            std::string(needs) + " a list of endpoints like [http://127.0.0.1:2379]");
      return;
    }
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
      const auto& e = endpoints[i];
      const std::string text = e.IsScalar() ? e.Scalar() : std::string();
      std::string rest;
      for (std::string_view scheme : {"http://", "https://"}) {
        if (text.starts_with(scheme)) rest = text.substr(scheme.size());
      }
      if (rest.ends_with('/')) rest.pop_back();
      if (rest.empty() || !parse_listen(rest)) {
        error(e, path + "[" + std::to_string(i) + "]",
              "expected http://HOST:PORT or https://HOST:PORT, got '" + text + "'");
        continue;
      }
      out.push_back(text);
    }
  }

  // The keys of kEtcdAccessKeys under `node`; `endpoints` are the ones already loaded.
  void load_etcd_access(const YAML::Node& node, const std::string& p,
                        const std::vector<std::string>& endpoints, EtcdAccess& out) {
    const bool https = std::any_of(endpoints.begin(), endpoints.end(),
                                   [](const std::string& e) { return e.starts_with("https://"); });
    for (const auto& k : kEtcdAccessKeys) {
      if (!get_string(node, p, k.key, out.*k.field)) continue;
      if ((out.*k.field).empty()) {
        error(node[k.key], join(p, k.key), "must not be empty");
      } else if (k.needs_https && !https && !endpoints.empty()) {
        error(node[k.key], join(p, k.key), "needs https:// endpoints");
      }
    }
    for (auto [a, b] : {std::pair{"cert_file", "key_file"}, {"username", "password"}}) {
      if (node[a].IsDefined() != node[b].IsDefined()) {
        const char* given = node[a] ? a : b;
        error(node[given], join(p, given), std::string("needs ") + (node[a] ? b : a) + " too");
      }
    }
  }

  void load_storage(const YAML::Node& node, StorageConfig& st) {
    const std::string p = "storage";
    st.line = node.Mark().line + 1;
    if (!expect_map(node, p,
                    {"engine", "endpoints", "prefix", "leader_ttl_s", "ca_file", "cert_file",
                     "key_file", "username", "password"})) {
      return;
    }
    if (!get_word(node, p, "engine", kStorageEngines, st.engine, [](const std::string& engine) {
          return "expected rocksdb or etcd, got '" + engine + "'";
        })) {
      return;
    }
    if (st.engine != StorageEngine::kEtcd) {
      for (const char* key : {"endpoints", "prefix", "leader_ttl_s"}) {
        if (node[key]) error(node[key], join(p, key), "only used with engine etcd");
      }
      for (const auto& k : kEtcdAccessKeys) {
        if (node[k.key]) error(node[k.key], join(p, k.key), "only used with engine etcd");
      }
      return;
    }
    load_endpoints(node["endpoints"], node, "storage.endpoints", st.endpoints);
    load_etcd_access(node, p, st.endpoints, st.access);
    if (get_string(node, p, "prefix", st.prefix) &&
        (st.prefix.empty() || st.prefix.front() != '/' || st.prefix.back() != '/')) {
      error(node["prefix"], "storage.prefix",
            "must start and end with '/', got '" + st.prefix + "'");
    }
    // etcd grants at least its minimum TTL (about 2 s with default timing), never less.
    get_duration(node, p, "leader_ttl_s", st.leader_ttl, 2, 600);
  }

  void load_etcd_worker(const YAML::Node& w, const std::string& wp, SnowflakeConfig& sf) {
    load_endpoints(w["endpoints"], w, wp + ".endpoints", sf.etcd_endpoints, "source etcd needs");
    load_etcd_access(w, wp, sf.etcd_endpoints, sf.etcd_access);
    if (get_string(w, wp, "prefix", sf.etcd_prefix) &&
        (sf.etcd_prefix.empty() || sf.etcd_prefix.back() != '/')) {
      error(w["prefix"], wp + ".prefix",
            "must be non-empty and end with '/', got '" + sf.etcd_prefix + "'");
    }
    // etcd grants at least its minimum TTL (2 s with default timing), never less.
    get_duration(w, wp, "ttl_s", sf.etcd_ttl, 2, 3600);
    const auto half_ttl = std::chrono::milliseconds(sf.etcd_ttl) / 2;
    if (get_duration(w, wp, "margin_ms", sf.etcd_margin, 1, 3600000) && sf.etcd_margin > half_ttl) {
      error(w["margin_ms"], wp + ".margin_ms",
            "must be at most half the TTL (" + std::to_string(half_ttl.count()) +
                " ms), or renewals every TTL/3 could not keep IDs flowing");
    }
  }

  void load_sequences(const YAML::Node& node, Config& c) {
    if (!node.IsSequence()) {
      error(node, "sequences", "expected a list of sequences");
      return;
    }
    std::map<std::string, int> seen;
    for (std::size_t i = 0; i < node.size(); ++i) {
      const auto n = node[i];
      const std::string p = "sequences[" + std::to_string(i) + "]";
      if (!expect_map(n, p, {"name", "kind"}, kAllKindKeys)) {
        continue;
      }
      SequenceConfig s;
      s.line = n.Mark().line + 1;
      s.increment = c.defaults.auto_increment_increment;
      s.offset = c.defaults.auto_increment_offset;
      s.cache = c.defaults.cache;
      s.max_rate = c.defaults.max_rate;
      if (!get_string(n, p, "name", s.name) || s.name.empty()) {
        error(n, p + ".name", "every sequence needs a name");
        continue;
      }
      check_name(n["name"], p + ".name", s.name);
      if (std::string kind; get_string(n, p, "kind", kind)) {
        if (auto k = parse_kind(kind)) {
          s.kind = *k;
        } else {
          error(n["kind"], p + ".kind",
                "unknown kind '" + kind + "' (expected " + kind_names_text() + ")");
        }
      }
      // Every key of any kind; the kind's row says which it takes.
      for (const auto key : kAllKindKeys) {
        const std::string k(key);
        if (n[k] && !kind_takes(s.kind, key)) {
          error(n[k], p + "." + k, "not used by kind " + std::string(kind_name(s.kind)));
        }
      }
      if (s.kind == SequenceKind::kGapless) {
        get_word(n, p, "order", kGaplessOrders, s.order, [](const std::string& order) {
          return "unknown order '" + order + "' (expected relaxed or strict)";
        });
        get_duration(n, p, "reservation_ttl_ms", s.reservation_ttl, 1, kMaxReservationTtlMs);
        get_duration(n, p, "max_reservation_ttl_ms", s.max_reservation_ttl, 1,
                     kMaxReservationTtlMs);
        get_duration(n, p, "strict_wait_ms", s.strict_wait, 1, kMaxStrictWaitMs);
        if (s.reservation_ttl > s.max_reservation_ttl) {
          error(n["reservation_ttl_ms"], p + ".reservation_ttl_ms",
                "reservation_ttl_ms is greater than max_reservation_ttl_ms");
        }
      }
      get_uint(n, p, "start", s.start, 1);
      get_uint(n, p, "increment", s.increment, 1, 65535);
      get_uint(n, p, "offset", s.offset, 1, 65535);
      get_uint(n, p, "max_value", s.max_value, 1);
      get_uint(n, p, "cache", s.cache, 1, 1000000000);
      get_uint(n, p, "max_rate", s.max_rate, 1, kMaxMaxRate);
      if (s.offset > s.increment) {
        error(n["offset"] ? n["offset"] : n, p + ".offset",
              "offset " + std::to_string(s.offset) + " is greater than increment " +
                  std::to_string(s.increment) + " (values must be ≡ offset mod increment)");
      }
      if (s.max_value != 0 && s.max_value < s.start) {
        error(n["max_value"], p + ".max_value", "max_value is less than start");
      }
      if (s.kind == SequenceKind::kGapless && s.max_value > 9223372036854775807ULL) {
        error(n["max_value"], p + ".max_value", "a gapless sequence ends at 2^63-1 at most");
      }
      if (auto [it, inserted] = seen.emplace(s.name, s.line); !inserted) {
        error(n["name"], p + ".name",
              "duplicate sequence name '" + s.name + "' (first defined on line " +
                  std::to_string(it->second) + ")");
        continue;
      }
      c.sequences.push_back(std::move(s));
    }
  }

  void load_worker_pools(const YAML::Node& node, Config& c) {
    if (!node.IsSequence()) {
      error(node, "worker_pools", "expected a list of worker pools");
      return;
    }
    constexpr std::uint64_t kMaxTtlS = 86400;
    std::map<std::string, int> seen;
    for (std::size_t i = 0; i < node.size(); ++i) {
      const auto n = node[i];
      const std::string p = "worker_pools[" + std::to_string(i) + "]";
      if (!expect_map(n, p,
                      {"name", "size", "worker_bits", "min_ttl_s", "max_ttl_s", "default_ttl_s"})) {
        continue;
      }
      WorkerPoolConfig w;
      w.line = n.Mark().line + 1;
      if (!get_string(n, p, "name", w.name) || w.name.empty()) {
        error(n, p + ".name", "every worker pool needs a name");
        continue;
      }
      check_name(n["name"], p + ".name", w.name);
      if (n["size"] && n["worker_bits"]) {
        error(n["worker_bits"], p + ".worker_bits", "give size or worker_bits, not both");
      } else if (n["worker_bits"]) {
        std::uint64_t bits = 0;
        if (get_uint(n, p, "worker_bits", bits, 0, 16)) w.size = std::uint32_t{1} << bits;
      } else if (n["size"]) {
        get_small_uint(n, p, "size", w.size, 1, 65536);
      } else {
        error(n, p + ".size", "a worker pool needs size or worker_bits (the number of IDs)");
      }
      get_duration(n, p, "min_ttl_s", w.min_ttl, 1, kMaxTtlS);
      get_duration(n, p, "max_ttl_s", w.max_ttl, 1, kMaxTtlS);
      get_duration(n, p, "default_ttl_s", w.default_ttl, 1, kMaxTtlS);
      if (w.min_ttl > w.default_ttl || w.default_ttl > w.max_ttl) {
        error(n, p,
              "TTLs must satisfy min_ttl_s <= default_ttl_s <= max_ttl_s, got " +
                  std::to_string(w.min_ttl.count()) + ", " + std::to_string(w.default_ttl.count()) +
                  ", " + std::to_string(w.max_ttl.count()));
      }
      if (auto [it, inserted] = seen.emplace(w.name, w.line); !inserted) {
        error(n["name"], p + ".name",
              "duplicate worker pool name '" + w.name + "' (first defined on line " +
                  std::to_string(it->second) + ")");
        continue;
      }
      c.worker_pools.push_back(std::move(w));
    }
  }
};

}  // namespace

LoadResult load_string(const std::string& text, const std::string& source_name,
                       const NameRule& name_rule) {
  LoadResult result;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    result.errors.push_back(source_name + ":" + std::to_string(e.mark.line + 1) +
                            ": YAML syntax error: " + e.msg);
    return result;
  }
  Loader loader(source_name, name_rule);
  Config c;
  try {
    c = loader.load(root);
  } catch (const YAML::Exception& e) {
    loader.error(root, "", std::string("unexpected YAML shape: ") + e.what());
  }
  result.errors = loader.take_errors();
  if (result.errors.empty()) result.config = std::move(c);
  return result;
}

LoadResult load_file(const std::string& path, const NameRule& name_rule) {
  // A directory (which an ifstream reads as empty), a FIFO (which would block start-up or a
  // reload) or a file too large to be a config is refused before anything is read.
  auto file = read_bounded_file(path, kMaxConfigBytes);
  if (!file.ok)
    return LoadResult{std::nullopt, {path + ": cannot read the config file: it " + file.error}};
  return load_string(file.bytes, path, name_rule);
}

}  // namespace ticketd::config
