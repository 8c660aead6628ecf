// ticketd: a durable ticket server. Parses the command line, loads the config, runs the daemon.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "server/app/backup_commands.h"
#include "server/app/config_mapping.h"
#include "server/app/config_source.h"
#include "server/app/daemon.h"
#include "server/app/fd_limit.h"
#include "server/app/secrets.h"
#include "server/app/verify.h"
#include "server/base/command_line.h"
#include "server/base/exit_code.h"
#include "server/base/log.h"
#include "server/core/sequence_spec.h"
#include "server/migrate/import_command.h"
#include "server/plan/plan_command.h"
#include "server/restride/restride_command.h"

#ifndef TICKETD_VERSION
#define TICKETD_VERSION "0.0.0"
#endif

namespace {

constexpr const char* kUsage =
    "usage: ticketd --config FILE [--data-dir DIR] [--mysql-listen HOST:PORT]\n"
    "               [--http-listen HOST:PORT] [--force-grid-change NAME]...\n"
    "               [--force-rate-raise NAME]... [--force-not-in-backup NAME]...\n"
    "       ticketd verify --data-dir DIR [--external-mark FILE]\n"
    "       ticketd backup --data-dir DIR --to OUT\n"
    "       ticketd restore --from BACKUP --data-dir DIR [--skip-ahead auto|peak|N|NAME=N]...\n"
    "               [--gapless NAME=N]... [--external-mark FILE] [--force]\n"
    "       ticketd hash-password | hash-token   (the secret on stdin)\n"
    "       ticketd import --from mysql://USER@HOST:PORT/DB --data-dir DIR  (import --help)\n"
    "       ticketd restride --sequence NAME --servers HOST:PORT,...  (restride --help)\n"
    "       ticketd plan --kind KIND [--ids-per-second N] [--years Y]  (plan --help)\n"
    "       ticketd --help | --version\n"
    "\n"
    "  --config FILE            YAML configuration (see docs/operations.md for every key)\n"
    "  --data-dir DIR           overrides data_dir\n"
    "  --mysql-listen HOST:PORT overrides mysql.listen\n"
    "  --http-listen HOST:PORT  overrides http.listen\n"
    "  --force-grid-change NAME lets the config's increment/offset replace sequence NAME's\n"
    "                           stored grid at this start (logged; only when no other server\n"
    "                           shares its values: otherwise `ticketd restride`)\n"
    "  --force-rate-raise NAME  lets the config raise sequence NAME's max_rate at this start\n"
    "                           (logged; backups taken before it need --skip-ahead NAME=N)\n"
    "  --force-not-in-backup NAME  in a restored data dir, sequence NAME (not in the backup)\n"
    "                           is created at its own start, not above the restore floor\n"
    "                           (logged; only if it never existed after the backup)\n"
    "  verify                   checks the stored invariants of a stopped server's data dir\n"
    "                           (exit 0: they hold, 1: a violation, 3: cannot open)\n"
    "  --external-mark FILE     (verify, restore) durability.external_mark: verify checks the\n"
    "                           store against it; restore makes it the new data dir's\n"
    "  backup                   a consistent backup of a stopped server's data dir (a running\n"
    "                           one: POST /v1/admin/backup)\n"
    "  restore                  makes a data dir of a backup, every ticket ceiling raised past\n"
    "                           what may have been issued since (auto: max_rate x age, the\n"
    "                           most it can have issued); gapless sequences need the last\n"
    "                           number used\n"
    "  hash-password            reads a password from stdin, prints its password_hash for\n"
    "                           mysql_native_password and caching_sha2_password\n"
    "  hash-token               reads a bearer token from stdin, prints its http.tokens entry\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "ticketd: %s\n%s", message.c_str(), kUsage);
  return ticketd::exit_status(ticketd::ExitCode::kRefused);
}

}  // namespace

namespace ticketd {
namespace {

// The subcommands that parse their own arguments (hash-password and hash-token take none): the
// exit status of the one argv names, nothing when it names none of them.
std::optional<int> run_own_command(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "hash-password") {
    return hash_password_command(stdin, stdout);
  }
  if (argc == 2 && std::string_view(argv[1]) == "hash-token") {
    return hash_token_command(stdin, stdout);
  }
  if (argc >= 2 && std::string_view(argv[1]) == "backup") return backup_command(argc, argv, stdout);
  if (argc >= 2 && std::string_view(argv[1]) == "restore") {
    return restore_command(argc, argv, stdout);
  }
  if (argc >= 2 && std::string_view(argv[1]) == "import") {
    return import_command(argc, argv, stdout, stderr);
  }
  if (argc >= 2 && std::string_view(argv[1]) == "restride") {
    return restride_command(argc, argv, stdout, stderr);
  }
  if (argc >= 2 && std::string_view(argv[1]) == "plan") {
    return plan_command(argc, argv, stdout, stderr);
  }
  return std::nullopt;
}

// What the options of `ticketd` and `ticketd verify` say.
struct Arguments {
  ConfigSource source;        // --config (its path), --data-dir, --*-listen, --force-*
  std::string external_mark;  // --external-mark, verify only
};

// Takes `words` into `args`; the usage problem, empty when there is none.
std::string parse_arguments(std::span<char* const> words, bool verify, Arguments& args) {
  std::vector<CommandOption> options = {
      text_option("--config", args.source.path),
      text_option("--data-dir", args.source.data_dir),
      text_option("--mysql-listen", args.source.mysql_listen),
      text_option("--http-listen", args.source.http_listen),
  };
  if (verify) options.push_back(text_option("--external-mark", args.external_mark));
  config::ForceFlags& force = args.source.force;
  for (const auto& row : config::kForceFlags) {
    options.push_back({row.flag, true, [&force, &row](const std::string& name) {
                         (force.*row.names).push_back(name);
                         return std::string();
                       }});
  }
  return parse_command_line(words, options);
}

// Runs the daemon, and re-executes this binary when it lost the leadership; the exit status.
int run_daemon(config::Config cfg, const ConfigSource& source, char** argv) {
  try {
    const int rc = Daemon(std::move(cfg), source).run();
    if (rc == exit_status(ExitCode::kRestartAsFollower)) {
      // Same binary, same arguments: a clean follower (every cache and in-memory ceiling of the
      // deposed leader is gone with the old image).
      log::info("re-executing as a follower");
      execv("/proc/self/exe", argv);
      log::error(std::string("execv failed: ") + std::strerror(errno));
      return exit_status(ExitCode::kFailed);
    }
    return rc;
  } catch (const std::exception& e) {
    log::error(std::string("fatal: ") + e.what());
    return exit_status(ExitCode::kFailed);
  }
}

}  // namespace
}  // namespace ticketd

int main(int argc, char** argv) {
  using namespace ticketd;
  if (auto rc = run_own_command(argc, argv)) return *rc;
  const bool verify = argc >= 2 && std::string_view(argv[1]) == "verify";
  const std::span words(argv + (verify ? 2 : 1), argv + argc);
  if (has_word(words, {"--help", "-h"})) {
    std::fputs(kUsage, stdout);
    return exit_status(ExitCode::kOk);
  }
  if (has_word(words, {"--version"})) {
    std::printf("ticketd %s\n", TICKETD_VERSION);
    return exit_status(ExitCode::kOk);
  }
  Arguments args;
  if (auto problem = parse_arguments(words, verify, args); !problem.empty()) {
    return usage_error(problem);
  }
  if (verify) {
    if (args.source.data_dir.empty()) return usage_error("verify needs --data-dir DIR");
    return verify_data_dir(args.source.data_dir, args.external_mark, stdout);
  }
  if (args.source.path.empty()) return usage_error("--config FILE is required");

  const ConfigSource& source = args.source;
  ReadConfig read = read_config(source);
  // The format applies before the first line (the config's warnings); what comes before the
  // config is read (usage and config errors) is plain text on stderr, not log lines.
  if (read.config) log::set_format(to_core(read.config->log_format));
  for (const auto& w : read.warnings) log::warn(w);
  if (!read.config) {
    for (const auto& e : read.errors) std::fprintf(stderr, "ticketd: %s\n", e.c_str());
    return exit_status(ExitCode::kRefused);
  }
  config::Config cfg = std::move(*read.config);
  // Every connection costs a descriptor: the caps must fit under the limit, or a flood on one
  // front end (accept failing with EMFILE) would lock clients out of the other.
  const FdLimit fds = raise_fd_limit();
  if (auto problem =
          fd_budget_problem(fds.soft, cfg.mysql.max_connections, cfg.http.max_connections);
      !problem.empty()) {
    std::fprintf(stderr, "ticketd: refusing to start: %s\n", problem.c_str());
    return exit_status(ExitCode::kRefused);
  }
  log::set_level(to_core(cfg.log_level));

  if (fds.raised) log::info("open-file limit raised to " + std::to_string(fds.soft));
  return run_daemon(std::move(cfg), source, argv);
}
