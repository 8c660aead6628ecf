#include "server/migrate/import_command.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/app/data_dir_lock.h"
#include "server/base/command_line.h"
#include "server/base/exit_code.h"
#include "server/base/log.h"
#include "server/base/parse_int.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"
#include "server/core/timer_queue.h"
#include "server/migrate/mysql_import.h"
#include "server/migrate/mysql_source.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {
namespace {

using migrate::ImportAction;
using migrate::ImportPlan;
using migrate::PlannedSequence;

constexpr const char* kImportUsage =
    "usage: ticketd import --from mysql://USER[:PASS]@HOST[:PORT]/DB [--tables T1,T2]\n"
    "                      [--margin N] [--visible-tables-only] [--dry-run] --data-dir DIR\n"
    "\n"
    "  --from URL     the old MySQL/MariaDB ticket server; without :PASS the password is\n"
    "                 taken from the environment variable MYSQL_PWD (else none)\n"
    "  --tables LIST  only these tables and sequences (comma-separated); default: all of DB\n"
    "  --margin N     values left unused above each old next value (default 1000)\n"
    "  --visible-tables-only  import the tables the user can see even though its grants do\n"
    "                 not cover all of DB (without it such an import is refused: tables it\n"
    "                 was not granted are not listed to it, and would be left behind)\n"
    "  --dry-run      print the plan, open and write nothing (--data-dir not needed)\n"
    "  --data-dir DIR the stopped ticketd's data dir (locked while importing)\n";

struct Options {
  std::string from;
  std::vector<std::string> tables;
  std::uint64_t margin = migrate::kDefaultMargin;
  bool dry_run = false;
  bool visible_only = false;
  std::string data_dir;
};

std::vector<std::string> split_names(std::string_view text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    auto end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

/// Parses argv[2..]; an error message, or empty.
std::string parse_options(int argc, char** argv, Options& o) {
  const CommandOption options[] = {
      switch_option("--dry-run", o.dry_run),
      switch_option("--visible-tables-only", o.visible_only),
      text_option("--from", o.from),
      text_option("--data-dir", o.data_dir),
      {"--tables", true,
       [&o](const std::string& v) {
         o.tables = split_names(v);
         for (const auto& t : o.tables) {
           if (t.empty()) return "--tables: an empty name in '" + v + "'";
         }
         return std::string();
       }},
      {"--margin", true,
       [&o](const std::string& v) {
         auto m = parse_u64(v);
         if (!m || *m > migrate::kMaxMargin) {
           return "--margin: expected an integer 0.." + std::to_string(migrate::kMaxMargin);
         }
         o.margin = *m;
         return std::string();
       }},
  };
  // Never echo an argument that could be the URL with its password.
  const auto unknown = [](std::string_view arg) {
    return arg.starts_with("mysql://")
               ? std::string("unexpected URL argument (give it with --from)")
               : "unknown argument '" + std::string(arg) + "'";
  };
  if (auto problem = parse_command_line(std::span(argv + 2, argv + argc), options, unknown);
      !problem.empty()) {
    return problem;
  }
  if (o.from.empty()) return "--from mysql://USER[:PASS]@HOST[:PORT]/DB is required";
  if (o.data_dir.empty() && !o.dry_run) return "--data-dir DIR is required (or --dry-run)";
  return {};
}

std::string grid_text(const SequenceSpec& s) {
  return std::to_string(s.increment) + "/" + std::to_string(s.offset);
}

void print_line(std::FILE* out, const PlannedSequence& p, std::uint64_t first,
                std::string_view status) {
  std::fprintf(
      out, "%-24s %-14s old_next %-20llu grid %-11s first %-20llu %.*s\n", p.spec.name.c_str(),
      p.source == migrate::SourceKind::kSequence ? "sequence" : "auto_increment",
      static_cast<unsigned long long>(p.old_next), grid_text(p.spec).c_str(),
      static_cast<unsigned long long>(first), static_cast<int>(status.size()), status.data());
  if (!p.note.empty()) std::fprintf(out, "%-24s note: %s\n", "", p.note.c_str());
}

/// Blanks the password of every URL argument in place (o.from holds a copy), so that
/// /proc/PID/cmdline and `ps` stop showing it once the command has started; the shell history
/// still has it: MYSQL_PWD is the better way.
void hide_password(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (auto span = migrate::password_span(argv[i])) {
      std::fill_n(argv[i] + span->offset, span->length, 'x');
    }
  }
}

/// The store side of an import: the locked data dir and the engine on it, torn down in order.
struct Target {
  std::optional<DataDirLock> lock;
  std::unique_ptr<RocksDbCounterStore> store;
  SystemClock clock;
  std::unique_ptr<TimerQueue> background;
  std::unique_ptr<GroupCommitter> committer;
  std::unique_ptr<TicketService> service;

  ~Target() {
    service.reset();
    if (committer) committer->stop();
    committer.reset();
    if (background) background->stop();
  }
};

template <class T, class Start>
T wait_for(Start start) {
  std::promise<T> p;
  auto f = p.get_future();
  start([&p](T r) { p.set_value(std::move(r)); });
  return f.get();
}

std::optional<migrate::ExistingSequence> existing(const TicketService& service,
                                                  const std::string& name) {
  if (auto seq = service.find(name)) {
    const auto info = seq->info();
    return migrate::ExistingSequence{SequenceKind::kTicket,
                                     {info.spec.increment, info.spec.offset},
                                     info.next_value,
                                     info.exhausted};
  }
  if (auto kind = service.kind_of(name)) return migrate::ExistingSequence{*kind, {}, 0, false};
  return std::nullopt;
}

int apply(const ImportPlan& plan, const std::string& data_dir, std::FILE* out, std::FILE* err,
          int& refused) {
  Target t;
  auto lock = DataDirLock::acquire(data_dir);
  if (!lock) {
    std::fprintf(err, "ticketd import: %s (stop ticketd before importing)\n",
                 lock.error().message.c_str());
    return exit_status(ExitCode::kFailed);
  }
  t.lock.emplace(std::move(*lock));
  auto store = RocksDbCounterStore::open(data_dir);
  if (!store) {
    std::fprintf(err, "ticketd import: %s\n", store.error().message.c_str());
    return exit_status(ExitCode::kFailed);
  }
  t.store = std::move(*store);
  t.background = std::make_unique<TimerQueue>(t.clock);
  t.committer = std::make_unique<GroupCommitter>(*t.store);
  t.service = std::make_unique<TicketService>(*t.store, *t.committer);
  // Each create and advance is one line of the audit trail, as when a front end makes it.
  t.service->set_audit([](std::string_view event, std::string_view detail, log::Fields fields) {
    log::audit(event, detail, fields);
  });
  // Gapless and UUIDv7 sequences created at run time load only with a clock and a thread.
  t.service->enable_runtime_kinds(RuntimeKinds{&t.clock, t.background.get(), nullptr});
  if (auto r = t.service->load(); !r) {
    std::fprintf(err, "ticketd import: loading %s: %s\n", data_dir.c_str(),
                 r.error().message.c_str());
    return exit_status(ExitCode::kFailed);
  }
  for (const auto& p : plan.sequences) {
    const auto decision = migrate::decide(p, existing(*t.service, p.spec.name));
    switch (decision.action) {
      case ImportAction::kCreate: {
        auto r = wait_for<DetailedResult<void>>(
            [&](auto done) { t.service->create(p.spec, CreateOptions{}, std::move(done)); });
        if (!r) {
          std::fprintf(err, "ticketd import: creating '%s': %s\n", p.spec.name.c_str(),
                       r.error().message.c_str());
          return exit_status(ExitCode::kFailed);
        }
        break;
      }
      case ImportAction::kAdvance: {
        auto r = wait_for<DetailedResult<Block>>(
            [&](auto done) { t.service->advance_to(p.spec.name, p.spec.start, std::move(done)); });
        if (!r) {
          std::fprintf(err, "ticketd import: advancing '%s': %s\n", p.spec.name.c_str(),
                       r.error().message.c_str());
          return exit_status(ExitCode::kFailed);
        }
        break;
      }
      case ImportAction::kUnchanged:
        break;
      case ImportAction::kRefuse:
        print_line(out, p, p.spec.start, "refused: " + decision.reason);
        std::fprintf(err, "ticketd import: '%s' refused: %s\n", p.spec.name.c_str(),
                     decision.reason.c_str());
        ++refused;
        continue;
    }
    // What the sequence hands out next, read back (a tombstone may have put it higher).
    const auto now = existing(*t.service, p.spec.name);
    print_line(out, p, now ? now->next_value : p.spec.start, migrate::action_name(decision.action));
  }
  return exit_status(ExitCode::kOk);
}

}  // namespace

int import_command(int argc, char** argv, std::FILE* out, std::FILE* err) {
  if (has_word(std::span(argv + 2, argv + argc), {"--help", "-h"})) {
    std::fputs(kImportUsage, out);
    return exit_status(ExitCode::kOk);
  }
  Options o;
  const auto problem = parse_options(argc, argv, o);
  hide_password(argc, argv);
  if (!problem.empty()) {
    std::fprintf(err, "ticketd import: %s\n%s", problem.c_str(), kImportUsage);
    return exit_status(ExitCode::kRefused);
  }
  auto url = migrate::parse_mysql_url(o.from);
  if (!url) {
    std::fprintf(err, "ticketd import: %s\n", url.error().message.c_str());
    return exit_status(ExitCode::kRefused);
  }
  if (!url->password) {
    if (const char* pwd = std::getenv("MYSQL_PWD")) url->password = pwd;
  }
  auto source = migrate::read_source(*url, o.tables);
  if (!source) {
    std::fprintf(err, "ticketd import: %s\n", source.error().message.c_str());
    return exit_status(ExitCode::kFailed);
  }
  if (source->partial_view && o.tables.empty() && !o.visible_only) {
    // Tables the user was not granted are not listed to it: importing what it sees would leave
    // them behind without a word, and their apps would start again at 1 on ticketd.
    std::fprintf(err,
                 "ticketd import: refused, nothing written: user '%s' has no privilege on all of "
                 "'%s' (SHOW GRANTS names no %s.* or *.*), so information_schema lists only the "
                 "%zu tables and %zu sequences it was granted and any other is invisible to it. "
                 "GRANT SELECT ON %s.* to it, name the tables with --tables, or pass "
                 "--visible-tables-only to import just these\n",
                 url->user.c_str(), url->database.c_str(), url->database.c_str(),
                 source->tables.size(), source->sequences.size(), url->database.c_str());
    return exit_status(ExitCode::kFailed);
  }
  const auto plan = migrate::plan_import(*source, o.margin);
  const auto grid =
      migrate::server_grid(source->auto_increment_increment, source->auto_increment_offset);
  std::fprintf(out,
               "import from %s: auto_increment_increment %llu, auto_increment_offset %llu "
               "(grid %llu/%llu), margin %llu%s\n",
               migrate::masked(*url).c_str(),
               static_cast<unsigned long long>(source->auto_increment_increment),
               static_cast<unsigned long long>(source->auto_increment_offset),
               static_cast<unsigned long long>(grid.increment),
               static_cast<unsigned long long>(grid.offset),
               static_cast<unsigned long long>(o.margin), o.dry_run ? ", dry run" : "");
  int refused = 0;
  if (o.dry_run) {
    for (const auto& p : plan.sequences) print_line(out, p, p.spec.start, "planned");
  } else if (int rc = apply(plan, o.data_dir, out, err, refused); rc != 0) {
    return rc;
  }
  for (const auto& s : plan.skipped) {
    std::fprintf(out, "%-24s skipped: %s\n", s.name.c_str(), s.reason.c_str());
  }
  std::fprintf(out, "import: %zu sequences%s, %d refused, %zu skipped\n",
               plan.sequences.size() - static_cast<std::size_t>(refused),
               o.dry_run ? " planned (nothing written)" : " in place", refused,
               plan.skipped.size());
  for (const auto& name : source->missing) {
    std::fprintf(
        err, "ticketd import: --tables: '%s' is not a table or sequence of '%s'%s\n", name.c_str(),
        url->database.c_str(),
        source->partial_view ? " (or one the user was not granted: it cannot see it)" : "");
  }
  return exit_status(refused > 0 || !source->missing.empty() ? ExitCode::kFailed : ExitCode::kOk);
}

}  // namespace ticketd
