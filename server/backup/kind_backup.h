// A sequence kind's part of backup and restore, one implementation per kind (ticket_backup.cpp,
// gapless_backup.cpp, snowflake_backup.cpp, ulid_backup.cpp; a kind with nothing of its own
// restores as it is): how its stored keys read into a manifest entry, its fields in the manifest,
// how the manifest's entry is checked against the checkpoint's, and its restore rule.
// describe_store, the manifest codec, reconcile and plan_restore iterate over these and never
// switch on a kind.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/backup/manifest.h"
#include "server/backup/restore.h"
#include "server/base/result.h"
#include "storage/counter_store.h"

namespace ticketd::backup {

/// The manifest's entries while describe_store builds them, by name.
class ManifestEntries {
 public:
  /// The entry of `name`, made with `kind` when there is none yet (an entry keeps the kind it
  /// was made with: the first reader of a name decides).
  BackedUpSequence& entry(const std::string& name, SequenceKind kind);
  [[nodiscard]] BackedUpSequence* find(const std::string& name);
  [[nodiscard]] bool contains(const std::string& name) const { return by_name_.contains(name); }
  [[nodiscard]] std::vector<BackedUpSequence> take();

 private:
  std::map<std::string, BackedUpSequence> by_name_;
};

/// Reports one field where the manifest and the checkpoint disagree: (field, the checkpoint's
/// value, the manifest's).
using Differ = std::function<void(std::string_view, const std::string&, const std::string&)>;

/// A restore in progress: what every kind's rule reads and where it writes its steps.
class RestoreRun {
 public:
  RestoreRun(CounterStore& restored, const RestoreOptions& options, std::int64_t elapsed_ms,
             RestorePlan& plan, std::vector<std::string>& refusals)
      : options(options),
        elapsed_ms(elapsed_ms),
        plan(plan),
        refusals(refusals),
        restored_(restored) {}

  /// The restored copy's keys under `prefix`, read once per restore.
  [[nodiscard]] DetailedResult<const std::map<std::string, std::string>*> stored(
      std::string_view prefix);

  const RestoreOptions& options;
  const std::int64_t elapsed_ms;  // since the backup was taken, never negative
  RestorePlan& plan;
  std::vector<std::string>& refusals;

 private:
  CounterStore& restored_;
  std::map<std::string, std::map<std::string, std::string>, std::less<>> scans_;
};

/// What `ticketd verify` found of one kind in a stopped server's store.
struct VerifyReport {
  std::vector<std::string> lines;     // one summary line per sequence
  std::vector<std::string> problems;  // every stored invariant that does not hold
  std::size_t sequences = 0;
};

class KindBackup {
 public:
  virtual ~KindBackup() = default;
  [[nodiscard]] virtual SequenceKind kind() const = 0;

  // describe_store reads a store in three passes, every kind in each: the kinds' records
  // (before the definitions of kinds created at run time), their state (after them), and their
  // history (after the sequences that are served with nothing stored).
  [[nodiscard]] virtual DetailedResult<void> read_records(CounterStore& /*store*/,
                                                          ManifestEntries& /*entries*/) const {
    return {};
  }
  [[nodiscard]] virtual DetailedResult<void> read_state(CounterStore& /*store*/,
                                                        ManifestEntries& /*entries*/) const {
    return {};
  }
  [[nodiscard]] virtual DetailedResult<void> read_history(CounterStore& /*store*/,
                                                          ManifestEntries& /*entries*/,
                                                          std::int64_t /*now_ms*/) const {
    return {};
  }

  /// Its fields of the manifest's entry, after name, kind, dropped and the grid.
  virtual void to_json(const BackedUpSequence& /*s*/, boost::json::object& /*o*/) const {}
  /// Reads them back: a message naming what is missing, or nullopt.
  [[nodiscard]] virtual std::optional<std::string> from_json(const boost::json::object& /*o*/,
                                                             BackedUpSequence& /*s*/) const {
    return std::nullopt;
  }
  /// Its fields where the checkpoint's entry `stored` and the manifest's `claimed` differ.
  virtual void compare(const BackedUpSequence& /*stored*/, const BackedUpSequence& /*claimed*/,
                       const Differ& /*differ*/) const {}
  /// A manifest may list it although the checkpoint holds nothing of it (served, never stored):
  /// only when its restore needs no stored number.
  [[nodiscard]] virtual bool may_be_unstored(const BackedUpSequence& claimed) const {
    return !claimed.tombstone;
  }

  /// Its part of `ticketd verify` (server/app/verify.cpp): a line per sequence it stores and
  /// every problem with its keys. Storage errors are returned as they are.
  [[nodiscard]] virtual DetailedResult<void> verify(CounterStore& /*store*/,
                                                    VerifyReport& /*report*/) const {
    return {};
  }

  /// Its restore rule: mutations and a step in `run.plan`, or a refusal in `run.refusals`.
  /// Kinds based on time restore as they are (a worker ID's high-water mark still holds).
  [[nodiscard]] virtual DetailedResult<void> plan(const BackedUpSequence& s, RestoreRun& run) const;
};

/// The backup part of `kind`: one registration row per kind (kind_backup.cpp).
[[nodiscard]] const KindBackup& kind_backup(SequenceKind kind);

[[nodiscard]] const KindBackup& ticket_backup();
[[nodiscard]] const KindBackup& gapless_backup();
[[nodiscard]] const KindBackup& snowflake_backup();
[[nodiscard]] const KindBackup& ulid_backup();

/// The error of a store whose keys do not read: kCorruption, "backup: " + what.
[[nodiscard]] Error backup_corruption(const std::string& what);
/// `v` with one decimal ("12.5"), as the restore's steps print seconds and rates.
[[nodiscard]] std::string one_decimal(double v);
/// The sequence a time kind's mark key "<prefix><name>/<suffix>" belongs to, or nullopt for
/// another key.
[[nodiscard]] std::optional<std::string_view> mark_owner(std::string_view key,
                                                         std::string_view prefix,
                                                         std::string_view suffix);
/// verify() of a time kind: each of its marks under `prefix` ("<prefix><name>/<suffix>") decodes
/// as a high-water mark record; a line per mark.
[[nodiscard]] DetailedResult<void> verify_marks(CounterStore& store, std::string_view kind,
                                                std::string_view prefix, std::string_view suffix,
                                                VerifyReport& report);

/// Integers above 2^53 lose precision in many JSON readers: the manifest writes them as
/// decimal strings and reads either form.
[[nodiscard]] boost::json::value manifest_u64(std::uint64_t v);
[[nodiscard]] std::optional<std::uint64_t> read_manifest_u64(const boost::json::object& o,
                                                             std::string_view key);

}  // namespace ticketd::backup
