#include "server/backup/manifest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <map>
#include <utility>

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

// Integers above 2^53 lose precision in many JSON readers: they travel as decimal strings, as
// ticketd's IDs do in its HTTP API.
json::value u64(std::uint64_t v) { return json::value(std::to_string(v)); }

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
    o["start"] = u64(s.start);
    o["increment"] = u64(s.increment);
    o["offset"] = u64(s.offset);
    if (s.max_value != 0) o["max_value"] = u64(s.max_value);
    if (s.cache != 0) o["cache"] = u64(s.cache);
  }
  if (s.kind == SequenceKind::kTicket) {
    o["ceiling"] = u64(s.ceiling);
    o["peak_per_minute"] = u64(s.peak_per_minute);
    if (!s.tombstone) o["max_rate"] = u64(s.max_rate);
  }
  if (s.kind == SequenceKind::kGapless) {
    if (s.committed_below) o["committed_below"] = u64(*s.committed_below);
    if (s.highest_committed) o["highest_committed"] = u64(*s.highest_committed);
    if (s.highest_reserved) o["highest_reserved"] = u64(*s.highest_reserved);
    o["reserved"] = s.reserved;
  }
  return o;
}

Error bad(std::string_view what) {
  return Error{StorageErrc::kCorruption, "backup manifest: " + std::string(what)};
}

std::optional<std::uint64_t> read_u64(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return parse_u64(std::string_view(v->as_string()));
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
  return std::nullopt;
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
  if (auto start = read_u64(o, "start")) {
    s.grid_known = true;
    s.start = *start;
    s.increment = read_u64(o, "increment").value_or(1);
    s.offset = read_u64(o, "offset").value_or(1);
    s.max_value = read_u64(o, "max_value").value_or(0);
    s.cache = read_u64(o, "cache").value_or(0);
    if (s.increment == 0) return bad("sequence '" + s.name + "': increment 0");
  }
  if (s.kind == SequenceKind::kTicket) {
    const auto ceiling = read_u64(o, "ceiling");
    if (!ceiling) return bad("ticket sequence '" + s.name + "' without a ceiling");
    s.ceiling = *ceiling;
    s.peak_per_minute = read_u64(o, "peak_per_minute").value_or(0);
    s.max_rate = read_u64(o, "max_rate").value_or(kDefaultMaxRate);
  }
  if (s.kind == SequenceKind::kGapless) {
    s.committed_below = read_u64(o, "committed_below");
    s.highest_committed = read_u64(o, "highest_committed");
    s.highest_reserved = read_u64(o, "highest_reserved");
    s.reserved = read_u64(o, "reserved").value_or(0);
  }
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
    o["store_position"] = u64(m.store_position);
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
  const auto format = read_u64(o, "format");
  if (!format || *format < 1 || *format > static_cast<std::uint64_t>(kManifestFormat)) {
    return bad("format is not 1 or " + std::to_string(kManifestFormat));
  }
  m.format = static_cast<int>(*format);
  if (m.format >= 2) {
    const auto* identity = o.if_contains("store_identity");
    const auto position = read_u64(o, "store_position");
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
  m.worker_records = read_u64(o, "worker_records").value_or(0);
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
  std::map<std::string, BackedUpSequence> by_name;
  auto entry = [&](const std::string& name, SequenceKind kind) -> BackedUpSequence& {
    auto [it, inserted] = by_name.try_emplace(name);
    if (inserted) {
      it->second.name = name;
      it->second.kind = kind;
    }
    return it->second;
  };
  auto corrupt = [](const std::string& what) {
    return Error{StorageErrc::kCorruption, "backup: " + what};
  };

  auto sequences = store.scan(kSequencePrefix);
  if (!sequences) return sequences.error();
  for (const auto& [key, value] : *sequences) {
    const std::string name = key.substr(kSequencePrefix.size());
    auto r = decode_record(name, value);
    if (!r) return corrupt("ticket sequence '" + name + "': unreadable record");
    auto& s = entry(name, SequenceKind::kTicket);
    s.grid_known = true;
    s.start = r->spec.start;
    s.increment = r->spec.increment;
    s.offset = r->spec.offset;
    s.max_value = r->spec.max_value;
    s.cache = r->spec.cache;
    s.max_rate = r->spec.max_rate;
    s.ceiling = r->ceiling;
  }
  auto tombs = store.scan(kTombstonePrefix);
  if (!tombs) return tombs.error();
  for (const auto& [key, value] : *tombs) {
    const std::string name = key.substr(kTombstonePrefix.size());
    const auto ceiling = decode_tombstone(value);
    if (!ceiling) return corrupt("tombstone '" + name + "': unreadable record");
    if (by_name.contains(name)) continue;  // re-created above it: the live record decides
    auto& s = entry(name, SequenceKind::kTicket);
    s.tombstone = true;
    s.ceiling = *ceiling;
  }
  auto definitions = store.scan(kDefinitionPrefix);
  if (!definitions) return definitions.error();
  for (const auto& [key, value] : *definitions) {
    const std::string name = key.substr(kDefinitionPrefix.size());
    auto d = decode_definition(name, value);
    if (!d) return corrupt("definition of '" + name + "': unreadable record");
    auto& s = entry(name, d->spec.kind);
    if (d->spec.kind == SequenceKind::kGapless) {
      s.grid_known = true;
      s.start = d->spec.start;
      s.increment = d->spec.increment;
      s.offset = d->spec.offset;
      s.max_value = d->spec.max_value;
    }
  }
  auto gapless = store.scan(kGaplessPrefix);
  if (!gapless) return gapless.error();
  for (const auto& [key, value] : *gapless) {
    auto k = parse_gapless_key(std::string_view(key).substr(kGaplessPrefix.size()));
    if (!k) return corrupt("unreadable gapless key '" + key + "'");
    auto& s = entry(k->name, SequenceKind::kGapless);
    if (s.kind != SequenceKind::kGapless) continue;  // a dropped ticket name reused: keys win below
    if (k->kind == "f") {
      auto f = decode_frontier(value);
      if (!f) return corrupt("gapless sequence '" + k->name + "': unreadable frontier");
      s.committed_below = f->first_open;
      if (!s.grid_known) {
        s.grid_known = true;
        s.start = f->first;
        s.increment = f->step;
        s.offset = f->first % f->step;
      }
      if (f->first_open > f->first) {
        s.highest_committed = std::max(s.highest_committed.value_or(0), f->first_open - f->step);
      }
    } else if (k->kind == "r") {
      ++s.reserved;
      s.highest_reserved = std::max(s.highest_reserved.value_or(0), k->number);
    } else {
      s.highest_committed = std::max(s.highest_committed.value_or(0), k->number);
    }
  }
  // Snowflake marks: "snowflake/<name>/hwm".
  auto marks = store.scan("snowflake/");
  if (!marks) return marks.error();
  for (const auto& [key, value] : *marks) {
    const std::string_view rest =
        std::string_view(key).substr(std::string_view("snowflake/").size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) continue;
    auto& s = entry(std::string(rest.substr(0, slash)), SequenceKind::kSnowflake);
    (void)s;  // restored as it is: the kind is all a restore needs to know
  }
  for (const auto& extra : served) {
    auto& s = entry(extra.spec.name, extra.spec.kind);
    if (!s.grid_known &&
        (extra.spec.kind == SequenceKind::kGapless || extra.spec.kind == SequenceKind::kTicket)) {
      s.grid_known = true;
      s.start = extra.spec.start;
      s.increment = extra.spec.increment;
      s.offset = extra.spec.offset;
      s.max_value = extra.spec.max_value;
      s.cache = extra.spec.cache;
    }
  }
  auto rates = store.scan(kRatePrefix);
  if (!rates) return rates.error();
  const std::int64_t today = now_ms / IssueRateHistory::kDayMs;
  std::map<std::string, IssueRateHistory> histories;
  for (const auto& [key, value] : *rates) {
    auto h = decode_rate_history(value);
    if (!h) continue;  // advice only; a missing rate falls back on the cache rule
    histories.emplace(key.substr(kRatePrefix.size()), std::move(*h));
  }
  for (const auto& [name, h] : histories) {
    auto it = by_name.find(name);
    if (it == by_name.end() || it->second.kind != SequenceKind::kTicket) continue;
    it->second.peak_per_minute = h.peak_per_minute(today);
  }
  auto workers = store.scan(kWorkerPrefix);
  if (!workers) return workers.error();

  BackupManifest m;
  m.worker_records = workers->size();
  for (auto& [_, s] : by_name) m.sequences.push_back(std::move(s));
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
  const auto n = [](std::optional<std::uint64_t> v) {
    return v ? std::to_string(*v) : std::string("none");
  };
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
    if (d.kind == SequenceKind::kTicket) {
      differ("ceiling", std::to_string(d.ceiling), std::to_string(m.ceiling));
      differ("peak_per_minute", std::to_string(d.peak_per_minute),
             std::to_string(m.peak_per_minute));
      differ("max_rate", std::to_string(d.max_rate), std::to_string(m.max_rate));
    }
    if (d.kind == SequenceKind::kGapless) {
      differ("committed_below", n(d.committed_below), n(m.committed_below));
      differ("highest_committed", n(d.highest_committed), n(m.highest_committed));
      differ("highest_reserved", n(d.highest_reserved), n(m.highest_reserved));
      differ("reserved", std::to_string(d.reserved), std::to_string(m.reserved));
    }
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
    const bool nothing_to_store =
        !m->tombstone && (m->kind == SequenceKind::kUuidV7 || m->kind == SequenceKind::kSnowflake ||
                          (m->kind == SequenceKind::kGapless && !m->committed_below &&
                           !m->highest_committed && !m->highest_reserved && m->reserved == 0));
    if (!nothing_to_store) {
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
