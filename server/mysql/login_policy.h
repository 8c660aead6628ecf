// Who may log in over MySQL, with which authentication plugin, and over which transport.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/mysql/protocol/auth.h"

namespace ticketd::mysql {

enum class AuthPlugin : std::uint8_t { kNativePassword, kCachingSha2Password };

/// The plugin's name on the wire ("mysql_native_password", "caching_sha2_password").
[[nodiscard]] std::string_view plugin_name(AuthPlugin plugin);
/// The plugin a client names; a missing or empty name means mysql_native_password (clients
/// without CLIENT_PLUGIN_AUTH); nullopt for any other plugin.
[[nodiscard]] std::optional<AuthPlugin> plugin_named(std::string_view name);

/// One account: its plugin (each user has exactly one, as in MySQL) and that plugin's verifier,
/// never the password.
struct UserAccount {
  AuthPlugin plugin = AuthPlugin::kNativePassword;
  Sha1Digest native{};  // mysql_native_password: SHA1(SHA1(password))
  Sha256Digest sha2{};  // caching_sha2_password: SHA256(SHA256(password))

  [[nodiscard]] static UserAccount with_password(AuthPlugin plugin, std::string_view password);
};

using UserTable = std::unordered_map<std::string, UserAccount>;

/// Built once at start-up; read by every connection (immutable while sessions run).
struct LoginPolicy {
  UserTable users;
  /// Named in the greeting: the plugin a client tries first (mysql.default_auth_plugin).
  AuthPlugin default_plugin = AuthPlugin::kNativePassword;
  bool tls_available = false;             // CLIENT_SSL is advertised (mysql.tls)
  bool require_secure_transport = false;  // a login outside TLS is refused with ERR 3159
};

}  // namespace ticketd::mysql
