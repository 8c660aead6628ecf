// Secrets at the edge of the process: verifiers built from the config, the `hash-password` and
// `hash-token` commands, and the checks on a config file that holds secrets in clear.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "server/http/auth.h"
#include "server/mysql/login_policy.h"

namespace ticketd {

/// The front end's plugin for the config's word.
[[nodiscard]] mysql::AuthPlugin to_mysql(config::AuthPlugin plugin);

/// The MySQL accounts and transport rules: each user's verifier from its password (hashed
/// here, the plaintext is not kept) or its password_hash.
[[nodiscard]] mysql::LoginPolicy login_policy(const config::Config& config);

/// The HTTP bearer-token verifiers of http.tokens.
[[nodiscard]] std::vector<http::TokenVerifier> token_verifiers(const config::Config& config);

/// Users whose password_hash is the default password's, refused on a non-loopback address like
/// the default password in clear (config::check_exposure, which cannot hash).
[[nodiscard]] std::vector<std::string> exposed_default_hashes(const config::Config& config);

/// `ticketd hash-password`: reads a password from `in` (one line; a terminal gets no echo) and
/// prints the password_hash of both plugins. `ticketd hash-token` prints an http.tokens entry.
/// Never from argv: the process list and shell history would show it. Exit code 0, or 2 when
/// the input is empty.
int hash_password_command(std::FILE* in, std::FILE* out);
int hash_token_command(std::FILE* in, std::FILE* out);

/// A config file that other users may read (world-readable, or through a group not this
/// process's own) while it holds a password or token in clear: a warning
/// line (or, with security.strict_config_permissions, the reason to refuse). nullopt when the
/// file is private or holds only hashes.
[[nodiscard]] std::optional<std::string> config_permission_problem(const std::string& path,
                                                                   const config::Config& config);

}  // namespace ticketd
