#include "server/app/secrets.h"

#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <string_view>

#include "server/base/exit_code.h"
#include "server/base/hex.h"
#include "server/mysql/protocol/auth.h"

namespace ticketd {
namespace {

// The account a password_hash describes (the loader checked the form).
mysql::UserAccount from_hash(const config::MySqlUser& u) {
  mysql::UserAccount a;
  a.plugin = to_mysql(u.plugin);
  const std::string_view h = u.password_hash;
  if (h.starts_with('*')) {
    if (auto d = from_hex<20>(h.substr(1))) a.native = *d;
  } else if (h.starts_with(config::kSha256x2Prefix)) {
    if (auto d = from_hex<32>(h.substr(config::kSha256x2Prefix.size()))) a.sha2 = *d;
  }
  return a;
}

// One line from `in` without its line end; echo is off while a terminal types it.
std::optional<std::string> read_secret(std::FILE* in, const char* prompt) {
  const int fd = fileno(in);
  termios saved{};
  const bool tty = isatty(fd) == 1 && tcgetattr(fd, &saved) == 0;
  if (tty) {
    std::fputs(prompt, stderr);
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  std::string line;
  for (int c = std::fgetc(in); c != EOF && c != '\n'; c = std::fgetc(in)) {
    line.push_back(static_cast<char>(c));
  }
  if (tty) {
    tcsetattr(fd, TCSAFLUSH, &saved);
    std::fputs("\n", stderr);
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) return std::nullopt;
  return line;
}

}  // namespace

mysql::AuthPlugin to_mysql(config::AuthPlugin p) {
  switch (p) {
    case config::AuthPlugin::kNativePassword:
      return mysql::AuthPlugin::kNativePassword;
    case config::AuthPlugin::kCachingSha2Password:
      return mysql::AuthPlugin::kCachingSha2Password;
  }
  return mysql::AuthPlugin::kNativePassword;
}

mysql::LoginPolicy login_policy(const config::Config& config) {
  mysql::LoginPolicy p;
  for (const auto& u : config.mysql.users) {
    p.users[u.name] = u.password_hash.empty()
                          ? mysql::UserAccount::with_password(to_mysql(u.plugin), u.password)
                          : from_hash(u);
  }
  p.default_plugin = to_mysql(config.mysql.default_auth_plugin);
  p.tls_available = config.mysql.tls.has_value();
  p.require_secure_transport = config.mysql.require_secure_transport;
  return p;
}

std::vector<http::TokenVerifier> token_verifiers(const config::Config& config) {
  return {config.http.tokens.begin(), config.http.tokens.end()};
}

std::vector<std::string> exposed_default_hashes(const config::Config& config) {
  std::vector<std::string> problems;
  if (config::is_loopback(config.mysql.listen.host)) return problems;
  const auto weak = mysql::UserAccount::with_password(mysql::AuthPlugin::kNativePassword,
                                                      config::kDefaultPassword);
  for (const auto& u : config.mysql.users) {
    if (u.password_hash.empty()) continue;
    const auto a = from_hash(u);
    const bool is_default = a.plugin == mysql::AuthPlugin::kNativePassword ? a.native == weak.native
                                                                           : a.sha2 == weak.sha2;
    if (is_default) {
      problems.push_back("mysql.listen " + config.mysql.listen.to_string() +
                         " is not a loopback address and user '" + u.name +
                         "' has the default password (as password_hash); set a real password");
    }
  }
  return problems;
}

int hash_password_command(std::FILE* in, std::FILE* out) {
  const auto password = read_secret(in, "password: ");
  if (!password) {
    std::fputs("ticketd hash-password: no password on stdin\n", stderr);
    return exit_status(ExitCode::kRefused);
  }
  std::fprintf(out, "mysql_native_password: *%s\n", to_hex(mysql::double_sha1(*password)).c_str());
  std::fprintf(out, "caching_sha2_password: %s%s\n", std::string(config::kSha256x2Prefix).c_str(),
               to_hex(mysql::double_sha256(*password)).c_str());
  return exit_status(ExitCode::kOk);
}

int hash_token_command(std::FILE* in, std::FILE* out) {
  const auto token = read_secret(in, "token: ");
  if (!token) {
    std::fputs("ticketd hash-token: no token on stdin\n", stderr);
    return exit_status(ExitCode::kRefused);
  }
  std::fprintf(out, "%s%s\n", std::string(config::kTokenSha256Prefix).c_str(),
               to_hex(http::token_digest(*token)).c_str());
  return exit_status(ExitCode::kOk);
}

std::optional<std::string> config_permission_problem(const std::string& path,
                                                     const config::Config& config) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  // Readable by another user: world-readable, or group-readable by a group that is not this
  // process's own (a packaged root:ticketd 0640 file, read by ticketd through its group, is fine).
  const bool others =
      (st.st_mode & S_IROTH) != 0 || ((st.st_mode & S_IRGRP) != 0 && st.st_gid != ::getegid());
  if (!others || !config::has_plaintext_secrets(config)) return std::nullopt;
  return path + " holds a password or token in clear and is readable by other users (mode " +
         std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
         std::to_string(st.st_mode & 7) +
         "); chmod 600 it, or use password_hash and sha256: tokens (ticketd hash-password, "
         "ticketd hash-token)";
}

}  // namespace ticketd
