// DDL and SHOW of sequences and tables: a ticketd table is a sequence (the Flickr schema's
// id + stub), so CREATE TABLE and CREATE SEQUENCE both create one.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/core/ticket_errc.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/statement_handlers.h"
#include "server/net/completion.h"

namespace ticketd::mysql {
namespace {

// What SHOW TABLE STATUS and the CREATE texts say of a sequence's kind.
std::string kind_comment(const SequenceDescription& d) {
  return "ticketd " + std::string(kind_name(d.spec.kind)) + " sequence" + d.comment_detail;
}

// A ticket sequence is the plain Flickr table: its CREATE texts carry no comment.
bool commented(const SequenceDescription& d) { return d.spec.kind != SequenceKind::kTicket; }

// The id column of a kind whose IDs are text.
std::string text_id_type(SequenceKind kind) {
  return "char(" + std::to_string(kind_row(kind).text_id_length) + ")";
}

std::string create_table_text(const SequenceDescription& d) {
  const auto& name = d.spec.name;
  if (!kind_row(d.spec.kind).integer_ids) {
    return "CREATE TABLE `" + name + "` (\n  `id` " + text_id_type(d.spec.kind) +
           " NOT NULL,\n  PRIMARY KEY (`id`)\n" +
           ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='" + kind_comment(d) + "'";
  }
  std::string text = "CREATE TABLE `" + name +
                     "` (\n  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
                     "  `stub` char(1) NOT NULL DEFAULT '',\n  PRIMARY KEY (`id`),\n"
                     "  UNIQUE KEY `stub` (`stub`)\n) ENGINE=InnoDB";
  if (d.next_value) text += " AUTO_INCREMENT=" + std::to_string(*d.next_value);
  text += " DEFAULT CHARSET=utf8mb4";
  if (commented(d)) text += " COMMENT='" + kind_comment(d) + "'";
  return text;
}

std::string create_sequence_text(const SequenceDescription& d) {
  const auto& spec = d.spec;
  std::string text = "CREATE SEQUENCE `" + spec.name + "`";
  if (d.next_value) {  // a counter
    text += " start with " + std::to_string(spec.start) + " minvalue " +
            std::to_string(spec.start) + " maxvalue " + std::to_string(spec.max_value) +
            " increment by " + std::to_string(spec.increment);
    // A gapless number is written when it is used, never reserved ahead.
    text += kind_takes(spec.kind, kind_key::kCache) ? " cache " + std::to_string(spec.cache)
                                                    : std::string(" nocache");
    text += " nocycle";
  }
  text += " ENGINE=InnoDB";
  if (commented(d)) text += " COMMENT='" + kind_comment(d) + "'";
  return text;
}

void create(StatementCall& call, const SequenceSpec& spec, bool if_not_exists,
            const std::string& display) {
  if (auto problem = validate(spec); !problem.empty()) {
    return call.done(to_err(StatementErrc::kWrongArguments, {"'" + display + "': " + problem}));
  }
  const bool existed = call.engine.tickets.exists(spec.name);
  call.engine.tickets.create(
      spec, CreateOptions{.if_not_exists = if_not_exists},
      call.resume<DetailedResult<void>>([&s = call.session, done = std::move(call.done), existed,
                                         if_not_exists, display](DetailedResult<void> r) {
        if (!r) {
          if (r.error().code == TicketErrc::kAlreadyExists) {
            return done(to_err(StatementErrc::kTableExists, {display}));
          }
          return done(to_err(r.error(), display));
        }
        if (existed && if_not_exists) {
          auto note = to_err(StatementErrc::kTableExists, {display});
          s.warnings.push_back({"Note", note.code, std::move(note.message)});
          return done(OkResult{0, 0, 1, {}});
        }
        done(OkResult{});
      }));
}

// DROP TABLE a, b, ...: one drop after another, in a loop rather than one call per name, so
// a long list of missing names (answered inline) needs no deeper stack than one name.
struct DropRun : std::enable_shared_from_this<DropRun> {
  DropRun(StatementCall& c, std::vector<sql::TableName> n, bool e, bool seq)
      : call{c.engine, c.session, std::move(c.done), c.statement, c.parsed},
        names(std::move(n)),
        if_exists(e),
        sequence(seq) {}

  StatementCall call;
  std::vector<sql::TableName> names;
  bool if_exists = false;
  bool sequence = false;
  net::CallLoop loop;

  void resumed(std::size_t next) {
    if (loop.answered_inline()) return;
    step(next);
  }

  void step(std::size_t i) {
    auto& s = call.session;
    for (; i < names.size(); ++i) {
      ErrResult e;
      auto name = call.resolve(names[i], e);
      if (!name) return call.done(e);
      auto display = call.engine.qualified(*name);
      auto unknown = [&] {
        return to_err(sequence ? StatementErrc::kUnknownSequence : StatementErrc::kBadTable,
                      {display});
      };
      if (!call.engine.tickets.exists(*name)) {
        if (!if_exists) return call.done(unknown());
        // mysqld keeps at most max_error_count (1024) notes; so do we, for a list of a
        // million missing names.
        if (s.warnings.size() < kMaxErrorCount) {
          auto w = unknown();
          s.warnings.push_back({"Note", w.code, w.message});
        }
        continue;
      }
      // Drop is not a reset: the engine leaves a tombstone, so re-creating resumes above it.
      loop.calling();
      call.engine.tickets.drop(*name,
                               call.resume<DetailedResult<void>>(
                                   [self = shared_from_this(), i, display](DetailedResult<void> r) {
                                     if (!r) return self->call.done(to_err(r.error(), display));
                                     self->resumed(i + 1);
                                   }));
      if (loop.answers_later()) return;
    }
    call.done(OkResult{0, 0, static_cast<std::uint16_t>(s.warnings.size()), {}});
  }
};

// The sequence of any kind a statement names; answers 1146 and nullopt when there is none.
std::optional<SequenceDescription> find_or_fail(StatementCall& call, const sql::TableName& t) {
  ErrResult e;
  auto name = call.resolve(t, e);
  if (!name) {
    call.done(e);
    return std::nullopt;
  }
  auto d = call.engine.tickets.describe(*name);
  if (!d) call.done(to_err(StatementErrc::kNoSuchTable, {call.engine.qualified(*name)}));
  return d;
}

bool schema_ok(StatementCall& call, const std::string& schema) {
  if (schema.empty() || schema == call.engine.settings.database) return true;
  call.done(to_err(StatementErrc::kBadDb, {clip_for_message(schema)}));
  return false;
}

}  // namespace

void run(const sql::CreateTable& st, StatementCall& call) {
  ErrResult e;
  auto name = call.resolve(st.name, e);
  if (!name) return call.done(e);
  int autos = 0;
  for (const auto& c : st.columns) autos += c.is_auto_increment ? 1 : 0;
  if (autos > 1) return call.done(to_err(StatementErrc::kWrongAutoKey));
  if (autos == 0) {
    return call.done(to_err(StatementErrc::kNotSupported,
                            {"a table without an AUTO_INCREMENT column (a ticketd table is "
                             "a sequence: it needs exactly one)"}));
  }
  const auto& settings = call.engine.settings;
  SequenceSpec spec;
  spec.name = *name;
  spec.start = st.auto_increment_start.value_or(1);
  if (spec.start == 0) spec.start = 1;
  spec.increment = settings.auto_increment_increment;
  spec.offset = settings.auto_increment_offset;
  spec.cache = settings.default_cache;
  create(call, spec, st.if_not_exists, *name);
}

void run(const sql::CreateSequence& st, StatementCall& call) {
  ErrResult e;
  auto name = call.resolve(st.name, e);
  if (!name) return call.done(e);
  const auto not_supported = [&call](std::string_view what) {
    call.done(to_err(StatementErrc::kNotSupported, {what}));
  };
  const auto wrong = [&call](std::string_view what) {
    call.done(to_err(StatementErrc::kWrongArguments, {what}));
  };
  if (st.or_replace) return not_supported("CREATE OR REPLACE SEQUENCE");
  const auto& o = st.options;
  const std::int64_t increment = o.increment.value_or(1);
  if (increment <= 0) return not_supported("a descending or zero INCREMENT");
  if (increment > 65535) return wrong("INCREMENT must be at most 65535");
  const std::int64_t min_value = o.min_value.value_or(1);
  const std::int64_t start = o.start.value_or(std::max<std::int64_t>(min_value, 1));
  if (start < 1) return not_supported("a sequence starting below 1");
  SequenceSpec spec;
  spec.name = *name;
  spec.start = static_cast<std::uint64_t>(start);
  spec.increment = static_cast<std::uint64_t>(increment);
  // MariaDB sequences step from START: values ≡ start (mod increment).
  spec.offset = spec.start % spec.increment == 0 ? spec.increment : spec.start % spec.increment;
  if (o.max_value && !o.no_max_value) {
    if (*o.max_value < start) return wrong("MAXVALUE is less than START");
    spec.max_value = static_cast<std::uint64_t>(*o.max_value);
  }
  spec.cache = o.cache ? std::max<std::int64_t>(*o.cache, 1) : call.engine.settings.default_cache;
  create(call, spec, st.if_not_exists, *name);
}

void run(const sql::DropTable& st, StatementCall& call) {
  std::make_shared<DropRun>(call, st.names, st.if_exists, false)->step(0);
}

void run(const sql::DropSequence& st, StatementCall& call) {
  std::make_shared<DropRun>(call, st.names, st.if_exists, true)->step(0);
}

void run(const sql::AlterTable& st, StatementCall& call) {
  ErrResult e;
  auto name = call.resolve(st.table, e);
  if (!name) return call.done(e);
  if (!st.auto_increment) {
    return call.done(
        to_err(StatementErrc::kNotSupported, {"ALTER TABLE other than AUTO_INCREMENT = n"}));
  }
  // Forward only: a smaller value is ignored, as InnoDB ignores an AUTO_INCREMENT below the
  // current maximum.
  call.engine.tickets.advance_to(
      *name, *st.auto_increment,
      call.resume<DetailedResult<Block>>(
          [done = std::move(call.done), d = call.engine.qualified(*name)](DetailedResult<Block> b) {
            if (!b) return done(to_err(b.error(), d));
            done(OkResult{0, 0, 0, "Records: 0  Duplicates: 0  Warnings: 0"});
          }));
}

// ALTER SEQUENCE s INCREMENT BY n RESTART WITH v: a restride (docs/restride.md). MariaDB has no
// offset clause; its sequences step from their first value, so the new grid is the values
// ≡ v (mod n), starting at v, as CREATE SEQUENCE reads START WITH. v must be above every value
// this server may have issued (its durable ceiling): a restride never goes back.
void run(const sql::AlterSequence& st, StatementCall& call) {
  ErrResult e;
  auto name = call.resolve(st.name, e);
  if (!name) return call.done(e);
  const auto& o = st.options;
  const bool other = o.start || o.min_value || o.no_min_value || o.max_value || o.no_max_value ||
                     o.cache || o.engine;
  if (!o.increment || !o.restart_with || other) {
    return call.done(to_err(
        StatementErrc::kNotSupported,
        {o.increment && !other
             ? "ALTER SEQUENCE ... INCREMENT BY without RESTART WITH v (a new grid starts "
               "above what was issued: give its first value)"
             : "ALTER SEQUENCE other than INCREMENT BY n RESTART WITH v (use SELECT SETVAL to "
               "move a sequence forward)"}));
  }
  if (*o.increment <= 0)
    return call.done(to_err(StatementErrc::kNotSupported, {"a descending or zero INCREMENT"}));
  if (*o.increment > 65535) {
    return call.done(to_err(StatementErrc::kWrongArguments, {"INCREMENT must be at most 65535"}));
  }
  if (*o.restart_with < 1) {
    return call.done(to_err(StatementErrc::kWrongArguments, {"RESTART WITH must be at least 1"}));
  }
  if (!call.engine.tickets.exists(*name) && st.if_exists) return call.done(OkResult{});
  const auto increment = static_cast<std::uint64_t>(*o.increment);
  const auto first = static_cast<std::uint64_t>(*o.restart_with);
  const std::uint64_t residue = first % increment;
  const Restride r{increment, residue == 0 ? increment : residue, first - 1};
  call.engine.tickets.restride(
      *name, r,
      call.resume<DetailedResult<Block>>(
          [done = std::move(call.done), d = call.engine.qualified(*name)](DetailedResult<Block> b) {
            if (!b) return done(to_err(b.error(), d));
            done(OkResult{});
          }));
}

void run(const sql::TruncateTable&, StatementCall& call) {
  call.done(to_err(StatementErrc::kNotSupported,
                   {"TRUNCATE: it would reissue IDs; DROP and CREATE resume above the old "
                    "values instead"}));
}

void run(const sql::ShowCreateTable& st, StatementCall& call) {
  auto d = find_or_fail(call, st.table);
  if (!d) return;
  auto r = fixed_result_set(sql::ShowCreateTable::kName, call);
  r.rows.push_back(Row{d->spec.name, create_table_text(*d)});
  call.done(std::move(r));
}

void run(const sql::ShowCreateSequence& st, StatementCall& call) {
  auto d = find_or_fail(call, st.name);
  if (!d) return;
  auto r = fixed_result_set(sql::ShowCreateSequence::kName, call);
  r.rows.push_back(Row{d->spec.name, create_sequence_text(*d)});
  call.done(std::move(r));
}

void run(const sql::ShowColumns& st, StatementCall& call) {
  auto d = find_or_fail(call, st.table);
  if (!d) return;
  auto r = fixed_result_set(sql::ShowColumns::kName, call);
  if (!kind_row(d->spec.kind).integer_ids) {
    if (passes(st.filter, "id"))
      r.rows.push_back(Row{"id", text_id_type(d->spec.kind), "NO", "PRI", std::nullopt, ""});
    return call.done(std::move(r));
  }
  if (passes(st.filter, "id")) {
    r.rows.push_back(Row{"id", "bigint(20) unsigned", "NO", "PRI", std::nullopt, "auto_increment"});
  }
  if (passes(st.filter, "stub")) r.rows.push_back(Row{"stub", "char(1)", "NO", "UNI", "", ""});
  call.done(std::move(r));
}

void run(const sql::ShowTables& st, StatementCall& call) {
  if (!schema_ok(call, st.schema)) return;
  const std::string db = st.schema.empty() ? call.session.database : st.schema;
  if (db.empty()) return call.done(to_err(StatementErrc::kNoDatabaseSelected));
  auto r = result_set_for(sql::Statement{st}, call);
  // Every kind is a table of the one database, as MariaDB lists its sequences with its tables.
  for (const auto& d : call.engine.tickets.describe_all()) {
    if (!passes(st.filter, d.spec.name)) continue;
    Row row{d.spec.name};
    if (st.full) row.emplace_back("BASE TABLE");
    r.rows.push_back(std::move(row));
  }
  call.done(std::move(r));
}

void run(const sql::ShowTableStatus& st, StatementCall& call) {
  if (!schema_ok(call, st.schema)) return;
  auto r = fixed_result_set(sql::ShowTableStatus::kName, call);
  for (const auto& d : call.engine.tickets.describe_all()) {
    if (!passes(st.filter, d.spec.name)) continue;
    const auto& next = d.next_value;
    r.rows.push_back(Row{d.spec.name, "InnoDB", "10", "Dynamic", "1",
                         next ? std::optional<std::string>(std::to_string(*next)) : std::nullopt,
                         "utf8mb4_general_ci", kind_comment(d)});
  }
  call.done(std::move(r));
}

}  // namespace ticketd::mysql
