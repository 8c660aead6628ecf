#include "server/mysql/login_policy.h"

#include "server/mysql/protocol/constants.h"

namespace ticketd::mysql {

std::string_view plugin_name(AuthPlugin plugin) {
  switch (plugin) {
    case AuthPlugin::kNativePassword:
      return kNativePasswordPlugin;
    case AuthPlugin::kCachingSha2Password:
      return kCachingSha2PasswordPlugin;
  }
  return kNativePasswordPlugin;
}

std::optional<AuthPlugin> plugin_named(std::string_view name) {
  if (name.empty() || name == kNativePasswordPlugin) return AuthPlugin::kNativePassword;
  if (name == kCachingSha2PasswordPlugin) return AuthPlugin::kCachingSha2Password;
  return std::nullopt;
}

UserAccount UserAccount::with_password(AuthPlugin plugin, std::string_view password) {
  UserAccount a;
  a.plugin = plugin;
  a.native = double_sha1(password);
  a.sha2 = double_sha256(password);
  return a;
}

}  // namespace ticketd::mysql
