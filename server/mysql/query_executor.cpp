#include "server/mysql/query_executor.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "server/core/ticket_errc.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/server_variables.h"
#include "server/sql/evaluator.h"
#include "server/sql/recognizer.h"

namespace ticketd::mysql {
namespace {

using Done = QueryExecutor::Done;

constexpr std::size_t kMaxErrorCount = 1024;  // mysqld's max_error_count default

ErrResult err(std::uint16_t code, const char* state, std::string message) {
  return ErrResult{code, state, std::move(message)};
}

ErrResult not_supported(std::string what) {
  return err(kErNotSupportedYet, "42000",
             "This version of ticketd doesn't yet support '" + std::move(what) + "'");
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

ResultSetResult one_column(std::string name, ColumnKind kind) {
  ResultSetResult r;
  r.columns.push_back(Column{std::move(name), kind, {}});
  return r;
}

ResultSetResult name_value(std::string a, std::string b) {
  ResultSetResult r;
  r.columns.push_back(Column{std::move(a), ColumnKind::kVarString, {}});
  r.columns.push_back(Column{std::move(b), ColumnKind::kVarString, {}});
  return r;
}

bool passes(const sql::ShowFilter& f, std::string_view value) {
  if (f.like) return like_match(value, *f.like);
  if (f.has_where) {
    for (const auto& v : f.where_values) {
      if (lower(v) == lower(value)) return true;
    }
    return false;
  }
  return true;
}

std::string format_utc(std::int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::optional<bool> parse_bool(std::string_view v) {
  auto l = lower(v);
  if (l == "1" || l == "on" || l == "true") return true;
  if (l == "0" || l == "off" || l == "false") return false;
  return std::nullopt;
}

std::string create_table_text(const SequenceInfo& i) {
  return "CREATE TABLE `" + i.spec.name +
         "` (\n  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
         "  `stub` char(1) NOT NULL DEFAULT '',\n  PRIMARY KEY (`id`),\n"
         "  UNIQUE KEY `stub` (`stub`)\n) ENGINE=InnoDB AUTO_INCREMENT=" +
         std::to_string(i.next_value) + " DEFAULT CHARSET=utf8mb4";
}

std::string create_sequence_text(const SequenceInfo& i) {
  return "CREATE SEQUENCE `" + i.spec.name + "` start with " + std::to_string(i.spec.start) +
         " minvalue " + std::to_string(i.spec.start) + " maxvalue " +
         std::to_string(i.spec.max_value) + " increment by " + std::to_string(i.spec.increment) +
         " cache " + std::to_string(i.spec.cache) + " nocycle ENGINE=InnoDB";
}

// Commits (or releases) every gapless number the session holds; `then` gets the first error.
// Numbers whose commit failed in storage are released, so they do not wait for their TTL.
void settle_holds(SessionState& s, bool commit, std::function<void(std::optional<Error>)> then) {
  auto holds = std::move(s.gapless_holds);
  s.gapless_holds.clear();
  if (holds.empty()) return then(std::nullopt);
  struct Join {
    std::mutex mutex;
    std::size_t left = 0;
    std::optional<Error> first;
    std::function<void(std::optional<Error>)> then;
  };
  auto join = std::make_shared<Join>();
  join->left = holds.size();
  join->then = std::move(then);
  for (auto& h : holds) {
    auto settled = [join, h, commit](DetailedResult<void> r) {
      if (!r && commit && r.error().code == TicketErrc::kStorageFailed) {
        h.sequence->release(h.reservation_id, [](DetailedResult<void>) {});
      }
      bool last = false;
      {
        std::lock_guard lock(join->mutex);
        if (!r && !join->first) join->first = r.error();
        last = --join->left == 0;
      }
      if (last) join->then(join->first);
    };
    if (commit) {
      h.sequence->commit(h.reservation_id, std::move(settled));
    } else {
      h.sequence->release(h.reservation_id, std::move(settled));
    }
  }
}

// Statements that read or change sequences: a standby refuses them (its engine is not loaded,
// and only the leader may issue).
bool needs_leader(const sql::Statement& statement) {
  return std::visit(
      [](const auto& st) {
        using T = std::decay_t<decltype(st)>;
        if constexpr (std::is_same_v<T, sql::Select>) {
          return std::any_of(st.items.begin(), st.items.end(), [](const sql::SelectItem& i) {
            return i.kind == sql::SelectItemKind::kNextValue ||
                   i.kind == sql::SelectItemKind::kLastValue ||
                   i.kind == sql::SelectItemKind::kSetValue;
          });
        } else {
          return std::is_same_v<T, sql::InsertTicket> || std::is_same_v<T, sql::UpdateCounter> ||
                 std::is_same_v<T, sql::SelectNextBlock> ||
                 std::is_same_v<T, sql::CreateSequence> || std::is_same_v<T, sql::AlterSequence> ||
                 std::is_same_v<T, sql::DropSequence> ||
                 std::is_same_v<T, sql::ShowCreateSequence> ||
                 std::is_same_v<T, sql::CreateTable> || std::is_same_v<T, sql::AlterTable> ||
                 std::is_same_v<T, sql::DropTable> || std::is_same_v<T, sql::TruncateTable> ||
                 std::is_same_v<T, sql::ShowTables> || std::is_same_v<T, sql::ShowCreateTable> ||
                 std::is_same_v<T, sql::ShowColumns> || std::is_same_v<T, sql::ShowTableStatus>;
        }
      },
      statement);
}

}  // namespace

void QueryExecutor::end_session(SessionState& session) const {
  settle_holds(session, false, [](std::optional<Error>) {});
}

QueryExecutor::QueryExecutor(TicketService& tickets, const ServerSettings& settings,
                             const Clock& clock, IssuedHook on_issued, UuidV7Generator* uuids,
                             const ServingGate* gate)
    : tickets_(tickets),
      settings_(settings),
      clock_(clock),
      on_issued_(std::move(on_issued)),
      uuids_(uuids),
      gate_(gate),
      started_unix_ms_(clock.now_unix_ms()),
      global_memory_(settings.global_connection_memory_limit) {}

// One overload per statement kind. Each completes `done` exactly once.
struct QueryExecutor::Visitor {
  const QueryExecutor& ex;
  SessionState& s;
  Done& done;

  // --- names -------------------------------------------------------------------------------

  // Resolves `db.table` / `table` to a sequence name, or fails as MySQL would.
  std::optional<std::string> resolve(const sql::TableName& t, ErrResult& error) const {
    const std::string& db = t.schema.empty() ? s.database : t.schema;
    if (db.empty()) {
      error = err(1046, "3D000", "No database selected");
      return std::nullopt;
    }
    if (db != ex.settings_.database) {
      error = err(
          kErNoSuchTable, "42S02",
          "Table '" + clip_for_message(db) + "." + clip_for_message(t.name) + "' doesn't exist");
      return std::nullopt;
    }
    return t.name;
  }

  std::string qualified(const std::string& name) const {
    return ex.settings_.database + "." + name;
  }

  void issued(const std::string& name, std::uint64_t n) const {
    if (ex.on_issued_) ex.on_issued_(name, n);
  }

  // One number of a gapless sequence: inside a transaction it is reserved and held until
  // COMMIT / ROLLBACK; in autocommit mode it is reserved and committed in one durable write.
  void take_gapless(const std::shared_ptr<GaplessSequence>& g,
                    std::function<void(DetailedResult<std::uint64_t>)> then) const {
    std::string holder = "mysql:" + std::to_string(s.connection_id);
    if (s.in_transaction) {
      // Session scope: the reservation dies with the connection, as the transaction would.
      g->reserve(
          std::move(holder), 0,
          [&s = s, g, then = std::move(then)](DetailedResult<Reservation> r) {
            if (!r) return then(r.error());
            s.gapless_holds.push_back(GaplessHold{g, r->id, r->number});
            then(r->number);
          },
          ReservationScope::kSession);
      return;
    }
    g->take(std::move(holder), [then = std::move(then)](DetailedResult<Reservation> r) {
      if (!r) return then(r.error());
      then(r->number);
    });
  }

  // COMMIT / ROLLBACK / BEGIN / SET autocommit=1: settles held numbers, then answers OK.
  void end_transaction(bool commit, bool begin_another) {
    settle_holds(s, commit,
                 [&s = s, done = std::move(done), begin_another](std::optional<Error> e) {
                   s.in_transaction = begin_another;
                   if (e) {
                     auto r = to_err(*e, "");
                     r.message = "Error during COMMIT: " + r.message;
                     return done(std::move(r));
                   }
                   done(OkResult{});
                 });
  }

  // --- tickets -----------------------------------------------------------------------------

  void operator()(const sql::InsertTicket& st) {
    ErrResult e;
    auto name = resolve(st.table, e);
    if (!name) return done(e);
    for (std::size_t i = 0; i < st.values.size(); ++i) {
      if (!st.columns.empty() && st.values[i].size() != st.columns.size()) {
        return done(err(kErWrongValueCount, "21S01",
                        "Column count doesn't match value count at row " + std::to_string(i + 1)));
      }
    }
    const std::uint64_t rows = std::max<std::uint64_t>(st.rows, 1);
    if (rows > ex.settings_.max_block) {
      return done(
          err(kErWrongArguments, "HY000",
              "too many rows in one insert: at most " + std::to_string(ex.settings_.max_block)));
    }
    // REPLACE over the stub row deletes and inserts: MySQL reports 2 affected rows per row.
    const std::uint64_t affected = st.is_replace ? rows * 2 : rows;
    // The cached path answers without building a callback (the common case: the Flickr recipe
    // on a sequence whose ceiling is ahead).
    if (auto seq = ex.tickets_.find(*name)) {
      if (auto b = seq->try_take(rows)) {
        issued(*name, b->count);
        s.last_insert_id = b->first;
        return done(OkResult{affected, b->first, 0, {}});
      }
    } else if (auto g = ex.tickets_.find_gapless(*name)) {
      if (rows != 1) {
        return done(to_err(Error{TicketErrc::kWrongKind, "sequence '" + *name +
                                                             "' is gapless: one number per "
                                                             "statement, multi-row inserts are "
                                                             "refused"},
                           qualified(*name)));
      }
      return take_gapless(g, [this_ex = &ex, &s = s, done = std::move(done), n = *name,
                              affected](DetailedResult<std::uint64_t> v) {
        if (!v) return done(to_err(v.error(), this_ex->settings_.database + "." + n));
        if (this_ex->on_issued_) this_ex->on_issued_(n, 1);
        s.last_insert_id = *v;
        done(OkResult{affected, *v, 0, {}});
      });
    }
    ex.tickets_.next(*name, rows,
                     [this_ex = &ex, &s = s, done = std::move(done), n = *name,
                      affected](DetailedResult<Block> b) {
                       if (!b)
                         return done(to_err(b.error(), this_ex->settings_.database + "." + n));
                       if (this_ex->on_issued_) this_ex->on_issued_(n, b->count);
                       s.last_insert_id = b->first;  // the first of a multi-row insert, as MySQL
                       done(OkResult{affected, b->first, 0, {}});
                     });
  }

  void operator()(const sql::UpdateCounter& st) {
    // The manual's idiom `UPDATE t SET id = LAST_INSERT_ID(id + 1)`: the counter row is the
    // sequence, and LAST_INSERT_ID() afterwards returns the new value.
    ErrResult e;
    auto name = resolve(st.table, e);
    if (!name) return done(e);
    if (st.delta <= 0) return done(not_supported("UPDATE with a non-increasing LAST_INSERT_ID"));
    if (auto g = s.in_transaction ? ex.tickets_.find_gapless(*name) : nullptr) {
      return take_gapless(g, [this_ex = &ex, &s = s, done = std::move(done),
                              n = *name](DetailedResult<std::uint64_t> v) {
        if (!v) return done(to_err(v.error(), this_ex->settings_.database + "." + n));
        if (this_ex->on_issued_) this_ex->on_issued_(n, 1);
        s.last_insert_id = *v;
        done(OkResult{1, 0, 0, "Rows matched: 1  Changed: 1  Warnings: 0"});
      });
    }
    ex.tickets_.next(
        *name, 1,
        [this_ex = &ex, &s = s, done = std::move(done), n = *name](DetailedResult<Block> b) {
          if (!b) return done(to_err(b.error(), this_ex->settings_.database + "." + n));
          if (this_ex->on_issued_) this_ex->on_issued_(n, 1);
          s.last_insert_id = b->first;
          done(OkResult{1, 0, 0, "Rows matched: 1  Changed: 1  Warnings: 0"});
        });
  }

  void operator()(const sql::SelectNextBlock& st) {
    ErrResult e;
    auto name = resolve(st.sequence, e);
    if (!name) return done(e);
    if (st.count < 1 || static_cast<std::uint64_t>(st.count) > ex.settings_.max_block) {
      return done(err(kErWrongArguments, "HY000",
                      "NEXT n VALUES needs 1 <= n <= " + std::to_string(ex.settings_.max_block)));
    }
    ex.tickets_.next(
        *name, static_cast<std::uint64_t>(st.count),
        [this_ex = &ex, &s = s, done = std::move(done), n = *name](DetailedResult<Block> b) {
          if (!b) return done(to_err(b.error(), this_ex->settings_.database + "." + n));
          if (this_ex->on_issued_) this_ex->on_issued_(n, b->count);
          s.last_values[n] = b->last();
          auto r = one_column("nextval", ColumnKind::kUnsignedBigint);
          r.rows.push_back(Row{std::to_string(b->first)});
          done(std::move(r));
        });
  }

  // --- SELECT ------------------------------------------------------------------------------

  // Evaluates the items left to right; NEXTVAL and SETVAL wait for the engine.
  struct SelectRun : std::enable_shared_from_this<SelectRun> {
    const QueryExecutor* ex;
    SessionState* s;
    Done done;
    sql::Select st;
    ResultSetResult result;
    Row row;
    std::size_t row_bytes = 0;
    // NEXTVAL / SETVAL items complete inline (cached path) or later; the loop in step() goes on
    // after an inline one instead of recursing, so 10,000 items need no deeper stack than one.
    // 0: the item is running inside step(), 1: it completed inline, 2: step() returned.
    std::atomic<int> phase{0};

    // A row larger than max_allowed_packet could not be sent: `SELECT @@v, @@v, ...` with an
    // 8 MiB @@v would otherwise build gigabytes.
    bool row_fits(std::size_t bytes) {
      row_bytes += bytes;
      if (row_bytes <= ex->settings_.max_allowed_packet) return true;
      finish(to_err(LimitErrc::kValueTooLarge,
                    "Result of SELECT was larger than max_allowed_packet (" +
                        std::to_string(ex->settings_.max_allowed_packet) + ")"));
      return false;
    }

    // Called by an async item when its value is in the row.
    void resumed(std::size_t next) {
      int expected = 0;
      if (phase.compare_exchange_strong(expected, 1)) return;  // inline: step()'s loop goes on
      step(next);
    }

    void step(std::size_t i) {
      for (; i < st.items.size(); ++i) {
        const auto& item = st.items[i];
        auto& col =
            result.columns.emplace_back(Column{item.column_name(), ColumnKind::kVarString, {}});
        switch (item.kind) {
          case sql::SelectItemKind::kLiteral:
            switch (item.literal.kind) {
              case sql::LiteralKind::kNull:
                col.kind = ColumnKind::kNull;
                row.emplace_back(std::nullopt);
                break;
              case sql::LiteralKind::kInteger:
                col.kind = ColumnKind::kBigint;
                row.emplace_back(std::to_string(item.literal.integer));
                break;
              default:
                row.emplace_back(item.literal.text);
            }
            break;
          case sql::SelectItemKind::kSystemVariable: {
            auto v = lookup_variable(ex->settings_, *s, item.variable,
                                     item.scope == sql::VariableScope::kGlobal);
            if (!v) {
              return finish(err(1193, "HY000", "Unknown system variable '" + item.variable + "'"));
            }
            if (v->numeric) col.kind = ColumnKind::kBigint;
            if (!row_fits(v->value.size())) return;
            row.emplace_back(std::move(v->value));
            break;
          }
          case sql::SelectItemKind::kUserVariable: {
            auto it = s->user_variables.find(item.variable);
            if (it != s->user_variables.end() && !row_fits(it->second.size())) return;
            row.emplace_back(it == s->user_variables.end() ? std::nullopt
                                                           : std::optional(it->second));
            break;
          }
          case sql::SelectItemKind::kLastInsertId:
            col.kind = ColumnKind::kUnsignedBigint;
            row.emplace_back(std::to_string(s->last_insert_id));
            break;
          case sql::SelectItemKind::kDatabase:
            row.emplace_back(s->database.empty() ? std::nullopt : std::optional(s->database));
            break;
          case sql::SelectItemKind::kVersion:
            row.emplace_back(ex->settings_.version);
            break;
          case sql::SelectItemKind::kUser:
            row.emplace_back(s->user + "@" + s->host);
            break;
          case sql::SelectItemKind::kCurrentUser:
            row.emplace_back(s->user + "@%");
            break;
          case sql::SelectItemKind::kConnectionId:
            col.kind = ColumnKind::kUnsignedBigint;
            row.emplace_back(std::to_string(s->connection_id));
            break;
          case sql::SelectItemKind::kUuidV7:
            if (ex->uuids_ == nullptr) return finish(not_supported("UUID_V7()"));
            row.emplace_back(ticketd::to_string(ex->uuids_->next()));
            break;
          case sql::SelectItemKind::kNow:
          case sql::SelectItemKind::kUtcTimestamp:
            row.emplace_back(format_utc(ex->clock_.now_unix_ms()));
            break;
          case sql::SelectItemKind::kLastValue: {
            ErrResult e;
            auto name = Visitor{*ex, *s, done}.resolve(item.sequence, e);
            if (!name) return finish(e);
            if (!ex->tickets_.exists(*name)) {
              return finish(to_err(Error{TicketErrc::kUnknownSequence, {}},
                                   ex->settings_.database + "." + *name));
            }
            col.kind = ColumnKind::kUnsignedBigint;
            auto it = s->last_values.find(*name);
            row.emplace_back(it == s->last_values.end()
                                 ? std::nullopt
                                 : std::optional(std::to_string(it->second)));
            break;
          }
          case sql::SelectItemKind::kNextValue:
          case sql::SelectItemKind::kSetValue: {
            phase.store(0);
            async_item(i);
            int expected = 0;
            if (phase.compare_exchange_strong(expected, 2)) return;  // it completes later
            break;
          }
        }
      }
      if (!(st.limit && *st.limit == 0) && !(st.offset && *st.offset > 0)) {
        result.rows.push_back(std::move(row));
      }
      finish(std::move(result));
    }

    void async_item(std::size_t i) {
      const auto& item = st.items[i];
      auto& col = result.columns.back();
      col.kind = ColumnKind::kUnsignedBigint;
      ErrResult e;
      auto name = Visitor{*ex, *s, done}.resolve(item.sequence, e);
      if (!name) return finish(e);
      auto self = shared_from_this();
      if (item.kind == sql::SelectItemKind::kNextValue) {
        if (auto g = ex->tickets_.find_gapless(*name)) {
          Visitor{*ex, *s, done}.take_gapless(
              g, [self, i, n = *name](DetailedResult<std::uint64_t> v) {
                if (!v) {
                  return self->finish(to_err(v.error(), self->ex->settings_.database + "." + n));
                }
                if (self->ex->on_issued_) self->ex->on_issued_(n, 1);
                self->s->last_values[n] = *v;
                self->row.emplace_back(std::to_string(*v));
                self->resumed(i + 1);
              });
          return;
        }
        ex->tickets_.next(*name, 1, [self, i, n = *name](DetailedResult<Block> b) {
          if (!b) return self->finish(to_err(b.error(), self->ex->settings_.database + "." + n));
          if (self->ex->on_issued_) self->ex->on_issued_(n, 1);
          self->s->last_values[n] = b->first;
          self->row.emplace_back(std::to_string(b->first));
          self->resumed(i + 1);
        });
        return;
      }
      // SETVAL(s, n): moves the sequence forward so the next value is above n (or n itself
      // when is_used is false); returns n, or NULL when the sequence is already past it.
      if (item.setval_value < 0) return finish(not_supported("SETVAL to a negative value"));
      auto seq = ex->tickets_.find(*name);
      if (!seq) {
        return finish(
            to_err(Error{TicketErrc::kUnknownSequence, {}}, ex->settings_.database + "." + *name));
      }
      // With is_used (the default) n itself counts as issued, so the next value is above n;
      // n may be max_value, which exhausts the sequence as in MariaDB.
      const auto value = static_cast<std::uint64_t>(item.setval_value);
      const auto info = seq->info();
      const bool already_past = info.exhausted || (item.setval_is_used ? info.next_value > value
                                                                       : info.next_value >= value);
      if (already_past) {
        row.emplace_back(std::nullopt);
        return resumed(i + 1);
      }
      auto then = [self, i, value, n = *name](DetailedResult<Block> b) {
        if (!b) return self->finish(to_err(b.error(), self->ex->settings_.database + "." + n));
        self->row.emplace_back(std::to_string(value));
        self->resumed(i + 1);
      };
      if (item.setval_is_used) {
        seq->advance_past(value, std::move(then));
      } else {
        seq->advance_to(value, std::move(then));
      }
    }

    void finish(QueryResult r) { done(std::move(r)); }
  };

  void operator()(const sql::Select& st) {
    auto run = std::make_shared<SelectRun>();
    run->ex = &ex;
    run->s = &s;
    run->done = std::move(done);
    run->st = st;
    run->step(0);
  }

  // --- DDL ---------------------------------------------------------------------------------

  void create(SequenceSpec spec, bool if_not_exists, const std::string& display) {
    if (auto problem = validate(spec); !problem.empty()) {
      return done(err(kErWrongArguments, "HY000", "'" + display + "': " + problem));
    }
    const bool existed = ex.tickets_.exists(spec.name);
    ex.tickets_.create(
        spec, CreateOptions{.if_not_exists = if_not_exists},
        [&s = s, done = std::move(done), existed, if_not_exists, display](DetailedResult<void> r) {
          if (!r) {
            if (r.error().code == TicketErrc::kAlreadyExists) {
              return done(err(kErTableExists, "42S01", "Table '" + display + "' already exists"));
            }
            return done(to_err(r.error(), display));
          }
          if (existed && if_not_exists) {
            s.warnings.push_back(
                {"Note", kErTableExists, "Table '" + display + "' already exists"});
            return done(OkResult{0, 0, 1, {}});
          }
          done(OkResult{});
        });
  }

  void operator()(const sql::CreateTable& st) {
    ErrResult e;
    auto name = resolve(st.name, e);
    if (!name) return done(e);
    int autos = 0;
    for (const auto& c : st.columns) autos += c.is_auto_increment ? 1 : 0;
    if (autos > 1) {
      return done(err(kErWrongAutoKey, "42000",
                      "Incorrect table definition; there can be only one auto column and it must "
                      "be defined as a key"));
    }
    if (autos == 0) {
      return done(
          not_supported("a table without an AUTO_INCREMENT column (a ticketd table is "
                        "a sequence: it needs exactly one)"));
    }
    SequenceSpec spec;
    spec.name = *name;
    spec.start = st.auto_increment_start.value_or(1);
    if (spec.start == 0) spec.start = 1;
    spec.increment = ex.settings_.auto_increment_increment;
    spec.offset = ex.settings_.auto_increment_offset;
    spec.cache = ex.settings_.default_cache;
    create(spec, st.if_not_exists, *name);
  }

  void operator()(const sql::CreateSequence& st) {
    ErrResult e;
    auto name = resolve(st.name, e);
    if (!name) return done(e);
    if (st.or_replace) return done(not_supported("CREATE OR REPLACE SEQUENCE"));
    const auto& o = st.options;
    const std::int64_t increment = o.increment.value_or(1);
    if (increment <= 0) return done(not_supported("a descending or zero INCREMENT"));
    if (increment > 65535) {
      return done(err(kErWrongArguments, "HY000", "INCREMENT must be at most 65535"));
    }
    const std::int64_t min_value = o.min_value.value_or(1);
    const std::int64_t start = o.start.value_or(std::max<std::int64_t>(min_value, 1));
    if (start < 1) return done(not_supported("a sequence starting below 1"));
    SequenceSpec spec;
    spec.name = *name;
    spec.start = static_cast<std::uint64_t>(start);
    spec.increment = static_cast<std::uint64_t>(increment);
    // MariaDB sequences step from START: values ≡ start (mod increment).
    spec.offset = spec.start % spec.increment == 0 ? spec.increment : spec.start % spec.increment;
    if (o.max_value && !o.no_max_value) {
      if (*o.max_value < start) {
        return done(err(kErWrongArguments, "HY000", "MAXVALUE is less than START"));
      }
      spec.max_value = static_cast<std::uint64_t>(*o.max_value);
    }
    spec.cache = o.cache ? std::max<std::int64_t>(*o.cache, 1) : ex.settings_.default_cache;
    create(spec, st.if_not_exists, *name);
  }

  // DROP TABLE a, b, ...: one drop after another, in a loop rather than one call per name, so
  // a long list of missing names (answered inline) needs no deeper stack than one name.
  struct DropRun : std::enable_shared_from_this<DropRun> {
    const QueryExecutor* ex;
    SessionState* s;
    Done done;
    std::vector<sql::TableName> names;
    bool if_exists = false;
    bool sequence = false;
    std::atomic<int> phase{0};  // as in SelectRun

    void resumed(std::size_t next) {
      int expected = 0;
      if (phase.compare_exchange_strong(expected, 1)) return;
      step(next);
    }

    void step(std::size_t i) {
      for (; i < names.size(); ++i) {
        ErrResult e;
        auto name = Visitor{*ex, *s, done}.resolve(names[i], e);
        if (!name) return done(e);
        auto display = ex->settings_.database + "." + *name;
        auto unknown = [&] {
          return sequence ? err(kErUnknownSequence, "42S02", "Unknown SEQUENCE: '" + display + "'")
                          : err(kErBadTable, "42S02", "Unknown table '" + display + "'");
        };
        if (!ex->tickets_.exists(*name)) {
          if (!if_exists) return done(unknown());
          // mysqld keeps at most max_error_count (1024) notes; so do we, for a list of a
          // million missing names.
          if (s->warnings.size() < kMaxErrorCount) {
            auto w = unknown();
            s->warnings.push_back({"Note", w.code, w.message});
          }
          continue;
        }
        // Drop is not a reset: the engine leaves a tombstone, so re-creating resumes above it.
        phase.store(0);
        ex->tickets_.drop(*name, [self = shared_from_this(), i, display](DetailedResult<void> r) {
          if (!r) return self->done(to_err(r.error(), display));
          self->resumed(i + 1);
        });
        int expected = 0;
        if (phase.compare_exchange_strong(expected, 2)) return;  // it completes later
      }
      done(OkResult{0, 0, static_cast<std::uint16_t>(s->warnings.size()), {}});
    }
  };

  void drop_all(std::vector<sql::TableName> names, bool if_exists, bool sequence) {
    auto run = std::make_shared<DropRun>();
    run->ex = &ex;
    run->s = &s;
    run->done = std::move(done);
    run->names = std::move(names);
    run->if_exists = if_exists;
    run->sequence = sequence;
    run->step(0);
  }

  void operator()(const sql::DropTable& st) { drop_all(st.names, st.if_exists, false); }
  void operator()(const sql::DropSequence& st) { drop_all(st.names, st.if_exists, true); }

  void operator()(const sql::AlterTable& st) {
    ErrResult e;
    auto name = resolve(st.table, e);
    if (!name) return done(e);
    if (!st.auto_increment) return done(not_supported("ALTER TABLE other than AUTO_INCREMENT = n"));
    // Forward only: a smaller value is ignored, as InnoDB ignores an AUTO_INCREMENT below the
    // current maximum.
    ex.tickets_.advance_to(*name, *st.auto_increment,
                           [done = std::move(done), d = qualified(*name)](DetailedResult<Block> b) {
                             if (!b) return done(to_err(b.error(), d));
                             done(OkResult{0, 0, 0, "Records: 0  Duplicates: 0  Warnings: 0"});
                           });
  }

  void operator()(const sql::AlterSequence& st) {
    (void)st;
    done(not_supported("ALTER SEQUENCE (use SELECT SETVAL to move a sequence forward)"));
  }

  void operator()(const sql::TruncateTable&) {
    done(
        not_supported("TRUNCATE: it would reissue IDs; DROP and CREATE resume above the old "
                      "values instead"));
  }

  std::shared_ptr<TicketSequence> find_or_fail(const sql::TableName& t) {
    ErrResult e;
    auto name = resolve(t, e);
    if (!name) {
      done(e);
      return nullptr;
    }
    auto seq = ex.tickets_.find(*name);
    if (!seq) done(err(kErNoSuchTable, "42S02", "Table '" + qualified(*name) + "' doesn't exist"));
    return seq;
  }

  void operator()(const sql::ShowCreateTable& st) {
    auto seq = find_or_fail(st.table);
    if (!seq) return;
    auto r = name_value("Table", "Create Table");
    auto info = seq->info();
    r.rows.push_back(Row{info.spec.name, create_table_text(info)});
    done(std::move(r));
  }

  void operator()(const sql::ShowCreateSequence& st) {
    auto seq = find_or_fail(st.name);
    if (!seq) return;
    auto r = name_value("Table", "Create Table");
    auto info = seq->info();
    r.rows.push_back(Row{info.spec.name, create_sequence_text(info)});
    done(std::move(r));
  }

  void operator()(const sql::ShowColumns& st) {
    auto seq = find_or_fail(st.table);
    if (!seq) return;
    ResultSetResult r;
    for (const char* c : {"Field", "Type", "Null", "Key", "Default", "Extra"}) {
      r.columns.push_back(Column{c, ColumnKind::kVarString, {}});
    }
    if (passes(st.filter, "id")) {
      r.rows.push_back(
          Row{"id", "bigint(20) unsigned", "NO", "PRI", std::nullopt, "auto_increment"});
    }
    if (passes(st.filter, "stub")) r.rows.push_back(Row{"stub", "char(1)", "NO", "UNI", "", ""});
    done(std::move(r));
  }

  bool schema_ok(const std::string& schema) {
    if (schema.empty() || schema == ex.settings_.database) return true;
    done(err(kErBadDb, "42000", "Unknown database '" + clip_for_message(schema) + "'"));
    return false;
  }

  void operator()(const sql::ShowTables& st) {
    if (!schema_ok(st.schema)) return;
    const std::string db = st.schema.empty() ? s.database : st.schema;
    if (db.empty()) return done(err(1046, "3D000", "No database selected"));
    ResultSetResult r;
    r.columns.push_back(Column{"Tables_in_" + db, ColumnKind::kVarString, {}});
    if (st.full) r.columns.push_back(Column{"Table_type", ColumnKind::kVarString, {}});
    for (const auto& i : ex.tickets_.list()) {
      if (!passes(st.filter, i.spec.name)) continue;
      Row row{i.spec.name};
      if (st.full) row.emplace_back("BASE TABLE");
      r.rows.push_back(std::move(row));
    }
    done(std::move(r));
  }

  void operator()(const sql::ShowTableStatus& st) {
    if (!schema_ok(st.schema)) return;
    ResultSetResult r;
    for (const char* c : {"Name", "Engine", "Version", "Row_format", "Rows", "Auto_increment",
                          "Collation", "Comment"}) {
      r.columns.push_back(Column{c, ColumnKind::kVarString, {}});
    }
    for (const auto& i : ex.tickets_.list()) {
      if (!passes(st.filter, i.spec.name)) continue;
      r.rows.push_back(Row{i.spec.name, "InnoDB", "10", "Dynamic", "1",
                           std::to_string(i.next_value), "utf8mb4_general_ci",
                           "ticketd " + std::string(kind_name(i.spec.kind)) + " sequence"});
    }
    done(std::move(r));
  }

  // --- session -----------------------------------------------------------------------------

  sql::Evaluation evaluate(const sql::Assignment& a) const {
    if (a.value && a.value->kind != sql::LiteralKind::kNull &&
        a.value->kind != sql::LiteralKind::kDefault) {
      return sql::Evaluation{a.value->text, sql::EvalFailure::kNotUnderstood};
    }
    sql::EvalLimits limits;
    limits.max_depth = kMaxExpressionDepth;
    limits.max_value_bytes = ex.settings_.max_allowed_packet;
    return sql::evaluate(
        a.expr,
        [this](sql::VariableScope scope, std::string_view n) {
          auto v = lookup_variable(ex.settings_, s, n, scope == sql::VariableScope::kGlobal);
          return v ? std::optional(std::move(v->value)) : std::nullopt;
        },
        limits);
  }

  // The ERR for an expression that is too deep or too large; nullopt when it merely has no
  // value (NULL, or something the evaluator does not understand).
  std::optional<ErrResult> evaluation_error(const sql::Evaluation& v,
                                            const sql::Assignment& a) const {
    if (v.value) return std::nullopt;
    switch (v.failure) {
      case sql::EvalFailure::kTooDeep:
        return to_err(LimitErrc::kNestedTooDeep,
                      "You have an error in your SQL syntax; the value of '" +
                          clip_for_message(a.name) + "' is nested more than " +
                          std::to_string(kMaxExpressionDepth) + " levels deep");
      case sql::EvalFailure::kTooLarge:
        return to_err(LimitErrc::kValueTooLarge,
                      "Result of SET '" + clip_for_message(a.name) +
                          "' was larger than max_allowed_packet (" +
                          std::to_string(ex.settings_.max_allowed_packet) + ")");
      case sql::EvalFailure::kNotUnderstood:
        break;
    }
    return std::nullopt;
  }

  // Names and values of every session and user variable, as counted against the budget.
  static std::uint64_t count_variable_bytes(const SessionState& s) {
    std::uint64_t n = 0;
    for (const auto* m : {&s.variables, &s.user_variables}) {
      for (const auto& [k, v] : *m) n += k.size() + v.size();
    }
    return n;
  }

  void operator()(const sql::SetStatement& st) {
    // Evaluate and check every assignment before applying any, as mysqld's check phase, so a
    // refused SET changes nothing.
    std::vector<std::optional<std::string>> values(st.assignments.size());
    std::uint64_t growth = 0;  // at most this many bytes more once applied
    std::size_t new_user = 0;
    std::size_t new_session = 0;
    for (std::size_t i = 0; i < st.assignments.size(); ++i) {
      const auto& a = st.assignments[i];
      if (a.target == sql::AssignmentTarget::kNames ||
          a.target == sql::AssignmentTarget::kCharacterSet) {
        // Up to four character_set_* / collation_* entries, each a short name.
        growth += 4 * (32 + (a.value ? a.value->text.size() : a.expr.size()) + a.collation.size());
        continue;
      }
      if (a.target == sql::AssignmentTarget::kSystemVariable &&
          (a.scope == sql::VariableScope::kGlobal || a.scope == sql::VariableScope::kPersist ||
           a.scope == sql::VariableScope::kPersistOnly)) {
        return done(err(kErSpecificAccessDenied, "42000",
                        "Access denied; you need (at least one of) the SUPER or "
                        "SYSTEM_VARIABLES_ADMIN privilege(s) for this operation"));
      }
      sql::Evaluation v = evaluate(a);
      if (auto e = evaluation_error(v, a)) return done(std::move(*e));
      values[i] = std::move(v.value);
      if (a.target == sql::AssignmentTarget::kUserVariable) {
        if (values[i] && !s.user_variables.contains(a.name)) ++new_user;
        if (values[i]) growth += a.name.size() + values[i]->size();
        continue;
      }
      if (a.name == "auto_increment_increment" || a.name == "auto_increment_offset") {
        const auto current = a.name == "auto_increment_increment"
                                 ? ex.settings_.auto_increment_increment
                                 : ex.settings_.auto_increment_offset;
        if (values[i] != std::to_string(current)) {
          return done(err(kErNotSupportedYet, "42000",
                          "ticketd does not allow changing " + a.name +
                              " per session (the "
                              "server's value is " +
                              std::to_string(current) +
                              "): a session override would break the guarantee that servers "
                              "with different offsets never issue the same value"));
        }
      }
      if (a.name == "autocommit") {
        if (!values[i] || !parse_bool(*values[i])) {
          return done(err(1231, "42000",
                          "Variable 'autocommit' can't be set to the value of '" +
                              clip_for_message(a.expr) + "'"));
        }
        continue;
      }
      // Recorded so SELECT @@x reads it back; an expression we cannot evaluate is kept as
      // written (drivers only read back what they set).
      if (!values[i]) values[i] = a.expr;
      if (!s.variables.contains(a.name)) ++new_session;
      // transaction_isolation / tx_isolation are kept in two entries.
      growth += 2 * (32 + a.name.size() + values[i]->size());
    }
    if (s.user_variables.size() + new_user > kMaxSessionVariables ||
        s.variables.size() + new_session > kMaxSessionVariables) {
      return done(to_err(LimitErrc::kTooManyVariables,
                         "Too many variables in one session: at most " +
                             std::to_string(kMaxSessionVariables) +
                             " user variables and as many session variables"));
    }
    if (auto verdict = s.memory.try_charge(growth); verdict != ConnectionMemory::Verdict::kOk) {
      return done(to_err(verdict, s.memory));
    }
    bool commit_on_autocommit = false;
    for (std::size_t i = 0; i < st.assignments.size(); ++i) {
      const auto& a = st.assignments[i];
      switch (a.target) {
        case sql::AssignmentTarget::kNames:
        case sql::AssignmentTarget::kCharacterSet: {
          auto cs = lower(a.value ? a.value->text : a.expr);
          if (cs == "default") cs = "utf8mb4";
          s.variables["character_set_client"] = cs;
          s.variables["character_set_results"] = cs;
          if (a.target == sql::AssignmentTarget::kNames) {
            s.variables["character_set_connection"] = cs;
            if (!a.collation.empty()) s.variables["collation_connection"] = lower(a.collation);
          }
          break;
        }
        case sql::AssignmentTarget::kUserVariable: {
          if (values[i]) {
            s.user_variables[a.name] = std::move(*values[i]);
          } else {
            s.user_variables.erase(a.name);
          }
          break;
        }
        case sql::AssignmentTarget::kSystemVariable: {
          if (a.name == "autocommit") {
            const bool on = *parse_bool(*values[i]);
            if (on && s.in_transaction) commit_on_autocommit = true;  // as in MySQL
            if (on) s.in_transaction = false;
            s.autocommit = on;
            break;
          }
          s.variables[a.name] = std::move(*values[i]);
          if (a.name == "transaction_isolation" || a.name == "tx_isolation") {
            s.variables["transaction_isolation"] = s.variables[a.name];
            s.variables["tx_isolation"] = s.variables[a.name];
          }
          break;
        }
      }
    }
    // `growth` was an upper bound: keep charged exactly what the variables now hold.
    const std::uint64_t now = count_variable_bytes(s);
    const std::uint64_t charged = s.variable_bytes + growth;
    if (now <= charged) {
      s.memory.release(charged - now);
    } else {
      (void)s.memory.try_charge(now - charged);  // never: growth bounds every assignment
    }
    s.variable_bytes = now;
    if (commit_on_autocommit && !s.gapless_holds.empty()) return end_transaction(true, false);
    done(OkResult{});
  }

  void operator()(const sql::SetTransaction&) { done(OkResult{}); }

  void operator()(const sql::ShowVariables& st) {
    auto r = name_value("Variable_name", "Value");
    for (auto& [k, v] : all_variables(ex.settings_, s, st.scope == sql::VariableScope::kGlobal)) {
      if (passes(st.filter, k)) r.rows.push_back(Row{k, v});
    }
    done(std::move(r));
  }

  void operator()(const sql::ShowStatus& st) {
    auto r = name_value("Variable_name", "Value");
    const auto uptime_s = (ex.clock_.now_unix_ms() - ex.started_unix_ms_) / 1000;
    ClusterView view;
    if (ex.gate_ != nullptr) view = ex.gate_->view();
    if (ex.gate_ == nullptr) view.role = Role::kLeader;
    const std::pair<std::string, std::string> rows[] = {
        {"Questions", std::to_string(s.queries)},
        {"Ticketd_sequences", std::to_string(ex.tickets_.list().size())},
        {"Ticketd_role", std::string(role_name(view.role))},
        {"Ticketd_leader_mysql", view.leader.mysql},
        {"Ticketd_leader_http", view.leader.http},
        {"Ticketd_term", std::to_string(view.revision)},
        {"Uptime", std::to_string(uptime_s)},
    };
    for (const auto& [k, v] : rows) {
      if (passes(st.filter, k)) r.rows.push_back(Row{k, v});
    }
    done(std::move(r));
  }

  void warnings_result(std::optional<std::uint64_t> limit, bool errors_only) {
    ResultSetResult r;
    r.columns.push_back(Column{"Level", ColumnKind::kVarString, {}});
    r.columns.push_back(Column{"Code", ColumnKind::kBigint, {}});
    r.columns.push_back(Column{"Message", ColumnKind::kVarString, {}});
    for (const auto& w : s.warnings) {
      if (limit && r.rows.size() >= *limit) break;
      if (errors_only && w.level != "Error") continue;
      r.rows.push_back(Row{w.level, std::to_string(w.code), w.message});
    }
    done(std::move(r));
  }

  void operator()(const sql::ShowWarnings& st) { warnings_result(st.limit, false); }
  void operator()(const sql::ShowErrors& st) { warnings_result(st.limit, true); }

  void operator()(const sql::ShowDatabases& st) {
    auto r = one_column("Database", ColumnKind::kVarString);
    for (const auto& d : {std::string("information_schema"), ex.settings_.database}) {
      if (passes(st.filter, d)) r.rows.push_back(Row{d});
    }
    done(std::move(r));
  }

  void operator()(const sql::ShowEngines&) {
    ResultSetResult r;
    for (const char* c : {"Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"}) {
      r.columns.push_back(Column{c, ColumnKind::kVarString, {}});
    }
    r.rows.push_back(
        Row{"InnoDB", "DEFAULT", "ticketd sequences (RocksDB underneath)", "YES", "NO", "NO"});
    done(std::move(r));
  }

  void operator()(const sql::ShowCollation& st) {
    ResultSetResult r;
    for (const char* c : {"Collation", "Charset", "Id", "Default", "Compiled", "Sortlen"}) {
      r.columns.push_back(Column{c, ColumnKind::kVarString, {}});
    }
    const Row rows[] = {{"utf8mb4_general_ci", "utf8mb4", "45", "Yes", "Yes", "1"},
                        {"utf8_general_ci", "utf8", "33", "Yes", "Yes", "1"},
                        {"binary", "binary", "63", "Yes", "Yes", "1"}};
    for (const auto& row : rows) {
      if (passes(st.filter, *row[0])) r.rows.push_back(row);
    }
    done(std::move(r));
  }

  void operator()(const sql::ShowCharacterSet& st) {
    ResultSetResult r;
    for (const char* c : {"Charset", "Description", "Default collation", "Maxlen"}) {
      r.columns.push_back(Column{c, ColumnKind::kVarString, {}});
    }
    const Row rows[] = {{"utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", "4"},
                        {"binary", "Binary pseudo charset", "binary", "1"}};
    for (const auto& row : rows) {
      if (passes(st.filter, *row[0])) r.rows.push_back(row);
    }
    done(std::move(r));
  }

  void operator()(const sql::ShowProcesslist&) {
    ResultSetResult r;
    for (const char* c : {"Id", "User", "Host", "db", "Command", "Time", "State", "Info"}) {
      r.columns.push_back(Column{c, ColumnKind::kVarString, {}});
    }
    r.rows.push_back(Row{std::to_string(s.connection_id), s.user, s.host,
                         s.database.empty() ? std::nullopt : std::optional(s.database), "Query",
                         "0", "", "SHOW PROCESSLIST"});
    done(std::move(r));
  }

  void operator()(const sql::Use& st) {
    if (st.schema == ex.settings_.database || lower(st.schema) == "information_schema") {
      s.database = st.schema;
      return done(OkResult{});
    }
    done(err(kErBadDb, "42000", "Unknown database '" + clip_for_message(st.schema) + "'"));
  }

  // Tickets are durable the moment they are issued; only gapless numbers wait for COMMIT.
  // BEGIN inside a transaction commits it first, as in MySQL.
  void operator()(const sql::Begin&) { end_transaction(true, true); }
  void operator()(const sql::Commit&) { end_transaction(true, false); }
  void operator()(const sql::Rollback&) { end_transaction(false, false); }
  void operator()(const sql::Do&) { done(OkResult{}); }
  void operator()(const sql::Kill& st) {
    done(
        err(kErUnknownThreadId, "HY000", "Unknown thread id: " + std::to_string(st.connection_id)));
  }

  void operator()(const sql::Unrecognized& st) {
    switch (st.kind) {
      case sql::UnrecognizedKind::kEmptyQuery:
        return done(err(kErEmptyQuery, "42000", "Query was empty"));
      case sql::UnrecognizedKind::kUnsupported:
        return done(not_supported(st.near));
      case sql::UnrecognizedKind::kSyntaxError:
        break;
    }
    // MySQL prints at most 80 characters of the remainder.
    done(err(kErParse, "42000",
             "You have an error in your SQL syntax; check the manual that corresponds to your "
             "ticketd server version for the right syntax to use near '" +
                 st.near.substr(0, 80) + "' at line " + std::to_string(st.line)));
  }
};

void QueryExecutor::execute(SessionState& session, std::string_view sql, Done done) const {
  constexpr std::size_t kMaxCachedText = 512;
  constexpr std::size_t kMaxCachedStatements = 32;
  if (sql.size() > kMaxCachedText) return execute(session, sql::recognize(sql), std::move(done));
  auto it = session.parsed.find(std::string(sql));
  if (it == session.parsed.end()) {
    if (session.parsed.size() >= kMaxCachedStatements) session.parsed.clear();
    it = session.parsed
             .emplace(std::string(sql), std::make_shared<const sql::Statement>(sql::recognize(sql)))
             .first;
  }
  // Held by a shared_ptr: an inline completion may run the next statement, which may evict.
  const auto statement = it->second;
  execute(session, *statement, std::move(done));
}

void QueryExecutor::execute(SessionState& session, const sql::Statement& statement,
                            Done done) const {
  ++session.queries;
  const bool keeps_warnings = std::holds_alternative<sql::ShowWarnings>(statement) ||
                              std::holds_alternative<sql::ShowErrors>(statement);
  if (!keeps_warnings) session.warnings.clear();
  // SET autocommit=0 leaves the session in a transaction from its next statement on.
  if (!session.autocommit) session.in_transaction = true;
  if (gate_ != nullptr && needs_leader(statement) && !gate_->serving()) {
    return done(to_err(gate_->not_serving_error(false), {}));
  }
  std::visit(Visitor{*this, session, done}, statement);
}

}  // namespace ticketd::mysql
