#include "server/backup/manifest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <map>
#include <utility>

#include "server/backup/kind_backup.h"
#include "server/base/exit_code.h"
#include "server/base/hex.h"
#include "server/base/parse_int.h"
#include "server/base/utc_time.h"
#include "server/core/gapless_sequence.h"
#include "server/core/issue_rate.h"
#include "server/core/sequence_definition.h"
#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"
#include "server/core/worker_pool_service.h"

namespace ticketd::backup {
namespace json = boost::json;

namespace {

// A counter's grid, as its record, definition or config gives it.
void set_grid(BackedUpSequence& s, const SequenceSpec& spec) {
  s.grid_known = true;
  s.start = spec.start;
  s.increment = spec.increment;
  s.offset = spec.offset;
  s.max_value = spec.max_value;
}

void pretty(const json::value& v, std::string& out, int indent) {
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  const std::string inner(static_cast<std::size_t>(indent + 1) * 2, ' ');
  if (v.is_object() && !v.as_object().empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& [k, item] : v.as_object()) {
      if (!first) out += ",\n";
      first = false;
      out += inner + json::serialize(json::value(k)) + ": ";
      pretty(item, out, indent + 1);
    }
    out += "\n" + pad + "}";
  } else if (v.is_array() && !v.as_array().empty()) {
    out += "[\n";
    bool first = true;
    for (const auto& item : v.as_array()) {
      if (!first) out += ",\n";
      first = false;
      out += inner;
      // Each sequence on one line: a backup of hundreds of sequences stays greppable.
      out += json::serialize(item);
    }
    out += "\n" + pad + "]";
  } else {
    out += json::serialize(v);
  }
}

json::object sequence_json(const BackedUpSequence& s) {
  json::object o;
  o["name"] = s.name;
  o["kind"] = kind_name(s.kind);
  if (s.tombstone) o["dropped"] = true;
  if (s.grid_known) {
    o["start"] = manifest_u64(s.start);
    o["increment"] = manifest_u64(s.increment);
    o["offset"] = manifest_u64(s.offset);
    if (s.max_value != 0) o["max_value"] = manifest_u64(s.max_value);
    if (s.cache != 0) o["cache"] = manifest_u64(s.cache);
  }
  kind_backup(s.kind).to_json(s, o);
  return o;
}

Error bad(std::string_view what) {
  return Error{StorageErrc::kCorruption, "backup manifest: " + std::string(what)};
}

DetailedResult<BackedUpSequence> decode_sequence(const json::value& v) {
  if (!v.is_object()) return bad("a sequence is not an object");
  const auto& o = v.as_object();
  BackedUpSequence s;
  const auto* name = o.if_contains("name");
  const auto* kind = o.if_contains("kind");
  if (name == nullptr || !name->is_string() || kind == nullptr || !kind->is_string()) {
    return bad("a sequence without name or kind");
  }
  s.name = std::string(name->as_string());
  const auto parsed = parse_kind(std::string_view(kind->as_string()));
  if (!parsed) return bad("sequence '" + s.name + "': unknown kind");
  s.kind = *parsed;
  if (const auto* d = o.if_contains("dropped"); d != nullptr && d->is_bool())
    s.tombstone = d->as_bool();
  if (auto start = read_manifest_u64(o, "start")) {
    s.grid_known = true;
    s.start = *start;
    s.increment = read_manifest_u64(o, "increment").value_or(1);
    s.offset = read_manifest_u64(o, "offset").value_or(1);
    s.max_value = read_manifest_u64(o, "max_value").value_or(0);
    s.cache = read_manifest_u64(o, "cache").value_or(0);
    if (s.increment == 0) return bad("sequence '" + s.name + "': increment 0");
  }
  if (auto missing = kind_backup(s.kind).from_json(o, s)) return bad(*missing);
  return s;
}

}  // namespace

namespace {

// The manifest's fields, in order, without "path" and "checksum".
json::object manifest_object(const BackupManifest& m) {
  json::object o;
  o["format"] = m.format;
  o["id"] = m.id;
  o["taken_at"] = format_utc_ms(m.taken_at_ms);
  o["taken_at_ms"] = m.taken_at_ms;
  o["ticketd_version"] = m.ticketd_version;
  o["source"] = m.source;
  o["online"] = m.online;
  if (m.format >= 2) {
    o["store_identity"] = m.store_identity;
    o["store_position"] = manifest_u64(m.store_position);
  }
  json::array sequences;
  for (const auto& s : m.sequences) sequences.push_back(sequence_json(s));
  o["sequences"] = std::move(sequences);
  o["worker_records"] = m.worker_records;
  return o;
}

std::string pretty_text(json::object o) {
  std::string out;
  pretty(json::value(std::move(o)), out, 0);
  out += '\n';
  return out;
}

std::string sha256_hex(std::string_view text) {
  std::array<std::uint8_t, 32> digest{};
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &n, EVP_sha256(), nullptr);
  return to_hex(digest);
}

std::string checksum_of(const BackupManifest& m) {
  return "sha256:" + sha256_hex(pretty_text(manifest_object(m)));
}

}  // namespace

std::string encode_manifest(const BackupManifest& m, std::string_view path) {
  json::object o;
  if (!path.empty()) o["path"] = path;
  for (auto& [k, v] : manifest_object(m)) o[k] = v;
  if (m.format >= 2) o["checksum"] = checksum_of(m);
  return pretty_text(std::move(o));
}

DetailedResult<BackupManifest> decode_manifest(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return bad("not a JSON object");
  const auto& o = v.as_object();
  BackupManifest m;
  const auto format = read_manifest_u64(o, "format");
  if (!format || *format < 1 || *format > static_cast<std::uint64_t>(kManifestFormat)) {
    return bad("format is not 1 or " + std::to_string(kManifestFormat));
  }
  m.format = static_cast<int>(*format);
  if (m.format >= 2) {
    const auto* identity = o.if_contains("store_identity");
    const auto position = read_manifest_u64(o, "store_position");
    if (identity == nullptr || !identity->is_string() || !position) {
      return bad("no store_identity / store_position (the checkpoint it describes)");
    }
    m.store_identity = std::string(identity->as_string());
    m.store_position = *position;
  }
  const auto* taken = o.if_contains("taken_at_ms");
  if (taken == nullptr || !taken->is_int64()) return bad("no taken_at_ms");
  m.taken_at_ms = taken->as_int64();
  if (const auto* id = o.if_contains("id"); id != nullptr && id->is_string()) {
    m.id = std::string(id->as_string());
  }
  if (const auto* ver = o.if_contains("ticketd_version"); ver != nullptr && ver->is_string()) {
    m.ticketd_version = std::string(ver->as_string());
  }
  if (const auto* src = o.if_contains("source"); src != nullptr && src->is_string()) {
    m.source = std::string(src->as_string());
  }
  if (const auto* on = o.if_contains("online"); on != nullptr && on->is_bool()) {
    m.online = on->as_bool();
  }
  m.worker_records = read_manifest_u64(o, "worker_records").value_or(0);
  const auto* sequences = o.if_contains("sequences");
  if (sequences == nullptr || !sequences->is_array()) return bad("no sequences array");
  for (const auto& item : sequences->as_array()) {
    auto s = decode_sequence(item);
    if (!s) return s.error();
    m.sequences.push_back(std::move(*s));
  }
  if (m.format >= 2) {
    const auto* sum = o.if_contains("checksum");
    if (sum == nullptr || !sum->is_string()) return bad("no checksum");
    if (std::string_view(sum->as_string()) != checksum_of(m)) {
      return bad("the checksum does not match its contents: the manifest was edited or damaged");
    }
  }
  return m;
}

DetailedResult<BackupManifest> describe_store(CounterStore& store, std::int64_t now_ms,
                                              const std::vector<ServedSequence>& served) {
  ManifestEntries entries;
  for (const auto kind : kAllSequenceKinds) {
    if (auto r = kind_backup(kind).read_records(store, entries); !r) return r.error();
  }
  // Definitions of the kinds created at run time: a counter's carries its grid.
  auto definitions = store.scan(kDefinitionPrefix);
  if (!definitions) return definitions.error();
  for (const auto& [key, value] : *definitions) {
    const std::string name = key.substr(kDefinitionPrefix.size());
    auto d = decode_definition(name, value);
    if (!d) {
      return backup_corruption("definition of '" + name + "': unreadable record");
    }
    auto& s = entries.entry(name, d->spec.kind);
    if (kind_takes(d->spec.kind, kind_key::kStart)) set_grid(s, d->spec);
  }
  for (const auto kind : kAllSequenceKinds) {
    if (auto r = kind_backup(kind).read_state(store, entries); !r) return r.error();
  }
  for (const auto& extra : served) {
    auto& s = entries.entry(extra.spec.name, extra.spec.kind);
    if (!s.grid_known && kind_takes(extra.spec.kind, kind_key::kStart)) {
      set_grid(s, extra.spec);
      s.cache = extra.spec.cache;
    }
  }
  for (const auto kind : kAllSequenceKinds) {
    if (auto r = kind_backup(kind).read_history(store, entries, now_ms); !r) return r.error();
  }
  auto workers = store.scan(kWorkerPrefix);
  if (!workers) return workers.error();

  BackupManifest m;
  m.worker_records = workers->size();
  m.sequences = entries.take();
  return m;
}

DetailedResult<BackupManifest> reconcile(const BackupManifest& manifest,
                                         const BackupManifest& derived) {
  std::vector<std::string> problems;
  std::map<std::string, const BackedUpSequence*> listed;
  for (const auto& s : manifest.sequences) listed.emplace(s.name, &s);
  BackupManifest out = manifest;
  out.sequences.clear();
  out.worker_records = derived.worker_records;
  for (const auto& d : derived.sequences) {
    auto it = listed.find(d.name);
    if (it == listed.end()) {
      problems.push_back("the checkpoint holds " + std::string(kind_name(d.kind)) + " sequence '" +
                         d.name + "', which the manifest leaves out");
      continue;
    }
    const BackedUpSequence& m = *it->second;
    listed.erase(it);
    BackedUpSequence merged = d;
    const auto differ = [&](std::string_view field, const std::string& stored,
                            const std::string& claimed) {
      if (stored == claimed) return;
      problems.push_back("sequence '" + d.name + "': the manifest says " + std::string(field) +
                         " " + claimed + ", the checkpoint " + stored);
    };
    differ("kind", std::string(kind_name(d.kind)), std::string(kind_name(m.kind)));
    differ("dropped", d.tombstone ? "yes" : "no", m.tombstone ? "yes" : "no");
    kind_backup(d.kind).compare(d, m, differ);
    if (d.grid_known && m.grid_known) {
      const auto grid = [](const BackedUpSequence& s) {
        return std::to_string(s.start) + "/" + std::to_string(s.increment) + "/" +
               std::to_string(s.offset) + "/" + std::to_string(s.max_value) + "/" +
               std::to_string(s.cache);
      };
      differ("start/increment/offset/max_value/cache", grid(d), grid(m));
    } else if (!d.grid_known && m.grid_known) {
      // Not stored (a gapless sequence configured but never defined at run time): the
      // manifest's grid, from the config it was served with, is all there is.
      merged.grid_known = true;
      merged.start = m.start;
      merged.increment = m.increment;
      merged.offset = m.offset;
      merged.max_value = m.max_value;
      merged.cache = m.cache;
    }
    out.sequences.push_back(std::move(merged));
  }
  for (const auto& [name, m] : listed) {
    // Served but with nothing stored: only kinds whose restore needs no stored number.
    if (!kind_backup(m->kind).may_be_unstored(*m)) {
      problems.push_back("the manifest lists " + std::string(kind_name(m->kind)) +
                         (m->tombstone ? " tombstone" : " sequence") + " '" + name +
                         "' with stored state, which the checkpoint does not hold");
      continue;
    }
    out.sequences.push_back(*m);
  }
  std::sort(out.sequences.begin(), out.sequences.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  if (!problems.empty()) {
    std::string message =
        "the manifest (" + std::string(kManifestFile) +
        ") disagrees with the checkpoint it describes; a restore trusts the checkpoint's own "
        "keys and refuses:";
    for (const auto& p : problems) message += "\n" + p;
    return Error{ToolErrc::kRefused, message};
  }
  return out;
}

}  // namespace ticketd::backup
