// Prepared statements of ServerConnection: COM_FIELD_LIST, COM_STMT_PREPARE, COM_STMT_EXECUTE
// and the long data a statement holds.
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

void ServerConnection::release_long_data(PreparedStatement& ps) {
  for (auto& d : ps.long_data) {
    if (d) session_.memory.release(d->size());
    d.reset();
  }
}

void ServerConnection::field_list(std::string_view payload, const Done& done) {
  auto f = decode_com_field_list(as_bytes(payload));
  if (!f) return done(error_output(ConnectionErrc::kMalformedCommand, {"COM_FIELD_LIST"}));
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
  if (!p) return done(error_output(ConnectionErrc::kMalformedCommand, {"COM_STMT_PREPARE"}));
  if (statements_.size() >= executor_.settings().max_prepared_stmt_count) {
    return done(error_output(ConnectionErrc::kTooManyPreparedStatements,
                             {std::to_string(executor_.settings().max_prepared_stmt_count)}));
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
    return done(error_output(ConnectionErrc::kTooManyPlaceholders));
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
    return done(error_output(ConnectionErrc::kMalformedCommand, {"COM_STMT_EXECUTE"}));
  }
  const std::uint32_t id = static_cast<std::uint8_t>(payload[1]) |
                           static_cast<std::uint32_t>(static_cast<std::uint8_t>(payload[2])) << 8 |
                           static_cast<std::uint32_t>(static_cast<std::uint8_t>(payload[3])) << 16 |
                           static_cast<std::uint32_t>(static_cast<std::uint8_t>(payload[4])) << 24;
  auto it = statements_.find(id);
  if (it == statements_.end()) {
    return done(error_output(ConnectionErrc::kUnknownStatementHandler,
                             {" (" + std::to_string(id) + ") given to mysqld_stmt_execute"}));
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
    return done(error_output(ConnectionErrc::kWrongExecuteArguments));
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

void ServerConnection::close_statement(std::string_view payload, const Done& done) {
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

void ServerConnection::reset_statement(std::string_view payload, const Done& done) {
  auto r = decode_stmt_reset(as_bytes(payload));
  auto it = r ? statements_.find(r->statement_id) : statements_.end();
  if (it == statements_.end()) {
    return done(
        error_output(ConnectionErrc::kUnknownStatementHandler, {" given to mysqld_stmt_reset"}));
  }
  release_long_data(it->second);
  it->second.long_data_error.reset();
  Output o;
  append_ok(o.bytes, OkResult{});
  return done(std::move(o));
}

void ServerConnection::send_long_data(std::string_view payload, const Done& done) {
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

}  // namespace ticketd::mysql
