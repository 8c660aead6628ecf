#include "server/mysql/server_connection.h"

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
#include "server/sql/query_text.h"
#include "server/sql/recognizer.h"

namespace ticketd::mysql {
namespace {

// What a MySQL 8 / MariaDB 10 server advertises for the features ticketd has (CLIENT_SSL is added
// when TLS is configured); no compression; no session tracking (we never send session state
// changes).
constexpr Capabilities kServerCapabilities =
    kClientLongPassword | kClientFoundRows | kClientLongFlag | kClientConnectWithDb |
    kClientNoSchema | kClientOdbc | kClientIgnoreSpace | kClientProtocol41 | kClientInteractive |
    kClientIgnoreSigpipe | kClientTransactions | kClientReserved | kClientSecureConnection |
    kClientMultiStatements | kClientMultiResults | kClientPsMultiResults | kClientPluginAuth |
    kClientConnectAttrs | kClientPluginAuthLenencClientData | kClientDeprecateEof;

ColumnDefinition41 definition(const Column& c, const std::string& schema) {
  ColumnDefinition41 d;
  d.schema = c.table.empty() ? std::string() : schema;
  d.table = c.table;
  d.org_table = c.table;
  d.name = c.name;
  d.org_name = c.table.empty() ? std::string() : c.name;
  switch (c.kind) {
    case ColumnKind::kUnsignedBigint:
      d.type = kTypeLongLong;
      d.character_set = kCharsetBinary;
      d.column_length = 20;
      d.flags = kNotNullFlag | kUnsignedFlag | kBinaryFlag | kNumFlag;
      break;
    case ColumnKind::kBigint:
      d.type = kTypeLongLong;
      d.character_set = kCharsetBinary;
      d.column_length = 21;
      d.flags = kBinaryFlag | kNumFlag;
      break;
    case ColumnKind::kNull:
      d.type = kTypeNull;
      d.character_set = kCharsetBinary;
      d.column_length = 0;
      d.flags = kBinaryFlag;
      break;
    case ColumnKind::kVarString:
      d.type = kTypeVarString;
      d.character_set = kCharsetUtf8mb4GeneralCi;
      d.column_length = 1024;
      break;
  }
  return d;
}

}  // namespace

ServerConnection::ServerConnection(const CommandHandler& executor, const LoginPolicy& login,
                                   std::uint32_t connection_id, std::string peer_host,
                                   ConnectionHooks hooks, net::Handoff::Post post)
    : executor_(executor),
      login_(login),
      hooks_(std::move(hooks)),
      decoder_(kPreAuthMaxPacket),
      server_caps_(kServerCapabilities | (login.tls_available ? kClientSsl : 0)) {
  session_.connection_id = connection_id;
  session_.host = std::move(peer_host);
  session_.memory = executor_.connection_memory();
  post_ = post;
  session_.handoff = std::make_shared<net::Handoff>(std::move(post));
}

void ServerConnection::feed(std::string_view bytes) {
  decoder_.feed(bytes);
  charge_buffers();
}

void ServerConnection::charge_buffers() {
  // What every connection holds anyway (the input a decoder keeps, a recycled payload) is
  // its fixed share, like the session's read buffer; what a large packet makes it hold on top
  // is charged.
  const std::uint64_t held =
      decoder_.held() > kUnchargedBuffers ? decoder_.held() - kUnchargedBuffers : 0;
  if (held < buffers_charged_) {
    session_.memory.release(buffers_charged_ - held);
  } else if (held > buffers_charged_) {
    // A packet in progress counts like everything else the connection keeps: sixty clients
    // each half-way through a 16 MiB packet must meet the global budget, not the kernel's.
    const auto verdict = session_.memory.try_charge(held - buffers_charged_);
    if (verdict != ConnectionMemory::Verdict::kOk) {
      if (!buffer_refusal_) buffer_refusal_ = verdict;
      return;
    }
  }
  buffers_charged_ = held;
}

ServerConnection::Output ServerConnection::answer(std::string bytes) {
  Output o{std::move(bytes), close_after_answer_};
  if (o.close) state_ = State::kClosed;
  return o;
}

template <class What>
void ServerConnection::call(const What& what, CommandHandler::Done then) {
  session_.handoff->begin();
  executor_.execute(session_, what, std::move(then));
  session_.handoff->end();
}

ServerConnection::~ServerConnection() { executor_.end_session(session_); }

std::string ServerConnection::greeting() {
  scramble_ = make_scramble();
  HandshakeV10 hello;
  hello.server_version = executor_.settings().version;
  hello.connection_id = session_.connection_id;
  hello.auth_plugin_data = scramble_;
  hello.auth_plugin_name = std::string(plugin_name(login_.default_plugin));
  hello.capabilities = server_caps_;
  hello.status_flags = kServerStatusAutocommit;
  std::string out;
  seq_ = 0;
  append(out, to_payload(hello));
  return out;
}

void ServerConnection::append(std::string& out, std::string_view payload) {
  append_frame(out, payload, seq_);
}

std::uint16_t ServerConnection::status_flags() const {
  std::uint16_t s = 0;
  if (session_.autocommit) s |= kServerStatusAutocommit;
  if (session_.in_transaction) s |= kServerStatusInTrans;
  return s;
}

void ServerConnection::append_ok(std::string& out, const OkResult& ok, std::uint16_t extra_status) {
  OkPacket p{ok.affected_rows, ok.last_insert_id,
             static_cast<std::uint16_t>(status_flags() | extra_status), ok.warnings, ok.info};
  append(out, to_payload(p, client_caps_));
}

void ServerConnection::append_err(std::string& out, std::uint16_t code, std::string_view state,
                                  std::string_view message) {
  if (hooks_.on_error) hooks_.on_error(code);
  // mysqld closes a connection once it passed a memory limit; so does ticketd, after the answer.
  if (code == kErDaConnLimit || code == kErDaGlobalConnLimit) close_after_answer_ = true;
  // mysqld never sends more than MYSQL_ERRMSG_SIZE - 1 bytes of message.
  ErrPacket p{code, std::string(state), std::string(clip_utf8(message, kMysqlErrmsgSize - 1))};
  append(out, to_payload(p, client_caps_ == 0 ? kClientProtocol41 : client_caps_));
}

ServerConnection::Output ServerConnection::error_output(std::uint16_t code, std::string_view state,
                                                        std::string_view message, bool close) {
  Output o;
  append_err(o.bytes, code, state, message);
  o.close = close;
  if (close) state_ = State::kClosed;
  return o;
}

std::vector<ColumnDefinition41> ServerConnection::to_definitions(
    const std::vector<Column>& columns) const {
  std::vector<ColumnDefinition41> defs;
  defs.reserve(columns.size());
  for (const auto& c : columns) defs.push_back(definition(c, executor_.settings().database));
  return defs;
}

void ServerConnection::append_result(std::string& out, const QueryResult& result, bool binary,
                                     std::uint16_t extra_status) {
  if (const auto* ok = std::get_if<OkResult>(&result)) {
    append_ok(out, *ok, extra_status);
  } else if (const auto* e = std::get_if<ErrResult>(&result)) {
    append_err(out, e->code, e->sql_state, e->message);
  } else {
    const auto& rs = std::get<ResultSetResult>(result);
    const EncodedColumns& columns = encoded(rs.columns);
    append_result_set(out, seq_, columns.definitions, columns.payloads, rs.rows, binary,
                      client_caps_, static_cast<std::uint16_t>(status_flags() | extra_status),
                      scratch_);
  }
}

const ServerConnection::EncodedColumns& ServerConnection::encoded(const ColumnList& columns) {
  if (columns.identity() != nullptr) {
    for (const auto& e : encoded_) {
      if (e.columns.identity() == columns.identity()) return e;
    }
  }
  EncodedColumns& e = encoded_[next_encoded_++ % encoded_.size()];
  e.columns = columns;
  e.definitions = to_definitions(columns.get());
  e.payloads.clear();
  for (const auto& d : e.definitions) {
    std::string p;
    PacketWriter w(p);
    encode(d, w);
    e.payloads.push_back(std::move(p));
  }
  return e;
}

bool ServerConnection::process_next(const Done& done) {
  if (state_ == State::kClosed) return false;
  if (buffer_refusal_) {
    // The bytes of a packet in progress passed a memory budget: refused, and closed.
    seq_ = static_cast<std::uint8_t>(decoder_.error_sequence_id() + 1);
    Output o;
    append_result(o.bytes, to_err(*buffer_refusal_, session_.memory), false, 0);
    done(answer(std::move(o.bytes)));
    return true;
  }
  auto frame = decoder_.next();
  if (!frame) {
    // Oversized or out-of-order packet: answer once, then close, as mysqld does. The reply
    // continues the client's numbering from the packet that broke the limit.
    seq_ = static_cast<std::uint8_t>(decoder_.error_sequence_id() + 1);
    if (frame.error() == ProtocolErrc::kPacketTooLarge) {
      done(error_output(kErNetPacketTooLarge, "08S01",
                        "Got a packet bigger than 'max_allowed_packet' bytes", true));
    } else {
      done(error_output(1156, "08S01", "Got packets out of order", true));
    }
    return true;
  }
  if (!frame->has_value()) return false;
  // The frame's bytes left the decoder: what it still holds is charged, the payload being
  // handled is not (handlers charge what they keep of it).
  charge_buffers();
  const Frame& f = **frame;
  seq_ = static_cast<std::uint8_t>(f.last_sequence_id + 1);
  switch (state_) {
    case State::kAwaitHandshakeResponse:
      handle_handshake_response(f.payload, done);
      break;
    case State::kAwaitAuthSwitchResponse:
      handle_auth_switch_response(f.payload, done);
      break;
    case State::kAwaitFullAuth:
      check_full_auth(f.payload, done);
      break;
    case State::kAwaitTls:
      // The session feeds nothing between the SslRequest and the end of the TLS handshake.
      done(error_output(1043, "08S01", "Bad handshake", true));
      break;
    case State::kCommand:
      handle_command(f.payload, done);
      break;
    case State::kClosed:
      break;
  }
  // Handlers copy what outlives them (statements, parameters, long data): the memory is reused.
  decoder_.recycle(std::move((*frame)->payload));
  charge_buffers();
  return true;
}

void ServerConnection::tls_started(std::string version, std::string cipher) {
  session_.tls_version = std::move(version);
  session_.tls_cipher = std::move(cipher);
  state_ = State::kAwaitHandshakeResponse;
}

void ServerConnection::handle_handshake_response(std::string_view payload, const Done& done) {
  auto decoded = decode_handshake_response(as_bytes(payload));
  if (!decoded) return done(error_output(1043, "08S01", "Bad handshake", true));
  if (const auto* ssl = std::get_if<SslRequest>(&*decoded)) {
    if (!login_.tls_available || secure()) {
      return done(error_output(1043, "08S01",
                               secure() ? "Bad handshake: a second SSL request"
                                        : "SSL connection error: TLS is not configured (mysql.tls)",
                               true));
    }
    client_caps_ = ssl->capabilities & server_caps_;
    state_ = State::kAwaitTls;
    Output o;
    o.start_tls = true;
    return done(std::move(o));
  }
  const auto& r = std::get<HandshakeResponse41>(*decoded);
  if ((r.capabilities & kClientProtocol41) == 0) {
    return done(error_output(1043, "08S01", "Bad handshake: protocol 4.1 is required", true));
  }
  if (login_.require_secure_transport && !secure()) {
    // ER_SECURE_TRANSPORT_REQUIRED, in mysqld's words.
    return done(error_output(kErSecureTransportRequired, "HY000",
                             "Connections using insecure transport are prohibited while "
                             "--require_secure_transport=ON.",
                             true));
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
      return done(error_output(kErAccessDenied, "28000",
                               "Access denied for user '" + clip_for_message(pending_user_) +
                                   "'@'" + session_.host + "' (the user's " +
                                   std::string(plugin_name(wanted)) +
                                   " needs a client with CLIENT_PLUGIN_AUTH)",
                               true));
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
  done(error_output(kErAccountBlockedByFailedLogins, "HY000",
                    "Access denied for user '" + clip_for_message(pending_user_) + "'@'" +
                        session_.host +
                        "': too many failed logins of this user from this address are being "
                        "answered; try again later",
                    true));
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
    return done(error_output(kErAccessDenied, "28000",
                             "Access denied for user '" + clip_for_message(pending_user_) + "'@'" +
                                 session_.host +
                                 "': caching_sha2_password full authentication needs a TLS "
                                 "connection (ticketd offers no RSA key exchange)",
                             true));
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
    return done(error_output(kErAccessDenied, "28000",
                             "Access denied for user '" + clip_for_message(pending_user_) + "'@'" +
                                 session_.host +
                                 "' (using password: " + (password_used ? "YES" : "NO") + ")",
                             true));
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

void ServerConnection::handle_command(std::string_view payload, const Done& done) {
  if (payload.empty())
    return done(error_output(kErUnknownComError, "08S01", "Unknown command", false));
  const auto command = static_cast<std::uint8_t>(payload[0]);
  switch (command) {
    case kComQuit:
      state_ = State::kClosed;
      return done(Output{{}, true});
    case kComPing: {
      Output o;
      append_ok(o.bytes, OkResult{});
      return done(std::move(o));
    }
    case kComInitDb: {
      auto init = decode_com_init_db(as_bytes(payload));
      if (!init) return done(error_output(kErParse, "42000", "malformed COM_INIT_DB", false));
      sql::Use use{init->schema};
      call(sql::Statement{use}, [this, done](QueryResult&& r) {
        Output o;
        append_result(o.bytes, r, false, 0);
        done(std::move(o));
      });
      return;
    }
    case kComQuery: {
      auto q = decode_com_query(as_bytes(payload));
      if (!q) return done(error_output(kErParse, "42000", "malformed COM_QUERY", false));
      std::vector<std::string_view> statements;
      if (q->query.find(';') == std::string::npos) {
        const std::string_view one = q->query;  // one statement: nothing to split
        return start_queries({&one, 1}, false, done);
      } else {
        auto parts = sql::split_statements(q->query, kMaxStatementsPerQuery);
        if (parts.size() > kMaxStatementsPerQuery && multi_statements_) {
          Output o;
          append_result(o.bytes,
                        to_err(LimitErrc::kTooManyStatements,
                               "Too many statements in one query: at most " +
                                   std::to_string(kMaxStatementsPerQuery) + " are allowed"),
                        false, 0);
          return done(std::move(o));
        }
        statements.assign(parts.begin(), parts.end());
      }
      if (statements.empty()) statements.emplace_back(q->query);
      if (statements.size() > 1 && !multi_statements_) {
        // Without CLIENT_MULTI_STATEMENTS, "a; b" is one malformed statement, as in mysqld.
        statements = {q->query};
      }
      return start_queries(statements, false, done);
    }
    case kComFieldList:
      return field_list(payload, done);
    case kComStatistics: {
      Output o;
      append(o.bytes, "Uptime: 0  Threads: 1  Questions: " + std::to_string(session_.queries) +
                          "  Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: "
                          "0.000");
      return done(std::move(o));
    }
    case kComSetOption: {
      auto opt = decode_com_set_option(as_bytes(payload));
      if (!opt || opt->option > kMysqlOptionMultiStatementsOff) {
        return done(error_output(kErUnknownComError, "08S01", "Unknown command", false));
      }
      multi_statements_ = opt->option == kMysqlOptionMultiStatementsOn;
      Output o;
      // mysqld answers COM_SET_OPTION with an EOF packet (an OK when EOF is deprecated).
      if (client_caps_ & kClientDeprecateEof) {
        append_ok(o.bytes, OkResult{});
      } else {
        append(o.bytes, to_payload(EofPacket{0, status_flags()}, client_caps_));
      }
      return done(std::move(o));
    }
    case kComResetConnection: {
      executor_.end_session(session_);  // releases gapless numbers of the open transaction
      SessionState fresh;
      fresh.connection_id = session_.connection_id;
      fresh.user = session_.user;
      fresh.host = session_.host;
      fresh.database = session_.database;
      // The connection's own, not the session's: where engine answers resume, and its TLS.
      fresh.handoff = session_.handoff;
      fresh.tls_version = session_.tls_version;
      fresh.tls_cipher = session_.tls_cipher;
      // A fresh account: assigning gives back everything the old one held, long data and
      // statement texts included.
      fresh.memory = executor_.connection_memory();
      session_ = std::move(fresh);
      statements_.clear();
      // The old account gave back the buffers' charges too: the new one takes them over.
      buffers_charged_ = 0;
      output_charged_ = 0;
      charge_buffers();
      Output o;
      append_ok(o.bytes, OkResult{});
      return done(std::move(o));
    }
    case kComStmtPrepare:
      return prepare(payload, done);
    case kComStmtExecute:
      return execute_prepared(payload, done);
    case kComStmtClose: {
      // No reply, by protocol. Closing an unknown id is silently ignored, as in mysqld.
      if (auto c = decode_stmt_close(as_bytes(payload))) {
        if (auto it = statements_.find(c->statement_id); it != statements_.end()) {
          release_long_data(it->second);
          session_.memory.release(it->second.charged);
          statements_.erase(it);
        }
      }
      return done(Output{});
    }
    case kComStmtReset: {
      auto r = decode_stmt_reset(as_bytes(payload));
      auto it = r ? statements_.find(r->statement_id) : statements_.end();
      if (it == statements_.end()) {
        return done(error_output(kErUnknownStmtHandler, "HY000",
                                 "Unknown prepared statement handler given to mysqld_stmt_reset",
                                 false));
      }
      release_long_data(it->second);
      it->second.long_data_error.reset();
      Output o;
      append_ok(o.bytes, OkResult{});
      return done(std::move(o));
    }
    case kComStmtSendLongData: {
      // No reply, by protocol; the data joins the parameter at the next execute.
      auto d = decode_stmt_send_long_data(as_bytes(payload));
      auto it = d ? statements_.find(d->statement_id) : statements_.end();
      if (it == statements_.end() || d->param_id >= it->second.num_params) return done(Output{});
      auto& ps = it->second;
      if (ps.long_data_error) return done(Output{});  // already failed: dropped until execute
      auto& slot = ps.long_data[d->param_id];
      const std::size_t have = slot ? slot->size() : 0;
      if (have + d->data.size() > executor_.settings().max_allowed_packet) {
        // mysqld's text for a parameter longer than max_allowed_packet.
        ps.long_data_error = to_err(LimitErrc::kLongDataTooLarge,
                                    "Parameter of prepared statement which is set through "
                                    "mysql_send_long_data() is longer than 'max_allowed_packet' "
                                    "bytes");
        release_long_data(ps);
      } else if (auto verdict = session_.memory.try_charge(d->data.size());
                 verdict != ConnectionMemory::Verdict::kOk) {
        ps.long_data_error = to_err(verdict, session_.memory);
        release_long_data(ps);
      } else {
        if (!slot) slot.emplace();
        slot->append(d->data);
      }
      return done(Output{});
    }
    default:
      return done(error_output(kErUnknownComError, "08S01", "Unknown command", false));
  }
}

void ServerConnection::start_queries(std::span<const std::string_view> statements, bool binary,
                                     const Done& done) {
  // The run and its buffers are the connection's, reused query after query: the statement
  // strings and the output keep their capacity, so a steady stream of small queries allocates
  // nothing here.
  QueryRun& run = run_;
  run.statements.resize(statements.size());
  for (std::size_t i = 0; i < statements.size(); ++i) run.statements[i].assign(statements[i]);
  run.index = 0;
  run.binary = binary;
  run.out = std::move(spare_output_);
  run.out.clear();
  run.done = done;
  run.finished = false;
  // Only a run of several statements can yield; one statement never reads the clock.
  if (statements.size() > 1) run.slice_start = std::chrono::steady_clock::now();
  run_queries();
}

void ServerConnection::recycle(std::string&& bytes) {
  // Kept unless a large answer grew it: that memory goes back at once, and so does its charge
  // (a kept buffer stays charged: the next run reuses it).
  if (bytes.capacity() <= kMaxSpareOutput) {
    spare_output_ = std::move(bytes);
  } else {
    session_.memory.release(output_charged_);
    output_charged_ = 0;
  }
}

void ServerConnection::run_queries() {
  // A loop, not a call per statement: most statements answer inline (the cached path), and a
  // recursion per statement overflowed the stack at a few thousand statements.
  QueryRun& run = run_;
  for (;;) {
    run.phase.store(0);
    call(std::string_view(run.statements[run.index]), [this](QueryResult&& r) {
      QueryRun& run = run_;
      const bool last = run.index + 1 == run.statements.size();
      const bool failed = std::holds_alternative<ErrResult>(r);
      const std::size_t before = run.out.size();
      const std::uint8_t seq_before = seq_;
      // Later results follow: say so, until the last one or an error.
      append_result(run.out, r, run.binary, last || failed ? 0 : kServerMoreResultsExists);
      run.finished = last || failed;
      charge_output(before, seq_before);
      if (!run.finished) ++run.index;
      int expected = 0;
      if (run.phase.compare_exchange_strong(expected, 1)) return;  // the loop goes on or ends
      // Answered later: the loop has returned, so this is the run's only owner now.
      if (run.finished) return finish_queries();
      run.slice_start = std::chrono::steady_clock::now();
      run_queries();
    });
    int expected = 0;
    if (run.phase.compare_exchange_strong(expected, 2)) return;  // it answers later
    if (run.finished) return finish_queries();
    if (post_ && std::chrono::steady_clock::now() - run.slice_start >= kRunSlice) {
      // Statements of one query may take long together (each is bounded by its tokens, a
      // query of a thousand is not): the rest runs as a new step, after what else waits on
      // this I/O thread.
      post_([this] {
        if (hooks_.peer_gone && hooks_.peer_gone()) return abandon_queries();
        run_.slice_start = std::chrono::steady_clock::now();
        run_queries();
      });
      return;
    }
  }
}

void ServerConnection::charge_output(std::size_t before, std::uint8_t seq_before) {
  QueryRun& run = run_;
  // A buffer recycle() keeps (kMaxSpareOutput) is the connection's fixed share; a larger
  // answer is charged, so a hot path of small answers never touches the global budget.
  // The bytes of the answer are charged, not the slack a doubling buffer adds to them.
  const std::uint64_t capacity =
      run.out.size() > kMaxSpareOutput ? run.out.size() - kMaxSpareOutput : 0;
  if (capacity <= output_charged_) return;
  const auto verdict = session_.memory.try_charge(capacity - output_charged_);
  if (verdict == ConnectionMemory::Verdict::kOk) {
    output_charged_ = capacity;
    return;
  }
  // `SELECT @big; SELECT @big; ...`: the answer that passed the budget becomes the refusal.
  run.out.resize(before);
  seq_ = seq_before;
  append_result(run.out, to_err(verdict, session_.memory), run.binary, 0);
  run.finished = true;
}

void ServerConnection::shrink_after_run() {
  for (std::string& s : run_.statements) {
    if (s.capacity() > kMaxKeptStatement) std::string().swap(s);
  }
  if (run_.statements.capacity() > kMaxKeptStatements)
    std::vector<std::string>().swap(run_.statements);
  if (scratch_.capacity() > kMaxSpareOutput) std::string().swap(scratch_);
  for (EncodedColumns& e : encoded_) {
    if (e.definitions.size() > kMaxCachedColumns) e = EncodedColumns{};
  }
}

void ServerConnection::finish_queries() {
  shrink_after_run();
  Done done = std::move(run_.done);
  done(answer(std::move(run_.out)));
}

void ServerConnection::abandon_queries() {
  log::info("mysql connection " + std::to_string(session_.connection_id) + " from " +
                session_.host + " closed by the client during a query: " +
                std::to_string(run_.statements.size() - run_.index) + " of its " +
                std::to_string(run_.statements.size()) + " statements not run",
            {{"client", session_.host}});
  run_.out.clear();
  shrink_after_run();
  Done done = std::move(run_.done);
  done(Output{.close = true});
}

void ServerConnection::release_long_data(PreparedStatement& ps) {
  for (auto& d : ps.long_data) {
    if (d) session_.memory.release(d->size());
    d.reset();
  }
}

void ServerConnection::field_list(std::string_view payload, const Done& done) {
  auto f = decode_com_field_list(as_bytes(payload));
  if (!f) return done(error_output(kErParse, "42000", "malformed COM_FIELD_LIST", false));
  sql::ShowColumns show;
  show.table.name = f->table;
  call(sql::Statement{show}, [this, done, table = f->table](QueryResult&& r) {
    Output o;
    if (std::holds_alternative<ErrResult>(r)) {
      append_result(o.bytes, r, false, 0);
      return done(std::move(o));
    }
    // The mariadb CLI asks for the columns of every table for tab completion.
    std::vector<Column> cols{{"id", ColumnKind::kUnsignedBigint, table},
                             {"stub", ColumnKind::kVarString, table}};
    for (const auto& d : to_definitions(cols)) {
      std::string p;
      PacketWriter w(p);
      encode(d, w);
      w.lenenc_string("");  // default value, present only in COM_FIELD_LIST replies
      append(o.bytes, p);
    }
    if (client_caps_ & kClientDeprecateEof) {
      std::string p;
      PacketWriter w(p);
      encode_ok_as_eof(OkPacket{0, 0, status_flags(), 0, {}}, client_caps_, w);
      append(o.bytes, p);
    } else {
      append(o.bytes, to_payload(EofPacket{0, status_flags()}, client_caps_));
    }
    done(std::move(o));
  });
}

void ServerConnection::prepare(std::string_view payload, const Done& done) {
  auto p = decode_stmt_prepare(as_bytes(payload));
  if (!p) return done(error_output(kErParse, "42000", "malformed COM_STMT_PREPARE", false));
  if (statements_.size() >= executor_.settings().max_prepared_stmt_count) {
    return done(error_output(kErMaxPreparedStmtCount, "42000",
                             "Can't create more than max_prepared_stmt_count statements "
                             "(current value: " +
                                 std::to_string(executor_.settings().max_prepared_stmt_count) + ")",
                             false));
  }
  // The text stays until COM_STMT_CLOSE: it counts against the connection's memory budget,
  // checked before the work of recognizing it.
  if (auto verdict = session_.memory.try_charge(p->query.size());
      verdict != ConnectionMemory::Verdict::kOk) {
    Output o;
    append_result(o.bytes, to_err(verdict, session_.memory), false, 0);
    return done(answer(std::move(o.bytes)));
  }
  PreparedStatement ps;
  ps.sql = std::move(p->query);
  const auto refund = [this, &ps] { session_.memory.release(ps.sql.size()); };
  const auto n = sql::count_placeholders(ps.sql);
  if (n > 65535) {
    refund();
    return done(
        error_output(1390, "HY000", "Prepared statement contains too many placeholders", false));
  }
  ps.num_params = static_cast<std::uint16_t>(n);
  ps.long_data.resize(ps.num_params);
  // Recognize with a stand-in for each `?` so syntax errors surface at prepare time, and so the
  // statement can describe its columns.
  auto probe = sql::recognize(
      sql::substitute_placeholders(ps.sql, std::vector<std::string>(ps.num_params, "1")));
  if (const auto* u = std::get_if<sql::Unrecognized>(&probe)) {
    refund();
    Output o;
    call(probe, [this, &o](QueryResult&& r) { append_result(o.bytes, r, false, 0); });
    (void)u;
    return done(std::move(o));
  }
  // The statement table's columns, the same ones execution builds its result set from.
  ps.columns = to_definitions(result_columns(probe, executor_.settings(), session_));
  // What the statement keeps until COM_STMT_CLOSE besides its text: a slot per parameter for
  // long data and types, and its column definitions (65,535 parameters are 2.6 MiB).
  std::uint64_t metadata =
      sizeof(PreparedStatement) +
      ps.num_params * (sizeof(std::optional<std::string>) + sizeof(std::uint16_t));
  for (const auto& c : ps.columns) {
    metadata += sizeof(ColumnDefinition41) + c.schema.size() + c.table.size() + c.org_table.size() +
                c.name.size() + c.org_name.size();
  }
  if (auto verdict = session_.memory.try_charge(metadata);
      verdict != ConnectionMemory::Verdict::kOk) {
    refund();
    Output o;
    append_result(o.bytes, to_err(verdict, session_.memory), false, 0);
    return done(answer(std::move(o.bytes)));
  }
  ps.charged = ps.sql.size() + metadata;
  const auto id = next_statement_id_++;
  Output o;
  for (const auto& packet :
       encode_prepare_response(id, ps.num_params, ps.columns, client_caps_, status_flags())) {
    append(o.bytes, packet);
  }
  statements_.emplace(id, std::move(ps));
  done(std::move(o));
}

void ServerConnection::execute_prepared(std::string_view payload, const Done& done) {
  if (payload.size() < 5) {
    return done(error_output(kErParse, "42000", "malformed COM_STMT_EXECUTE", false));
  }
  const std::uint32_t id = static_cast<std::uint8_t>(payload[1]) |
                           static_cast<std::uint32_t>(static_cast<std::uint8_t>(payload[2])) << 8 |
                           static_cast<std::uint32_t>(static_cast<std::uint8_t>(payload[3])) << 16 |
                           static_cast<std::uint32_t>(static_cast<std::uint8_t>(payload[4])) << 24;
  auto it = statements_.find(id);
  if (it == statements_.end()) {
    return done(error_output(kErUnknownStmtHandler, "HY000",
                             "Unknown prepared statement handler (" + std::to_string(id) +
                                 ") given to mysqld_stmt_execute",
                             false));
  }
  auto& ps = it->second;
  if (ps.long_data_error) {
    Output o;
    append_result(o.bytes, *ps.long_data_error, true, 0);
    ps.long_data_error.reset();
    return done(answer(std::move(o.bytes)));
  }
  auto exec = decode_stmt_execute(as_bytes(payload), ps.num_params, ps.param_types, ps.long_data);
  if (!exec) {
    return done(error_output(kErWrongArguments, "HY000",
                             "Incorrect arguments to mysqld_stmt_execute", false));
  }
  release_long_data(ps);  // long data is consumed by one execute
  if (ps.num_params == 0) {
    const std::string_view one = ps.sql;  // nothing to substitute: the text as prepared
    return start_queries({&one, 1}, true, done);
  }
  std::vector<std::string> literals;
  literals.reserve(exec->params.size());
  for (const auto& v : exec->params) literals.push_back(to_sql_literal(v));
  const std::string sql = sql::substitute_placeholders(ps.sql, literals);
  const std::string_view one = sql;
  start_queries({&one, 1}, true, done);
}

}  // namespace ticketd::mysql
