// Plain configuration structs: what ticketd.yaml says, validated, with defaults applied.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/sequence_kind.h"
#include "server/base/utc_time.h"

namespace ticketd::config {

// The choices the file spells as words, parsed once by the loader. config/ sits below the core,
// so these are its own enums; server/app maps each onto the core's with one switch.
enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };
enum class StorageEngine { kRocksDb, kEtcd };
using ticketd::SequenceKind;  // one row per kind: server/base/sequence_kind.h
enum class GaplessOrder { kRelaxed, kStrict };
enum class SnowflakeFieldOrder { kTimeWorkerSequence, kTimeSequenceWorker };  // or Sonyflake's
enum class WorkerSource { kStatic, kEnv, kEtcd };
enum class ClockPolicy { kFail, kWait, kLogical };
enum class AuthPlugin { kNativePassword, kCachingSha2Password };

struct ListenAddress {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const ListenAddress&, const ListenAddress&) = default;
};

/// A user's secret is given one of two ways (never logged either way): `password` in clear, or
/// `password_hash`, the verifier of its plugin: "*" and 40 hex digits (SHA1(SHA1(password)), as
/// MySQL prints it) for mysql_native_password, "sha256x2:" and 64 hex digits
/// (SHA256(SHA256(password))) for caching_sha2_password. `ticketd hash-password` prints both.
struct MySqlUser {
  std::string name;
  std::string password;       // empty when password_hash is given
  std::string password_hash;  // empty when password is given; the form was checked
  AuthPlugin plugin = AuthPlugin::kNativePassword;  // given, implied by the hash, or the default
  friend bool operator==(const MySqlUser&, const MySqlUser&) = default;
};

/// `tls:` of a front end: the server's certificate chain and key (PEM), and optionally the CAs
/// that client certificates must chain to.
struct TlsConfig {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;               // empty: client certificates are not asked for
  bool require_client_cert = false;  // needs ca_file
  friend bool operator==(const TlsConfig&, const TlsConfig&) = default;
};

struct MySqlConfig {
  ListenAddress listen{"127.0.0.1", 3306};
  std::string database = "tickets";
  std::vector<MySqlUser> users;
  AuthPlugin default_auth_plugin = AuthPlugin::kNativePassword;  // named in the greeting
  std::optional<TlsConfig> tls;                                  // CLIENT_SSL is offered when set
  bool require_secure_transport = false;  // refuse logins outside TLS (needs tls)
  std::uint32_t max_connections = 10000;
  std::chrono::seconds wait_timeout{28800};
  std::uint32_t max_allowed_packet = 16 * 1024 * 1024;
  std::uint32_t max_prepared_stmt_count = 16382;
  std::chrono::seconds net_read_timeout{30};   // limit for the rest of a packet once it has begun
  std::chrono::seconds net_write_timeout{60};  // limit for each write of an answer
  std::chrono::seconds connect_timeout{10};    // limit for the whole login exchange
  std::uint64_t connection_memory_limit = 64ULL * 1024 * 1024;
  std::uint64_t global_connection_memory_limit = 1024ULL * 1024 * 1024;
  friend bool operator==(const MySqlConfig&, const MySqlConfig&) = default;
};

struct HttpConfig {
  ListenAddress listen{"127.0.0.1", 8080};
  /// Bearer tokens, never logged: in clear (16 characters or more) or as "sha256:" and the hex
  /// SHA-256 of the token (`ticketd hash-token` prints it).
  std::vector<std::string> tokens;
  std::optional<TlsConfig> tls;  // HTTPS when set
  std::uint64_t max_block_size = 100000;
  bool metrics_public = false;
  std::uint32_t max_connections = 1000;
  std::chrono::milliseconds header_timeout{5000};  // accept to first request header; any header
  std::chrono::milliseconds idle_timeout{15000};   // between requests on a kept-alive connection
  /// How long hi-lo lease records are kept (`lease_retention: 30d`), or how many per sequence
  /// (`lease_retention: 100000`): older ones are pruned in the background.
  std::chrono::hours lease_retention{24 * 30};
  std::uint64_t lease_retention_count = 0;  // set: keep this many per sequence instead
  friend bool operator==(const HttpConfig&, const HttpConfig&) = default;
};

/// The default max_rate of ticket sequences (values per second): the engine's kDefaultMaxRate.
inline constexpr std::uint64_t kDefaultMaxRate = 100000000;
inline constexpr std::uint64_t kMaxMaxRate = 1000000000000;

struct Defaults {
  std::uint64_t auto_increment_increment = 1;
  std::uint64_t auto_increment_offset = 1;
  std::uint64_t cache = 1000;
  std::uint64_t max_rate = kDefaultMaxRate;
  friend bool operator==(const Defaults&, const Defaults&) = default;
};

struct SequenceConfig {
  std::string name;
  SequenceKind kind = SequenceKind::kTicket;
  std::uint64_t start = 1;
  std::uint64_t increment = 1;               // from defaults when not given
  std::uint64_t offset = 1;                  // from defaults when not given
  std::uint64_t max_value = 0;               // 0: the engine default
  std::uint64_t cache = 1000;                // from defaults when not given
  std::uint64_t max_rate = kDefaultMaxRate;  // kind: ticket only; from defaults when not given
  // kind: gapless only
  GaplessOrder order = GaplessOrder::kRelaxed;
  std::chrono::milliseconds reservation_ttl{30000};
  std::chrono::milliseconds max_reservation_ttl{3600000};
  std::chrono::milliseconds strict_wait{5000};
  int line = 0;  // where it was defined, for messages
  friend bool operator==(const SequenceConfig&, const SequenceConfig&) = default;
};

/// How ticketd reaches a secured etcd (`storage:` and `snowflake.worker_id` with `source: etcd`):
/// with https:// endpoints, the CAs etcd's certificate must chain to and an optional client
/// certificate; with etcd's auth enabled, a user and its password (never logged; a reason for
/// the file to be private, like the other passwords in clear).
struct EtcdAccess {
  std::string ca_file;    // PEM; empty: the system's CAs
  std::string cert_file;  // PEM, with key_file: for etcd's --client-cert-auth
  std::string key_file;
  std::string username;  // empty: etcd's auth is not used
  std::string password;
  friend bool operator==(const EtcdAccess&, const EtcdAccess&) = default;
};

/// The `snowflake:` section: the bit layout and worker identity of `kind: snowflake` sequences.
struct SnowflakeConfig {
  std::string epoch = "2026-01-01T00:00:00Z";
  std::int64_t epoch_unix_ms = 1767225600000;  // the epoch above, parsed
  int time_bits = 41;
  int worker_bits = 10;
  int sequence_bits = 12;
  std::chrono::milliseconds time_unit{1};
  SnowflakeFieldOrder order = SnowflakeFieldOrder::kTimeWorkerSequence;
  WorkerSource worker_source = WorkerSource::kStatic;
  std::uint64_t worker_id = 0;              // static
  std::string worker_env;                   // env: the variable holding the worker id
  std::vector<std::string> etcd_endpoints;  // etcd: http(s)://HOST:PORT, tried in order
  EtcdAccess etcd_access;                   // etcd: TLS files and credentials
  std::string etcd_prefix = "/ticketd/workers/";
  std::chrono::seconds etcd_ttl{10};
  std::chrono::milliseconds etcd_margin{0};  // 0 (not in the file): a quarter of the TTL
  ClockPolicy clock_policy = ClockPolicy::kWait;
  std::chrono::milliseconds max_backward{5};
  int line = 0;
  friend bool operator==(const SnowflakeConfig&, const SnowflakeConfig&) = default;
};

/// One `worker_pools:` entry: worker IDs 0..size-1 leased to services that run their own
/// Snowflake generator, and the TTLs a holder may ask for.
struct WorkerPoolConfig {
  std::string name;
  std::uint32_t size = 0;  // from `size`, or 2^worker_bits
  std::chrono::seconds min_ttl{1};
  std::chrono::seconds max_ttl{300};
  std::chrono::seconds default_ttl{10};
  int line = 0;
  friend bool operator==(const WorkerPoolConfig&, const WorkerPoolConfig&) = default;
};

/// The `storage:` section. `rocksdb` (the default) keeps data in data_dir; `etcd` keeps it in an
/// etcd cluster shared by several ticketd instances, of which one (the elected leader) serves.
struct StorageConfig {
  StorageEngine engine = StorageEngine::kRocksDb;
  std::vector<std::string> endpoints;  // etcd: http(s)://HOST:PORT, tried in order
  EtcdAccess access;                   // etcd: TLS files and credentials
  std::string prefix = "/ticketd/";    // etcd: one group of ticketd instances per prefix
  std::chrono::seconds leader_ttl{5};  // etcd: the leader lease's TTL
  int line = 0;
  friend bool operator==(const StorageConfig&, const StorageConfig&) = default;
};

/// What an HTTP follower answers on the routes only the leader serves (`ha.follower_http`).
enum class FollowerHttp { kRefuse, kRedirect };

/// The `ha:` section: behaviour of standby instances (storage.engine etcd).
struct HaConfig {
  /// refuse: 503 not_leader naming the leader; redirect: 307 to the same target on the leader.
  FollowerHttp follower_http = FollowerHttp::kRefuse;
  friend bool operator==(const HaConfig&, const HaConfig&) = default;
};

/// The `backup:` section. `dir` is where POST /v1/admin/backup writes backups (one directory
/// each); empty: online backups are off.
struct BackupConfig {
  std::string dir;
  friend bool operator==(const BackupConfig&, const BackupConfig&) = default;
};

/// The `durability:` section. `external_mark` is a file outside the data directory (another
/// volume) that every commit reaches before its values are served; a data directory rolled back
/// as a whole is refused at start and by verify. Empty: none (rocksdb engine only).
struct DurabilityConfig {
  std::string external_mark;
  friend bool operator==(const DurabilityConfig&, const DurabilityConfig&) = default;
};

struct SecurityConfig {
  bool strict_config_permissions = false;  // refuse (not just warn) a readable file with secrets
  friend bool operator==(const SecurityConfig&, const SecurityConfig&) = default;
};

/// The start-only --force-* flags: each names ticket sequences of the config whose stored
/// settings the config may override at this start, an explicit choice that is audited.
struct ForceFlags {
  /// --force-grid-change NAME: the configured increment/offset replace the stored grid.
  std::vector<std::string> grid_change;
  /// --force-rate-raise NAME: a configured max_rate above the stored one applies.
  std::vector<std::string> rate_raise;
  /// --force-not-in-backup NAME: in a store restored from a backup that did not hold NAME, a
  /// sequence NAME created in this run (by the config or DDL) starts at its own start, not
  /// above the restore floor; the operator says it never existed after that backup.
  std::vector<std::string> not_in_backup;
  friend bool operator==(const ForceFlags&, const ForceFlags&) = default;
};

/// One row per flag: its command-line name, the list it fills, and whether each name must be a
/// ticket sequence of the config (else any name: one created later by DDL too).
struct ForceFlag {
  std::string_view flag;
  std::vector<std::string> ForceFlags::*names;
  bool configured_ticket = true;
};
inline constexpr ForceFlag kForceFlags[] = {
    {"--force-grid-change", &ForceFlags::grid_change},
    {"--force-rate-raise", &ForceFlags::rate_raise},
    {"--force-not-in-backup", &ForceFlags::not_in_backup, false},
};

struct Config {
  std::string data_dir = "./data";  // unused (and not locked) with storage.engine etcd
  unsigned threads = 0;             // 0: one per core
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kText;  // text lines for people, JSON lines for shippers
  MySqlConfig mysql;
  HttpConfig http;
  Defaults defaults;
  SnowflakeConfig snowflake;
  StorageConfig storage;
  HaConfig ha;
  SecurityConfig security;
  BackupConfig backup;
  DurabilityConfig durability;
  std::vector<SequenceConfig> sequences;
  std::vector<WorkerPoolConfig> worker_pools;
  /// The start-only --force-* flags (never read from the file, never applied by a reload).
  ForceFlags force;
  friend bool operator==(const Config&, const Config&) = default;
};

/// Parses "YYYY-MM-DDTHH:MM:SS[.mmm]Z" to Unix milliseconds (snowflake.epoch).
using ::ticketd::parse_utc_ms;

/// The password the shipped config uses; refused on a non-loopback MySQL listen address.
inline constexpr const char* kDefaultPassword = "ticket";
/// The password_hash of the packaged config (/etc/ticketd/ticketd.yaml): refused, with the file,
/// line and key, until the operator puts a real hash there, so a fresh install never serves a
/// password everyone knows.
inline constexpr std::string_view kPasswordHashPlaceholder = "CHANGE-ME";
/// The prefixes of hashed secrets.
inline constexpr std::string_view kSha256x2Prefix = "sha256x2:";
inline constexpr std::string_view kTokenSha256Prefix = "sha256:";

/// True when the config holds a password or token in clear (a reason to keep the file private).
[[nodiscard]] bool has_plaintext_secrets(const Config& config);

/// The naming rule for sequences and worker pools: returns the problem with a name, or empty.
/// The rule itself lives in the core (ticketd::validate_name) so that the config, the HTTP API
/// and SQL refuse the same names; the caller passes it in, as config/ depends on nothing above.
using NameRule = std::function<std::string(std::string_view)>;

/// Loads and validates a YAML config. On failure returns every problem found, one line each,
/// each naming the YAML path and line ("ticketd.yaml:12: sequences[1].offset: ..."). A file that
/// is empty, holds only a null document or comments, or cannot be read (a directory) is an error:
/// a truncated config must not start a server on every default. Duplicate keys in a mapping, at
/// any depth, are errors naming both lines.
struct LoadResult {
  std::optional<Config> config;
  std::vector<std::string> errors;
};
/// The largest config file read (a config with thousands of sequences is far smaller).
inline constexpr std::size_t kMaxConfigBytes = 4 * 1024 * 1024;
[[nodiscard]] LoadResult load_file(const std::string& path, const NameRule& name_rule);
[[nodiscard]] LoadResult load_string(const std::string& text, const std::string& source_name,
                                     const NameRule& name_rule);

/// Parses "host:port" (IPv6 as "[::1]:port").
[[nodiscard]] std::optional<ListenAddress> parse_listen(const std::string& text);
[[nodiscard]] bool is_loopback(const std::string& host);

/// Checks that would expose the server: called after command-line overrides are applied.
/// Returns every problem found; empty means safe to start.
[[nodiscard]] std::vector<std::string> check_exposure(const Config& config);

}  // namespace ticketd::config
