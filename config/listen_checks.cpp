// Listen addresses and the exposure checks a loaded config must pass before ticketd binds.
#include <string>
#include <vector>

#include "config/config.h"
#include "server/base/parse_int.h"

namespace ticketd::config {

std::string ListenAddress::to_string() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::optional<ListenAddress> parse_listen(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  std::string host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return std::nullopt;  // IPv6 needs brackets
  }
  const auto port = parse_int<std::uint16_t>(std::string_view(text).substr(colon + 1));
  if (!port) return std::nullopt;
  return ListenAddress{host, *port};
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

bool has_plaintext_secrets(const Config& c) {
  for (const auto& u : c.mysql.users) {
    if (u.password_hash.empty()) return true;
  }
  for (const auto& t : c.http.tokens) {
    if (!t.starts_with(kTokenSha256Prefix)) return true;
  }
  return !c.storage.access.password.empty() || !c.snowflake.etcd_access.password.empty();
}

std::vector<std::string> check_exposure(const Config& c) {
  std::vector<std::string> problems;
  if (!is_loopback(c.mysql.listen.host)) {
    for (const auto& u : c.mysql.users) {
      // A hash of the default password is checked where hashes are computed (server/app).
      if (u.password_hash.empty() && (u.password == kDefaultPassword || u.password.empty())) {
        problems.push_back("mysql.listen " + c.mysql.listen.to_string() +
                           " is not a loopback address and user '" + u.name +
                           "' has the default or an empty password; set a real password");
      }
    }
  }
  if (!is_loopback(c.http.listen.host) && c.http.tokens.empty()) {
    problems.push_back("http.listen " + c.http.listen.to_string() +
                       " is not a loopback address and http.tokens is empty; configure tokens");
  }
  return problems;
}

}  // namespace ticketd::config
