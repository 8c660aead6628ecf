// The MySQL protocol decisions for one connection: bytes in, bytes out, no socket.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/mysql/command_handler.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/login_policy.h"
#include "server/mysql/protocol/auth.h"
#include "server/mysql/protocol/column_definition.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/framing.h"
#include "server/mysql/session_state.h"

namespace ticketd::mysql {

/// Observes what a connection does, for metrics and logs. Every member may be empty.
struct ConnectionHooks {
  /// A login was refused; `user` is the name the client sent (never the password or token).
  std::function<void(std::string_view user)> on_auth_failure;
  std::function<void(std::uint16_t error_code)> on_error;
  /// Asked before each check of a credential: false refuses the login at once, unchecked
  /// (ERR 3955; the auth throttle's bound on parallel guesses).
  std::function<bool(std::string_view user)> admit_login;
  /// Asked each time a multi-statement run yields its I/O thread: true when the client has
  /// closed its end. The rest of the run is dropped, unrun, and the connection closes.
  std::function<bool()> peer_gone;
};

/// Runs the connection phase (greeting, optional SslRequest and TLS, HandshakeResponse41, an
/// AuthSwitch to the user's plugin when the client tried another, caching_sha2_password's fast
/// or full authentication) and the command phase (COM_QUERY with multi-statements, COM_STMT_*,
/// COM_PING, ...). Feed it received bytes; each complete packet is answered through a callback,
/// because statements that take tickets may complete later. Every answer, and all the work of
/// building it, runs on the session's strand: the engine's answers come back through the
/// session's net::Completion, never on the engine's committer thread.
///
/// It owns the session state and the prepared statements of the connection. Not thread-safe:
/// the session calls it from its strand, one packet at a time.
class ServerConnection {
 public:
  struct Output {
    std::string bytes;   // framed packets to send, possibly empty
    bool close = false;  // close the connection after sending
    // The client sent an SslRequest: after sending `bytes` (none), the session runs the TLS
    // handshake and calls tls_started(); the next packet arrives inside TLS.
    bool start_tls = false;
  };
  using Done = std::function<void(Output)>;

  /// `completion`: the session's, where statements resume when the engine answers later and
  /// what its coroutine waits on. None: a Completion without an executor, where a late answer
  /// runs where it arrives (tests).
  ServerConnection(const CommandHandler& executor, const LoginPolicy& login,
                   std::uint32_t connection_id, std::string peer_host, ConnectionHooks hooks = {},
                   std::shared_ptr<net::Completion> completion = nullptr);
  /// The connection ended: gapless numbers of an open transaction are released.
  ~ServerConnection();
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  /// The HandshakeV10 greeting, framed with sequence id 0.
  [[nodiscard]] std::string greeting();
  /// Received bytes. What the connection buffers is charged to its memory budget; a refused
  /// charge is answered (ERR 4081/4082) by the next process_next(), which closes.
  void feed(std::string_view bytes);
  /// The TLS handshake the last Output asked for succeeded: the rest of the login, and every
  /// command, is inside TLS (reported as Ssl_version / Ssl_cipher).
  void tls_started(std::string version, std::string cipher);
  [[nodiscard]] bool secure() const { return !session_.tls_version.empty(); }
  /// Answers the next complete packet through `done` (exactly once, maybe later) and returns
  /// true; returns false without calling `done` when more bytes are needed.
  bool process_next(const Done& done);

  [[nodiscard]] bool authenticated() const { return state_ == State::kCommand; }
  [[nodiscard]] const SessionState& session() const { return session_; }
  /// Bytes buffered but not yet answered (for the session's memory accounting).
  [[nodiscard]] std::size_t buffered() const { return decoder_.buffered(); }
  /// Gives the bytes of a sent Output back, so the next answer reuses their memory.
  void recycle(std::string&& bytes);

  /// Packets larger than this are refused before authentication.
  static constexpr std::size_t kPreAuthMaxPacket = 64 * 1024;
  /// Statements one COM_QUERY may carry (CLIENT_MULTI_STATEMENTS). mysqld has no such bound; a
  /// ticket client sends a few, and a query of 5,000 `SELECT 1;` is an attack, refused whole
  /// before any of it runs.
  static constexpr std::size_t kMaxStatementsPerQuery = 1000;

 private:
  enum class State {
    kAwaitHandshakeResponse,
    kAwaitTls,
    kAwaitAuthSwitchResponse,
    kAwaitFullAuth,
    kCommand,
    kClosed
  };

  struct PreparedStatement {
    std::string sql;
    std::uint16_t num_params = 0;
    std::vector<std::uint16_t> param_types;  // sent only on the first execute: remembered
    std::vector<std::optional<std::string>> long_data;
    // Long data that broke a limit: the parameters are dropped and the next execute fails with
    // this, as mysqld reports a failed COM_STMT_SEND_LONG_DATA (which has no reply) at execute.
    std::optional<ErrResult> long_data_error;
    std::vector<ColumnDefinition41> columns;
    std::uint64_t charged = 0;  // the text and the metadata, in the connection's budget
  };

  // One COM_QUERY's statements, run one after another by a loop (see run_queries).
  struct QueryRun {
    std::vector<std::string> statements;
    std::size_t index = 0;
    bool binary = false;
    std::string out;
    Done done;
    bool finished = false;  // the last statement, or a failed one, has answered
    // Whether a statement answered inside run_queries() or later (then its answer, on the
    // session's strand, resumes the loop). Whoever finishes the run calls `done` as its very
    // last touch of the run: `done` may start the next query on this same (reused) run at once.
    net::CallLoop loop;
    // When the run last started on the I/O thread: after kRunSlice of statements answered
    // inline, the run yields (posts its next statement) so other sessions of the thread go on.
    std::chrono::steady_clock::time_point slice_start;
  };

  void handle_handshake_response(std::string_view payload, const Done& done);
  void handle_auth_switch_response(std::string_view payload, const Done& done);
  // The client's auth data for the user's plugin (from the response or the switch).
  /// False (and `done` answered): the auth throttle refused the check.
  [[nodiscard]] bool admitted(const Done& done);
  void check_token(std::string_view token, const Done& done);
  // caching_sha2_password's full authentication: the password itself, accepted inside TLS only.
  void check_full_auth(std::string_view payload, const Done& done);
  // Ends the login: OK (after what `o` already holds) or Access denied, and closes on failure.
  void finish_auth(bool ok, bool password_used, Output o, const Done& done);
  [[nodiscard]] const UserAccount& pending_account() const;
  void handle_command(std::string_view payload, const Done& done);
  void run_queries();
  // Charges the growth of run_.out by its last answer, from `before` bytes (and sequence id
  // `seq_before`); when refused, that answer is replaced by the refusal, which ends the run.
  void charge_output(std::size_t before, std::uint8_t seq_before);
  // Charges (or gives back) the change in what the frame decoder holds.
  void charge_buffers();
  // Gives back what a large answer left in the run's and the encoders' buffers.
  void shrink_after_run();
  // An answer of `bytes`: closes after it when it carries a memory refusal (ERR 4081/4082).
  [[nodiscard]] Output answer(std::string bytes);
  // Sends the run's output: the last thing done with the run (see QueryRun::phase).
  void finish_queries();
  // The client left during a run: drops the statements not yet run and closes.
  void abandon_queries();
  // Executes `what` (statement text or a Statement) between the completion's begin() and end():
  // `then` runs on the session's strand, inline or later.
  template <class What>
  void call(const What& what, CommandHandler::Done then);
  void start_queries(std::span<const std::string_view> statements, bool binary, const Done& done);
  // Gives back the memory of a statement's long data (and forgets the data).
  void release_long_data(PreparedStatement& ps);
  void prepare(std::string_view payload, const Done& done);
  void execute_prepared(std::string_view payload, const Done& done);
  void field_list(std::string_view payload, const Done& done);
  // The commands handle_command() dispatches: COM_QUERY, COM_SET_OPTION, COM_RESET_CONNECTION,
  // and the prepared statement's COM_STMT_CLOSE / _RESET / _SEND_LONG_DATA.
  void query(std::string_view payload, const Done& done);
  void set_option(std::string_view payload, const Done& done);
  void reset_connection(const Done& done);
  void close_statement(std::string_view payload, const Done& done);
  void reset_statement(std::string_view payload, const Done& done);
  void send_long_data(std::string_view payload, const Done& done);

  // Encoders: append framed packets to `out` using the running sequence id.
  void append(std::string& out, std::string_view payload);
  void append_ok(std::string& out, const OkResult& ok, std::uint16_t extra_status = 0);
  void append_err(std::string& out, std::uint16_t code, std::string_view state,
                  std::string_view message);
  void append_result(std::string& out, const QueryResult& result, bool binary,
                     std::uint16_t extra_status);
  /// An ERR of the connection layer (error_mapping.h's rows); closes the connection when its
  /// row says so.
  [[nodiscard]] Output error_output(ConnectionErrc code,
                                    std::initializer_list<std::string_view> args = {});
  [[nodiscard]] std::uint16_t status_flags() const;
  [[nodiscard]] std::vector<ColumnDefinition41> to_definitions(
      const std::vector<Column>& columns) const;

  const CommandHandler& executor_;
  const LoginPolicy& login_;
  ConnectionHooks hooks_;
  FrameDecoder decoder_;
  State state_ = State::kAwaitHandshakeResponse;
  Capabilities server_caps_;
  Capabilities client_caps_ = 0;
  Scramble scramble_{};
  std::string pending_user_;
  const UserAccount* account_ = nullptr;  // of pending_user_; null: no such user
  std::optional<std::string> pending_database_;
  std::uint8_t seq_ = 0;
  bool multi_statements_ = false;
  SessionState session_;
  std::map<std::uint32_t, PreparedStatement> statements_;
  std::uint32_t next_statement_id_ = 1;
  // The encoded column definitions of recent result sets, by the identity of their ColumnList
  // (which the entry holds, so the identity stays valid): a statement answered again and again
  // has its columns encoded once.
  struct EncodedColumns {
    ColumnList columns;
    std::vector<ColumnDefinition41> definitions;
    std::vector<std::string> payloads;
  };
  const EncodedColumns& encoded(const ColumnList& columns);
  std::array<EncodedColumns, 4> encoded_{};
  std::size_t next_encoded_ = 0;
  std::string scratch_;  // payloads being built, memory reused

  std::uint64_t buffers_charged_ = 0;  // of decoder_.held()
  std::uint64_t output_charged_ = 0;   // of the answer being sent, until recycle()
  std::optional<ConnectionMemory::Verdict> buffer_refusal_;
  bool close_after_answer_ = false;  // an ERR 4081/4082 was appended

  QueryRun run_;              // the COM_QUERY or COM_STMT_EXECUTE being answered
  std::string spare_output_;  // a sent answer's buffer, given back by recycle()
  static constexpr std::size_t kMaxSpareOutput = 64 * 1024;
  static constexpr std::size_t kMaxKeptStatement = 16 * 1024;
  static constexpr std::size_t kUnchargedBuffers = FrameDecoder::kMaxIdleHeld;
  static constexpr std::size_t kMaxKeptStatements = 64;
  static constexpr std::size_t kMaxCachedColumns = 64;
  static constexpr std::chrono::milliseconds kRunSlice{2};
};

}  // namespace ticketd::mysql
