#include "server/app/config_source.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "server/app/secrets.h"
#include "server/core/sequence_spec.h"

namespace ticketd {

ReadConfig read_config(const ConfigSource& source) {
  ReadConfig out;
  auto loaded = config::load_file(source.path, validate_name);
  std::vector<std::string>& errors = out.errors;
  errors = loaded.errors;
  config::Config cfg;
  if (loaded.config) cfg = std::move(*loaded.config);
  if (!source.data_dir.empty()) cfg.data_dir = source.data_dir;
  auto override_listen = [&](const std::string& text, const char* flag,
                             config::ListenAddress& target) {
    if (text.empty()) return;
    if (auto a = config::parse_listen(text)) {
      target = *a;
    } else {
      errors.push_back(std::string(flag) + ": expected HOST:PORT, got '" + text + "'");
    }
  };
  override_listen(source.mysql_listen, "--mysql-listen", cfg.mysql.listen);
  override_listen(source.http_listen, "--http-listen", cfg.http.listen);
  for (const auto& row : config::kForceFlags) {
    if (!row.configured_ticket) continue;
    for (const auto& name : source.force.*row.names) {
      const bool configured = std::any_of(
          cfg.sequences.begin(), cfg.sequences.end(),
          [&](const auto& s) { return s.name == name && s.kind == SequenceKind::kTicket; });
      if (loaded.config && !configured) {
        errors.push_back(std::string(row.flag) + " " + name +
                         ": the config has no ticket sequence '" + name + "'");
      }
    }
  }
  cfg.force = source.force;
  if (loaded.config) {
    for (auto& p : config::check_exposure(cfg)) errors.push_back("refusing to start: " + p);
    for (auto& p : exposed_default_hashes(cfg)) errors.push_back("refusing to start: " + p);
    if (!cfg.backup.dir.empty()) {
      // A checkpoint inside the data dir would be copied into every later backup of it.
      namespace fs = std::filesystem;
      const auto data = fs::weakly_canonical(fs::absolute(cfg.data_dir)).string() + "/";
      const auto backups = fs::weakly_canonical(fs::absolute(cfg.backup.dir)).string() + "/";
      if (backups.starts_with(data)) {
        errors.push_back("backup.dir '" + cfg.backup.dir + "' must be outside data_dir '" +
                         cfg.data_dir + "'");
      }
    }
    if (auto p = config_permission_problem(source.path, cfg)) {
      if (cfg.security.strict_config_permissions) {
        errors.push_back("refusing to start (security.strict_config_permissions): " + *p);
      } else {
        out.warnings.push_back(*p);
      }
    }
  }
  if (errors.empty() && loaded.config) out.config = std::move(cfg);
  return out;
}

}  // namespace ticketd
