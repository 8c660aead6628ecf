// The connection phase of ServerConnection: HandshakeResponse41, the TLS upgrade, auth plugin
// switches, caching_sha2_password's fast and full authentication, and the login's outcome.
#include <utility>

#include "server/base/log.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/protocol/binary_value.h"
#include "server/mysql/protocol/commands.h"
#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/handshake.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/mysql/protocol/prepared_statement.h"
#include "server/mysql/protocol/result_set.h"
#include "server/mysql/result_columns.h"
#include "server/mysql/server_connection.h"
#include "server/sql/query_text.h"
#include "server/sql/recognizer.h"

namespace ticketd::mysql {

void ServerConnection::tls_started(std::string version, std::string cipher) {
  session_.tls_version = std::move(version);
  session_.tls_cipher = std::move(cipher);
  state_ = State::kAwaitHandshakeResponse;
}

void ServerConnection::handle_handshake_response(std::string_view payload, const Done& done) {
  auto decoded = decode_handshake_response(as_bytes(payload));
  if (!decoded) return done(error_output(ConnectionErrc::kBadHandshake, {""}));
  if (const auto* ssl = std::get_if<SslRequest>(&*decoded)) {
    if (!login_.tls_available || secure()) {
      return done(secure() ? error_output(ConnectionErrc::kBadHandshake, {": a second SSL request"})
                           : error_output(ConnectionErrc::kTlsNotConfigured));
    }
    client_caps_ = ssl->capabilities & server_caps_;
    state_ = State::kAwaitTls;
    Output o;
    o.start_tls = true;
    return done(std::move(o));
  }
  const auto& r = std::get<HandshakeResponse41>(*decoded);
  if ((r.capabilities & kClientProtocol41) == 0) {
    return done(error_output(ConnectionErrc::kBadHandshake, {": protocol 4.1 is required"}));
  }
  if (login_.require_secure_transport && !secure()) {
    // ER_SECURE_TRANSPORT_REQUIRED, in mysqld's words.
    return done(error_output(ConnectionErrc::kSecureTransportRequired));
  }
  client_caps_ = r.capabilities & server_caps_;
  multi_statements_ = (client_caps_ & kClientMultiStatements) != 0;
  pending_user_ = r.username;
  pending_database_ = r.database;
  const auto user = login_.users.find(pending_user_);
  account_ = pending_user_.empty() || user == login_.users.end() ? nullptr : &user->second;
  const AuthPlugin wanted = pending_account().plugin;
  const auto tried = plugin_named(r.auth_plugin_name.value_or(""));
  if (tried != wanted) {
    if ((client_caps_ & kClientPluginAuth) == 0) {
      // No way to switch: the client computed a mysql_native_password token.
      if (hooks_.on_auth_failure) hooks_.on_auth_failure(pending_user_);
      return done(error_output(ConnectionErrc::kAccessDenied,
                               {clip_for_message(pending_user_), session_.host,
                                " (the user's " + std::string(plugin_name(wanted)) +
                                    " needs a client with CLIENT_PLUGIN_AUTH)"}));
    }
    // The user's own plugin decides (a client that tried another is switched, as by mysqld).
    Output o;
    append(o.bytes, to_payload(auth_switch(plugin_name(wanted), scramble_)));
    state_ = State::kAwaitAuthSwitchResponse;
    return done(std::move(o));
  }
  check_token(r.auth_response, done);
}

const UserAccount& ServerConnection::pending_account() const {
  // An unknown user is checked against a fixed account of the default plugin, so it costs the
  // same hashing as a wrong password and the answer's timing does not tell which names exist.
  static const UserAccount kNoSuchUser[] = {
      UserAccount::with_password(AuthPlugin::kNativePassword, "ticketd: no such user"),
      UserAccount::with_password(AuthPlugin::kCachingSha2Password, "ticketd: no such user")};
  if (account_ != nullptr) return *account_;
  return kNoSuchUser[login_.default_plugin == AuthPlugin::kNativePassword ? 0 : 1];
}

void ServerConnection::handle_auth_switch_response(std::string_view payload, const Done& done) {
  check_token(decode_auth_switch_response(as_bytes(payload)), done);
}

bool ServerConnection::admitted(const Done& done) {
  if (!hooks_.admit_login || hooks_.admit_login(pending_user_)) return true;
  done(error_output(ConnectionErrc::kLoginsThrottled,
                    {clip_for_message(pending_user_), session_.host}));
  return false;
}

void ServerConnection::check_token(std::string_view token, const Done& done) {
  if (!admitted(done)) return;
  const UserAccount& account = pending_account();
  const ByteView bytes = as_bytes(token);
  if (account.plugin == AuthPlugin::kNativePassword) {
    const bool ok = verify_native_password(account.native, scramble_, bytes);
    return finish_auth(ok && account_ != nullptr, !token.empty(), Output{}, done);
  }
  const bool empty = token.empty() || (token.size() == 1 && token[0] == '\0');
  if (verify_caching_sha2_token(account.sha2, scramble_, bytes) && account_ != nullptr) {
    Output o;
    if (!empty) {
      // fast_auth_success, then the OK (an empty password gets the OK alone, as from mysqld).
      append(o.bytes, to_payload(AuthMoreData{std::string(1, char{kCachingSha2FastAuthSuccess})}));
    }
    return finish_auth(true, !empty, std::move(o), done);
  }
  if (empty) return finish_auth(false, false, Output{}, done);
  // As mysqld does whenever the fast path does not succeed: ask for the password itself, which a
  // client sends only inside TLS (or RSA-encrypted, which ticketd does not offer).
  Output o;
  append(o.bytes,
         to_payload(AuthMoreData{std::string(1, char{kCachingSha2PerformFullAuthentication})}));
  state_ = State::kAwaitFullAuth;
  done(std::move(o));
}

void ServerConnection::check_full_auth(std::string_view payload, const Done& done) {
  if (!secure()) {
    // A public-key request (0x02), or a password sent in clear: neither is accepted. The
    // password, if that is what came, has crossed the network unprotected already; refusing it
    // keeps a misconfigured client from working that way.
    if (hooks_.on_auth_failure) hooks_.on_auth_failure(pending_user_);
    return done(error_output(ConnectionErrc::kAccessDenied,
                             {clip_for_message(pending_user_), session_.host,
                              ": caching_sha2_password full authentication needs a TLS "
                              "connection (ticketd offers no RSA key exchange)"}));
  }
  if (!admitted(done)) return;
  std::string_view password = payload;
  if (!password.empty() && password.back() == '\0') password.remove_suffix(1);
  const bool ok = verify_cleartext_password(pending_account().sha2, password);
  finish_auth(ok && account_ != nullptr, !password.empty(), Output{}, done);
}

void ServerConnection::finish_auth(bool ok, bool password_used, Output o, const Done& done) {
  if (!ok) {
    if (hooks_.on_auth_failure) hooks_.on_auth_failure(pending_user_);
    return done(error_output(ConnectionErrc::kAccessDenied,
                             {clip_for_message(pending_user_), session_.host,
                              password_used ? " (using password: YES)" : " (using password: NO)"}));
  }
  if (pending_database_ && !pending_database_->empty()) {
    if (*pending_database_ != executor_.settings().database &&
        *pending_database_ != "information_schema") {
      // After a fast_auth_success byte, if one was sent, as mysqld answers.
      append_err(o.bytes, kErBadDb, "42000",
                 "Unknown database '" + clip_for_message(*pending_database_) + "'");
      o.close = true;
      state_ = State::kClosed;
      return done(std::move(o));
    }
    session_.database = *pending_database_;
  }
  session_.user = pending_user_;
  state_ = State::kCommand;
  decoder_.set_max_allowed_packet(executor_.settings().max_allowed_packet);
  append_ok(o.bytes, OkResult{});
  done(std::move(o));
}

}  // namespace ticketd::mysql
