// Where the config comes from: the file and the command-line flags that override it, read the
// same way at start-up and at every reload.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace ticketd {

/// The config file and the flags that override it (--data-dir, --mysql-listen, --http-listen),
/// and the start-only --force-* names (Config::force).
struct ConfigSource {
  std::string path;
  std::string data_dir;
  std::string mysql_listen;
  std::string http_listen;
  config::ForceFlags force;
};

struct ReadConfig {
  std::optional<config::Config> config;  // set when `errors` is empty
  std::vector<std::string> errors;       // every problem, with file, line and YAML path
  std::vector<std::string> warnings;     // e.g. a readable file with secrets in clear
};

/// Loads and checks the config: the YAML loader's errors, the flags, an exposed default password
/// or hash, the file's permissions (an error under security.strict_config_permissions, else a
/// warning), backup.dir outside data_dir.
[[nodiscard]] ReadConfig read_config(const ConfigSource& source);

}  // namespace ticketd
