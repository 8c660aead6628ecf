#include "server/app/backup_commands.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include "server/app/data_dir_lock.h"
#include "server/app/engine.h"
#include "server/backup/restore.h"
#include "server/base/command_line.h"
#include "server/base/exit_code.h"
#include "server/base/log.h"
#include "server/base/parse_int.h"
#include "server/base/utc_time.h"
#include "server/core/clock.h"
#include "server/core/ticket_errc.h"

#ifndef TICKETD_VERSION
#define TICKETD_VERSION "0.0.0"
#endif

namespace ticketd {
namespace fs = std::filesystem;

namespace {

Error io_error(const std::string& what) {
  return Error{StorageErrc::kIo, what + ": " + std::strerror(errno)};
}

DetailedResult<void> fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("open '" + path + "'");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return io_error("fsync '" + path + "'");
  return {};
}

// Written to a temporary name, synced, renamed, and the directory synced: a crash leaves either
// no manifest or a whole one.
DetailedResult<void> write_file_durably(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("create '" + tmp + "'");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const Error e = io_error("write '" + tmp + "'");
      ::close(fd);
      return e;
    }
    done += static_cast<std::size_t>(n);
  }
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return io_error("fsync '" + tmp + "'");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return io_error("rename '" + tmp + "'");
  return fsync_path(fs::path(path).parent_path().string(), true);
}

std::string backup_name(std::int64_t now_ms) {
  std::string name = "backup-" + format_utc_ms(now_ms);
  std::erase(name, ':');
  return name;
}

int usage(std::FILE* out, const std::string& message) {
  std::fprintf(out, "ticketd: %s\n", message.c_str());
  return exit_status(ExitCode::kRefused);
}

constexpr int kFailed = exit_status(ExitCode::kFailed);
constexpr int kRefused = exit_status(ExitCode::kRefused);

// --skip-ahead (auto, peak, N or NAME=N) and --gapless (NAME=N) of restore, into `options`.
std::string take_skip(std::string_view flag, const std::string& value,
                      backup::RestoreOptions& options, std::FILE* out) {
  const auto eq = value.rfind('=');
  const std::string name = eq == std::string::npos ? "" : value.substr(0, eq);
  const auto n = parse_u64(eq == std::string::npos ? value : value.substr(eq + 1));
  const bool gapless = flag == "--gapless";
  if (!gapless && value == "auto") {
    options.skip = backup::SkipAhead{};
  } else if (!gapless && value == "peak") {
    options.skip = backup::SkipAhead{backup::SkipAhead::Mode::kPeak, 0};
    std::fprintf(out,
                 "restore: warning: --skip-ahead peak skips twice the busiest minute's rate "
                 "of the 30 days before the backup: an estimate, not a bound; a burst above "
                 "it since the backup may be issued again\n");
  } else if (!n || (gapless && name.empty())) {
    return std::string(flag) + " expects " + (gapless ? "NAME=N" : "auto, peak, N or NAME=N") +
           ", got '" + value + "'";
  } else if (gapless) {
    options.gapless_last_used[name] = *n;
  } else if (name.empty()) {
    options.skip = backup::SkipAhead{backup::SkipAhead::Mode::kValues, *n};
  } else {
    options.skip_by_name[name] = *n;
  }
  return {};
}

}  // namespace

DetailedResult<backup::TakenBackup> write_backup(RocksDbCounterStore& store,
                                                 const std::string& target,
                                                 const BackupContext& context) {
  std::error_code ec;
  if (fs::exists(target, ec)) {
    return Error{ToolErrc::kAlreadyExists, "backup target '" + target + "' already exists"};
  }
  const std::string partial = target + ".partial";
  fs::remove_all(partial, ec);  // a backup a crash cut short: never a usable store
  auto position = store.checkpoint(partial);
  if (!position) return position.error();
  auto fail = [&](Error e) -> DetailedResult<backup::TakenBackup> {
    std::error_code ignored;
    fs::remove_all(partial, ignored);
    return e;
  };
  // Marked as a backup at once (an empty manifest, replaced by the real one below): a copy a
  // crash cut short is refused as a data directory like a finished backup, and by restore as
  // unreadable, never served. (Before this line it holds no durable mark: refused as well.)
  if (auto r = write_file_durably(partial + "/" + std::string(backup::kManifestFile), ""); !r) {
    return fail(r.error());
  }
  backup::BackupManifest manifest;
  {
    auto copy = RocksDbCounterStore::open_read_only(partial);
    if (!copy) return fail(copy.error());
    auto described = backup::describe_store(**copy, context.now_ms, context.served);
    if (!described) return fail(described.error());
    manifest = std::move(*described);
  }
  auto stamp = RocksDbCounterStore::stamp_of(partial);
  if (!stamp) return fail(stamp.error());
  manifest.store_identity = stamp->identity;
  manifest.store_position = stamp->position;
  manifest.id = fs::path(target).filename().string();
  manifest.taken_at_ms = context.now_ms;
  manifest.ticketd_version = TICKETD_VERSION;
  manifest.source = context.source;
  manifest.online = context.online;
  if (auto r = write_file_durably(partial + "/" + std::string(backup::kManifestFile),
                                  backup::encode_manifest(manifest));
      !r) {
    return fail(r.error());
  }
  if (::rename(partial.c_str(), target.c_str()) != 0) {
    return fail(io_error("rename '" + partial + "' to '" + target + "'"));
  }
  if (auto r = fsync_path(fs::path(target).parent_path().string(), true); !r) return r.error();
  return backup::TakenBackup{target, std::move(manifest)};
}

int backup_command(int argc, char** argv, std::FILE* out) {
  std::string data_dir;
  std::string to;
  const CommandOption options[] = {text_option("--data-dir", data_dir), text_option("--to", to)};
  if (auto problem = parse_command_line(std::span(argv + 2, argv + argc), options);
      !problem.empty()) {
    return usage(out, "backup: " + problem);
  }
  if (data_dir.empty() || to.empty()) return usage(out, "backup needs --data-dir DIR --to OUT");
  auto lock = DataDirLock::acquire(data_dir);
  if (!lock) {
    std::fprintf(out, "backup: %s (stop ticketd, or use POST /v1/admin/backup on it)\n",
                 lock.error().message.c_str());
    return kFailed;
  }
  auto store = RocksDbCounterStore::open(data_dir);
  if (!store) {
    std::fprintf(out, "backup: %s\n", store.error().message.c_str());
    return kFailed;
  }
  SystemClock clock;
  BackupContext context{clock.now_unix_ms(), false, fs::absolute(data_dir).string(), {}};
  auto taken = write_backup(**store, fs::absolute(to).lexically_normal().string(), context);
  if (!taken) {
    std::fprintf(out, "backup: %s\n", taken.error().message.c_str());
    return kFailed;
  }
  std::fprintf(out, "backup: %s (%zu sequences)\n", taken->path.c_str(),
               taken->manifest.sequences.size());
  return exit_status(ExitCode::kOk);
}

namespace {

// What `ticketd restore` was asked to do.
struct RestoreArgs {
  std::string from;
  std::string data_dir;
  std::string external_mark;
  backup::RestoreOptions options;
};

// The words after `restore`; nullopt when they are usable, else the exit status (said why).
std::optional<int> parse_restore_args(int argc, char** argv, std::FILE* out, RestoreArgs& a) {
  bool force = false;
  const auto skip = [&](std::string_view flag) {
    return CommandOption{flag, true, [&a, out, flag](const std::string& value) {
                           return take_skip(flag, value, a.options, out);
                         }};
  };
  const CommandOption rows[] = {
      switch_option("--force", force),
      text_option("--from", a.from),
      text_option("--data-dir", a.data_dir),
      text_option("--external-mark", a.external_mark),
      skip("--skip-ahead"),
      skip("--gapless"),
  };
  if (auto problem = parse_command_line(std::span(argv + 2, argv + argc), rows); !problem.empty()) {
    return usage(out, "restore: " + problem);
  }
  if (a.from.empty() || a.data_dir.empty()) {
    return usage(out, "restore needs --from BACKUP --data-dir DIR");
  }
  // A skip of 0 resumes at the backup's ceilings: every value issued since is issued again
  // unless nothing was. Only on the operator's explicit word.
  const auto& o = a.options;
  const bool zero_skip = (o.skip.mode == backup::SkipAhead::Mode::kValues && o.skip.values == 0) ||
                         std::any_of(o.skip_by_name.begin(), o.skip_by_name.end(),
                                     [](const auto& entry) { return entry.second == 0; });
  if (zero_skip && !force) {
    return usage(out,
                 "restore: --skip-ahead 0 resumes at the backup's ceilings and issues again every "
                 "value handed out since the backup; add --force if you know none was");
  }
  return std::nullopt;
}

// The backup's manifest, checked to describe the checkpoint beside it; else the exit status.
std::variant<backup::BackupManifest, int> read_backup_manifest(const std::string& from,
                                                               std::FILE* out) {
  const std::string manifest_path = from + "/" + std::string(backup::kManifestFile);
  std::string text;
  if (std::FILE* f = std::fopen(manifest_path.c_str(), "rb"); f != nullptr) {
    char buf[65536];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  } else {
    std::fprintf(out, "restore: '%s' is not a ticketd backup (no %s)\n", from.c_str(),
                 std::string(backup::kManifestFile).c_str());
    return kRefused;
  }
  auto manifest = backup::decode_manifest(text);
  if (!manifest) {
    std::fprintf(out, "restore: %s: %s\n", manifest_path.c_str(), manifest.error().message.c_str());
    return kFailed;
  }
  // The manifest must describe this very checkpoint: its store and the position it reaches.
  if (manifest->format < 2) {
    std::fprintf(out,
                 "restore: %s is of format 1 (an earlier release): not bound to its checkpoint, "
                 "it is checked against the checkpoint's own keys\n",
                 manifest_path.c_str());
    return std::move(*manifest);
  }
  auto stamp = RocksDbCounterStore::stamp_of(from);
  if (!stamp) {
    std::fprintf(out, "restore: %s\n", stamp.error().message.c_str());
    return kFailed;
  }
  if (stamp->identity != manifest->store_identity || stamp->position != manifest->store_position) {
    std::fprintf(out,
                 "restore: refused, nothing restored: %s describes another checkpoint (store "
                 "%s at write %llu; this one is store %s at write %llu)\n",
                 manifest_path.c_str(), manifest->store_identity.c_str(),
                 static_cast<unsigned long long>(manifest->store_position), stamp->identity.c_str(),
                 static_cast<unsigned long long>(stamp->position));
    return kRefused;
  }
  return std::move(*manifest);
}

// Copies the checkpoint's store files (not the manifest, a lock file or a mark) into
// `data_dir`, each synced, and the directory; false when a copy or sync failed.
bool copy_store_files(const std::string& from, const std::string& data_dir, std::error_code& ec) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(from)) {
    const std::string name = e.path().filename().string();
    // The store's files only: not the manifest, nor a lock file a refused start left behind.
    if (e.is_regular_file() && name != backup::kManifestFile && name != "ticketd.lock" &&
        name != DurableMark::kFileName) {
      files.push_back(e.path());
    }
  }
  ec.clear();
  for (const auto& file : files) {
    const std::string dest = data_dir + "/" + file.filename().string();
    std::error_code copy_ec;
    if (!fs::copy_file(file, dest, copy_ec) || !fsync_path(dest, false)) {
      ec = copy_ec ? copy_ec : std::make_error_code(std::errc::io_error);
      return false;
    }
  }
  return static_cast<bool>(fsync_path(data_dir, true));
}

// Raises the copied store's ceilings by the plan and adopts the external mark; the exit status.
// On failure the store is closed (reset) and the caller undoes the copy.
int apply_restore(std::unique_ptr<RocksDbCounterStore>& store,
                  const backup::BackupManifest& manifest, const RestoreArgs& a, std::FILE* out) {
  // Every sequence, kind, ceiling, committed number and tombstone comes from the checkpoint's
  // own keys; the manifest only has to agree with them.
  auto derived = backup::describe_store(*store, manifest.taken_at_ms);
  auto believed = derived ? backup::reconcile(manifest, *derived)
                          : DetailedResult<backup::BackupManifest>(derived.error());
  if (!believed) {
    std::fprintf(out, "restore: refused, nothing restored: %s\n", believed.error().message.c_str());
    store.reset();
    return exit_status(exit_code(believed.error().code));
  }
  auto plan = backup::plan_restore(*believed, *store, a.options);
  if (!plan) {
    std::fprintf(out, "restore: refused, nothing restored:\n%s\n", plan.error().message.c_str());
    store.reset();
    return exit_status(exit_code(plan.error().code));
  }
  if (auto r = store->commit(plan->mutations); !r) {
    std::fprintf(out, "restore: writing the restored ceilings failed: %s\n",
                 r.error().message.c_str());
    store.reset();
    return kFailed;
  }
  if (!a.external_mark.empty()) {
    if (auto m = store->adopt_external_mark(a.external_mark); !m) {
      std::fprintf(out, "restore: the external mark %s: %s\n", a.external_mark.c_str(),
                   m.error().message.c_str());
      store.reset();
      return kFailed;
    }
  }
  for (const auto& step : plan->steps) {
    std::fprintf(out, "restore: %s: %s\n", step.sequence.c_str(), step.detail.c_str());
    log::audit(step.event,
               "'" + step.sequence + "' from backup " + manifest.id + ": " + step.detail,
               {{"sequence", step.sequence}, {"backup", manifest.id}});
  }
  if (!a.external_mark.empty()) {
    std::fprintf(out, "restore: the external mark %s now belongs to %s\n", a.external_mark.c_str(),
                 a.data_dir.c_str());
  }
  std::fprintf(out, "restore: done: %zu sequences; check it with `ticketd verify --data-dir %s`\n",
               plan->steps.size(), a.data_dir.c_str());
  return exit_status(ExitCode::kOk);
}

}  // namespace

int restore_command(int argc, char** argv, std::FILE* out) {
  RestoreArgs a;
  if (auto refused = parse_restore_args(argc, argv, out, a)) return *refused;
  auto read = read_backup_manifest(a.from, out);
  if (const int* status = std::get_if<int>(&read)) return *status;
  const auto& manifest = std::get<backup::BackupManifest>(read);
  const std::string& data_dir = a.data_dir;
  std::error_code ec;
  const bool existed = fs::exists(data_dir, ec);
  if (existed && !fs::is_empty(data_dir, ec)) {
    std::fprintf(out,
                 "restore: refusing to restore into '%s': it is not empty (restore into a new "
                 "directory, then point data_dir at it)\n",
                 data_dir.c_str());
    return kRefused;
  }
  fs::create_directories(data_dir, ec);
  if (ec) {
    std::fprintf(out, "restore: cannot create '%s': %s\n", data_dir.c_str(), ec.message().c_str());
    return kFailed;
  }
  // Leaves the directory as it was found when the restore does not finish.
  auto undo = [&] {
    std::error_code ignored;
    if (existed) {
      for (const auto& e : fs::directory_iterator(data_dir, ignored)) fs::remove_all(e, ignored);
    } else {
      fs::remove_all(data_dir, ignored);
    }
  };
  int status = kFailed;
  {
    auto lock = DataDirLock::acquire(data_dir);
    if (!lock) {
      std::fprintf(out, "restore: %s\n", lock.error().message.c_str());
      return kFailed;
    }
    if (!copy_store_files(a.from, data_dir, ec)) {
      std::fprintf(out, "restore: copying '%s' failed: %s\n", a.from.c_str(), ec.message().c_str());
      undo();
      return kFailed;
    }
    SystemClock clock;
    a.options.now_ms = clock.now_unix_ms();
    // The copied store has no mark yet (the backup's files only): restore gives it its first.
    auto store = RocksDbCounterStore::open(data_dir, StoreMarks{MarkPolicy::kAdopt, {}});
    if (!store) {
      std::fprintf(out, "restore: %s\n", store.error().message.c_str());
      undo();
      return kFailed;
    }
    std::fprintf(out, "restore: %s (taken %s, %.1f s ago) into %s\n", a.from.c_str(),
                 format_utc_ms(manifest.taken_at_ms).c_str(),
                 static_cast<double>(a.options.now_ms - manifest.taken_at_ms) / 1000.0,
                 data_dir.c_str());
    status = apply_restore(*store, manifest, a, out);
  }
  if (status != exit_status(ExitCode::kOk)) undo();
  return status;
}

OnlineBackups::OnlineBackups(Engine& engine, RocksDbCounterStore& store, std::string dir,
                             std::string data_dir)
    : engine_(engine), store_(store), dir_(std::move(dir)), data_dir_(std::move(data_dir)) {
  // Backups a crash cut short (a kill during a checkpoint) are never finished later: removed.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("backup-") || !name.ends_with(".partial")) continue;
    std::error_code removed;
    fs::remove_all(e.path(), removed);
    if (removed) {
      log::warn("backup: cannot remove the unfinished backup '" + e.path().string() +
                "': " + removed.message());
    } else {
      log::warn("backup: removed the unfinished backup '" + e.path().string() +
                "' (a backup interrupted by a crash)");
    }
  }
}

void OnlineBackups::take(backup::BackupCallback done) {
  engine_.store_reads().after(std::chrono::milliseconds(0),
                              [this, done = std::move(done)] { done(take_now()); });
}

DetailedResult<backup::TakenBackup> OnlineBackups::take_now() {
  std::lock_guard lock(mutex_);
  // The last seconds' rate into the history, so the backup's peaks are current.
  if (auto r = sample_and_wait(engine_.rates()); !r) {
    log::warn("backup: the issue rates could not be written (" + r.error().message +
              "); the backup holds the previous minute's");
  }
  BackupContext context;
  context.now_ms = engine_.clock().now_unix_ms();
  context.online = true;
  context.source = data_dir_;
  for (const auto& d : engine_.service().describe_all()) context.served.push_back({d.spec});
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error{StorageErrc::kIo, "backup.dir '" + dir_ + "': " + ec.message()};
  std::string target = dir_ + "/" + backup_name(context.now_ms);
  for (int n = 2; fs::exists(target, ec); ++n) {
    target = dir_ + "/" + backup_name(context.now_ms) + "-" + std::to_string(n);
  }
  auto taken = write_backup(store_, target, context);
  if (taken) {
    log::audit("backup_taken", taken->path + ": " +
                                   std::to_string(taken->manifest.sequences.size()) + " sequences");
  }
  return taken;
}

}  // namespace ticketd
