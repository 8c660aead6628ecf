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
                                   ConnectionHooks hooks,
                                   std::shared_ptr<net::Completion> completion)
    : executor_(executor),
      login_(login),
      hooks_(std::move(hooks)),
      decoder_(kPreAuthMaxPacket),
      server_caps_(kServerCapabilities | (login.tls_available ? kClientSsl : 0)) {
  session_.connection_id = connection_id;
  session_.host = std::move(peer_host);
  session_.memory = executor_.connection_memory();
  if (completion != nullptr) session_.completion = std::move(completion);
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
  session_.completion->begin();
  executor_.execute(session_, what, std::move(then));
  session_.completion->end();
}
// server_connection_prepared.cpp calls these too: instantiated here, where call() is defined.
template void ServerConnection::call(const sql::Statement&, CommandHandler::Done);
template void ServerConnection::call(const std::string_view&, CommandHandler::Done);

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

ServerConnection::Output ServerConnection::error_output(
    ConnectionErrc code, std::initializer_list<std::string_view> args) {
  const auto e = to_err(code, args);
  Output o;
  append_err(o.bytes, e.err.code, e.err.sql_state, e.err.message);
  o.close = e.close;
  if (e.close) state_ = State::kClosed;
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
      done(error_output(ConnectionErrc::kPacketTooLarge));
    } else {
      done(error_output(ConnectionErrc::kPacketsOutOfOrder));
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
      done(error_output(ConnectionErrc::kBadHandshake, {""}));
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

void ServerConnection::handle_command(std::string_view payload, const Done& done) {
  if (payload.empty()) return done(error_output(ConnectionErrc::kUnknownCommand));
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
      if (!init) return done(error_output(ConnectionErrc::kMalformedCommand, {"COM_INIT_DB"}));
      sql::Use use{init->schema};
      call(sql::Statement{use}, [this, done](QueryResult&& r) {
        Output o;
        append_result(o.bytes, r, false, 0);
        done(std::move(o));
      });
      return;
    }
    case kComQuery:
      return query(payload, done);
    case kComFieldList:
      return field_list(payload, done);
    case kComStatistics: {
      Output o;
      append(o.bytes, "Uptime: 0  Threads: 1  Questions: " + std::to_string(session_.queries) +
                          "  Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: "
                          "0.000");
      return done(std::move(o));
    }
    case kComSetOption:
      return set_option(payload, done);
    case kComResetConnection:
      return reset_connection(done);
    case kComStmtPrepare:
      return prepare(payload, done);
    case kComStmtExecute:
      return execute_prepared(payload, done);
    case kComStmtClose:
      return close_statement(payload, done);
    case kComStmtReset:
      return reset_statement(payload, done);
    case kComStmtSendLongData:
      return send_long_data(payload, done);
    default:
      return done(error_output(ConnectionErrc::kUnknownCommand));
  }
}

void ServerConnection::query(std::string_view payload, const Done& done) {
  auto q = decode_com_query(as_bytes(payload));
  if (!q) return done(error_output(ConnectionErrc::kMalformedCommand, {"COM_QUERY"}));
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

void ServerConnection::set_option(std::string_view payload, const Done& done) {
  auto opt = decode_com_set_option(as_bytes(payload));
  if (!opt || opt->option > kMysqlOptionMultiStatementsOff) {
    return done(error_output(ConnectionErrc::kUnknownCommand));
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

void ServerConnection::reset_connection(const Done& done) {
  executor_.end_session(session_);  // releases gapless numbers of the open transaction
  // A fresh account: assigning gives back everything the old one held, long data and
  // statement texts included.
  session_.reset_sql(executor_.connection_memory());
  statements_.clear();
  // The old account gave back the buffers' charges too: the new one takes them over.
  buffers_charged_ = 0;
  output_charged_ = 0;
  charge_buffers();
  Output o;
  append_ok(o.bytes, OkResult{});
  return done(std::move(o));
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
    run.loop.calling();
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
      if (run.loop.answered_inline()) return;  // the loop goes on or ends
      // Answered later: the loop has returned, so this is the run's only owner now.
      if (run.finished) return finish_queries();
      run.slice_start = std::chrono::steady_clock::now();
      run_queries();
    });
    if (run.loop.answers_later()) return;
    if (run.finished) return finish_queries();
    if (session_.completion->can_post() &&
        std::chrono::steady_clock::now() - run.slice_start >= kRunSlice) {
      // Statements of one query may take long together (each is bounded by its tokens, a
      // query of a thousand is not): the rest runs as a new step, after what else waits on
      // this I/O thread.
      session_.completion->post([this] {
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

}  // namespace ticketd::mysql
