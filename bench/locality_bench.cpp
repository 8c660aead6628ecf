// Index locality of ID schemes: what a key of each scheme costs to generate, how fast keys of that
// scheme go into an ordered store, and how much room they take there. Figures, not assertions:
// bench/locality.sh runs it and bench/locality_plot.py draws its JSON.
//
// Schemes, each from ticketd's own generator where it has one:
//   ticket     TicketSequence::try_take on a memory store (the cached path of next()): 1, 2, 3, ...
//   snowflake  SnowflakeGenerator, Twitter layout, worker 1, the system clock, policy wait (a full
//              1 ms tick waits for the next: at most 4,096 IDs per ms)
//   uuidv7     UuidV7Generator on the system clock
//   ulid       UlidGenerator on the system clock, policy logical (never waits)
//   uuidv4     16 bytes from getrandom(2) per ID, version 4 and variant bits set (RFC 9562 5.4):
//              what libuuid's uuid_generate_random and Python's uuid.uuid4() do, without ticketd
// Integers are stored big-endian (8 bytes), so byte order is numeric order; the others as their
// 16 bytes, whose byte order is their text order.
//
// Generation: `--runs` runs of `--keys` IDs each, a fresh generator per run (so every run of
// tickets is 1..N); the median ns per ID. The last run's keys, in the order they were made, are
// inserted into a fresh RocksDbCounterStore through CounterStore::commit, `--batch` keys per
// commit (one synced WriteBatch, as ticketd writes), each with the same 8-byte value. Inserts/s
// is keys over the time of the commits. Size: RocksDbCounterStore::checkpoint flushes the
// memtable and hard-links the live table files into a new directory; the size is the sum of that
// directory's files (table files, MANIFEST, OPTIONS, CURRENT, IDENTITY), i.e. the store as
// RocksDB's background compactions left it after the flush. No manual compaction runs: the store
// has no such hook, and the keys are never overwritten, so compaction would not drop any data.
// Written: what the process sent to the storage layer (/proc/self/io write_bytes, RocksDB's
// background threads included) from the first commit to the end of the checkpoint: the
// write-ahead log, memtable flushes and the compactions that ran meanwhile.
//
// Usage: locality_bench --dir DIR [--keys N] [--runs R] [--batch B] [--schemes a,b,...]
//                       [--json FILE]
// DIR must not exist; one store per scheme is made in it and removed once measured.
#include <sys/random.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/base/command_line.h"
#include "server/base/parse_int.h"
#include "server/base/utc_time.h"
#include "server/core/clock.h"
#include "server/core/group_committer.h"
#include "server/core/snowflake_generator.h"
#include "server/core/ticket_sequence.h"
#include "server/core/ulid_generator.h"
#include "server/core/uuidv7_generator.h"
#include "storage/memory_counter_store.h"
#include "storage/rocksdb_counter_store.h"

namespace ticketd {
namespace {

constexpr std::string_view kValue = "payload!";  // the same 8 bytes for every key

[[noreturn]] void die(const std::string& message) {
  std::cerr << "locality_bench: " << message << "\n";
  std::exit(1);
}

void put_u64_be(std::uint64_t v, std::uint8_t* out) {
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<std::uint8_t>(v);
}

std::uint64_t get_u64_be(const std::uint8_t* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | in[i];
  return v;
}

// RFC 9562 section 5.4: 122 random bits, version 0b0100 in the high nibble of byte 6, variant
// 0b10 in the top bits of byte 8. One getrandom(2) per ID, as libuuid and Python's uuid4 do.
void uuid_v4(std::uint8_t* out) {
  std::size_t done = 0;
  while (done < 16) {
    const ssize_t n = ::getrandom(out + done, 16 - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die(std::string("getrandom: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  out[6] = static_cast<std::uint8_t>((out[6] & 0x0F) | 0x40);
  out[8] = static_cast<std::uint8_t>((out[8] & 0x3F) | 0x80);
}

// Fills its argument with keys of one scheme, back to back, `width` bytes each.
using Fill = std::function<void(std::span<std::uint8_t>)>;

// A ticket sequence on a memory store whose first write covers every value of the run (a cache
// of 2^40), so what is timed is the cached path: lock, check, add.
struct TicketSource {
  MemoryCounterStore store;
  GroupCommitter committer{store};
  std::shared_ptr<TicketSequence> sequence;
};

std::uint64_t take_one(TicketSequence& sequence) {
  if (auto b = sequence.try_take(1)) return b->first;
  std::atomic<std::uint64_t> got{0};
  sequence.take(1, [&got](DetailedResult<Block> b) {
    got.store(b ? b->first : ~std::uint64_t{0}, std::memory_order_release);
    got.notify_one();
  });
  got.wait(0, std::memory_order_acquire);
  const auto v = got.load(std::memory_order_acquire);
  if (v == ~std::uint64_t{0}) die("ticket sequence: take failed");
  return v;
}

Fill open_ticket() {
  auto s = std::make_shared<TicketSource>();
  s->sequence = std::make_shared<TicketSequence>(
      SequenceRecord{SequenceSpec{.name = "locality", .cache = std::uint64_t{1} << 40}, 0},
      s->committer);
  return [s](std::span<std::uint8_t> out) {
    for (std::size_t i = 0; i < out.size(); i += 8) put_u64_be(take_one(*s->sequence), &out[i]);
  };
}

struct SnowflakeSource {
  MemoryCounterStore store;
  GroupCommitter committer{store};
  std::shared_ptr<SnowflakeGenerator> generator;
};

Fill open_snowflake() {
  auto s = std::make_shared<SnowflakeSource>();
  auto g = SnowflakeGenerator::open(
      SnowflakeOptions{.name = "locality", .layout = SnowflakeLayout::twitter(), .worker_id = 1},
      s->store, s->committer, system_clock());
  if (!g) die("snowflake: " + g.error().message);
  s->generator = *g;
  return [s](std::span<std::uint8_t> out) {
    for (std::size_t i = 0; i < out.size(); i += 8) {
      for (;;) {
        auto r = s->generator->try_next();
        if (r.ok()) {
          put_u64_be(r.id, &out[i]);
          break;
        }
        if (!r.retry_later()) die("snowflake: " + r.error.message);
        // A full tick (or a high-water-mark write in flight): the front end's timer, as a spin.
        while (system_clock().now_unix_ms() < r.retry_at_unix_ms) {
        }
      }
    }
  };
}

Fill open_uuidv7() {
  auto g = std::make_shared<UuidV7Generator>(system_clock());
  return [g](std::span<std::uint8_t> out) {
    for (std::size_t i = 0; i < out.size(); i += 16) {
      const Uuid u = g->next();
      std::memcpy(&out[i], u.data(), u.size());
    }
  };
}

Fill open_ulid() {
  UlidOptions options;
  options.name = "locality";
  options.policy = ClockPolicy::kLogical;
  auto g = std::make_shared<UlidGenerator>(system_clock(), std::move(options));
  return [g](std::span<std::uint8_t> out) {
    for (std::size_t i = 0; i < out.size(); i += 16) {
      for (;;) {
        auto r = g->try_next();
        if (r.ok()) {
          std::memcpy(&out[i], r.id.data(), r.id.size());
          break;
        }
        if (!r.retry_later()) die("ulid: " + r.error.message);
        std::this_thread::yield();  // the kernel's random pool is not ready yet
      }
    }
  };
}

Fill open_uuidv4() {
  return [](std::span<std::uint8_t> out) {
    for (std::size_t i = 0; i < out.size(); i += 16) uuid_v4(&out[i]);
  };
}

std::size_t decimal_length(const std::uint8_t* key) {
  char buf[20];
  return static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, get_u64_be(key)).ptr - buf);
}

Uuid as_array(const std::uint8_t* key) {
  Uuid u;
  std::memcpy(u.data(), key, u.size());
  return u;
}

std::size_t uuid_text_length(const std::uint8_t* key) { return to_string(as_array(key)).size(); }
std::size_t ulid_text_length(const std::uint8_t* key) {
  return ulid_to_string(as_array(key)).size();
}

// One row per scheme; everything below iterates over these.
struct Scheme {
  std::string_view name;
  std::size_t width;           // bytes of the binary form
  std::string_view text_form;  // the canonical text form whose length is reported
  Fill (*open)();
  std::size_t (*text_length)(const std::uint8_t* key);
};

constexpr Scheme kSchemes[] = {
    {"ticket", 8, "decimal", open_ticket, decimal_length},
    {"snowflake", 8, "decimal", open_snowflake, decimal_length},
    {"uuidv7", 16, "8-4-4-4-12 hex", open_uuidv7, uuid_text_length},
    {"ulid", 16, "Crockford base32", open_ulid, ulid_text_length},
    {"uuidv4", 16, "8-4-4-4-12 hex", open_uuidv4, uuid_text_length},
};

struct Options {
  std::uint64_t keys = 10'000'000;
  std::uint64_t runs = 5;
  std::uint64_t batch = 10'000;
  std::filesystem::path dir;
  std::string json;
  std::vector<const Scheme*> schemes;
};

// Everything measured for one scheme.
struct Figures {
  const Scheme* scheme = nullptr;
  std::vector<double> generate_ns;  // per ID, one entry per run
  double generate_ns_median = 0;
  double text_bytes_mean = 0;
  double ascending = 0;  // fraction of keys above the key inserted just before them
  double insert_seconds = 0;
  std::uint64_t commits = 0;
  std::uint64_t disk_bytes = 0;  // every file of the checkpoint
  std::uint64_t sst_bytes = 0;   // its table files alone
  double checkpoint_seconds = 0;
  std::uint64_t written_bytes = 0;  // sent to the storage layer while inserting and flushing
};

// This process's write_bytes in /proc/self/io (all threads): bytes sent to the storage layer.
std::uint64_t process_write_bytes() {
  std::ifstream io("/proc/self/io");
  std::string field;
  std::uint64_t value = 0;
  while (io >> field >> value) {
    if (field == "write_bytes:") return value;
  }
  die("no write_bytes in /proc/self/io");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Times `runs` generations of all keys, each by a fresh generator; `keys` keeps the last run's.
void generate(const Options& o, Figures& f, std::vector<std::uint8_t>& keys) {
  keys.assign(o.keys * f.scheme->width, 0);
  for (std::uint64_t run = 0; run < o.runs; ++run) {
    Fill fill = f.scheme->open();
    const auto t0 = std::chrono::steady_clock::now();
    fill(keys);
    f.generate_ns.push_back(seconds_since(t0) * 1e9 / static_cast<double>(o.keys));
  }
  std::vector<double> sorted = f.generate_ns;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  f.generate_ns_median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

// Mean text length (by ticketd's formatters) and the fraction of keys in ascending order.
void describe(const Options& o, Figures& f, const std::vector<std::uint8_t>& keys) {
  const std::size_t w = f.scheme->width;
  std::uint64_t text = 0;
  std::uint64_t ascending = 0;
  for (std::uint64_t i = 0; i < o.keys; ++i) {
    const std::uint8_t* key = &keys[i * w];
    text += f.scheme->text_length(key);
    if (i > 0 && std::memcmp(key - w, key, w) < 0) ++ascending;
  }
  f.text_bytes_mean = static_cast<double>(text) / static_cast<double>(o.keys);
  f.ascending = o.keys > 1 ? static_cast<double>(ascending) / static_cast<double>(o.keys - 1) : 1.0;
}

// Writes every key, in the order generated, `batch` per synced commit.
void insert(const Options& o, Figures& f, CounterStore& store,
            const std::vector<std::uint8_t>& keys) {
  const std::size_t w = f.scheme->width;
  std::vector<Mutation> batch(static_cast<std::size_t>(o.batch));
  for (auto& m : batch) m.value = std::string(kValue);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t first = 0; first < o.keys; first += o.batch) {
    const std::uint64_t n = std::min<std::uint64_t>(o.batch, o.keys - first);
    for (std::uint64_t i = 0; i < n; ++i) {
      batch[i].key.assign(reinterpret_cast<const char*>(&keys[(first + i) * w]), w);
    }
    auto r = store.commit(std::span(batch).first(static_cast<std::size_t>(n)));
    if (!r) die(std::string(f.scheme->name) + ": commit: " + r.error().message);
    ++f.commits;
  }
  f.insert_seconds = seconds_since(t0);
}

// The size of the store's checkpoint: the memtable flushed, the live files hard-linked.
void measure(Figures& f, RocksDbCounterStore& store, const std::filesystem::path& target) {
  const auto t0 = std::chrono::steady_clock::now();
  auto cp = store.checkpoint(target.string());
  if (!cp) die(std::string(f.scheme->name) + ": checkpoint: " + cp.error().message);
  f.checkpoint_seconds = seconds_since(t0);
  for (const auto& e : std::filesystem::directory_iterator(target)) {
    if (!e.is_regular_file()) continue;
    f.disk_bytes += e.file_size();
    if (e.path().extension() == ".sst") f.sst_bytes += e.file_size();
  }
  std::filesystem::remove_all(target);
}

Figures run_scheme(const Options& o, const Scheme& scheme) {
  Figures f;
  f.scheme = &scheme;
  std::vector<std::uint8_t> keys;
  generate(o, f, keys);
  describe(o, f, keys);
  const auto store_dir = o.dir / scheme.name;
  {
    auto store = RocksDbCounterStore::open(store_dir.string());
    if (!store) die(std::string(scheme.name) + ": open: " + store.error().message);
    const std::uint64_t written0 = process_write_bytes();
    insert(o, f, **store, keys);
    measure(f, **store, o.dir / (std::string(scheme.name) + ".checkpoint"));
    f.written_bytes = process_write_bytes() - written0;
  }
  std::filesystem::remove_all(store_dir);
  return f;
}

double per_second(std::uint64_t n, double seconds) {
  return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

void print_table(const Options& o, const std::vector<Figures>& all) {
  std::printf("%-10s %10s %6s %7s %9s %11s %10s %10s %13s\n", "scheme", "gen ns/ID", "bin B",
              "text B", "ascending", "inserts/s", "disk MB", "disk B/key", "written B/key");
  const auto keys = static_cast<double>(o.keys);
  for (const auto& f : all) {
    std::printf("%-10s %10.1f %6zu %7.2f %9.4f %11.0f %10.1f %10.2f %13.1f\n",
                std::string(f.scheme->name).c_str(), f.generate_ns_median, f.scheme->width,
                f.text_bytes_mean, f.ascending, per_second(o.keys, f.insert_seconds),
                static_cast<double>(f.disk_bytes) / 1e6, static_cast<double>(f.disk_bytes) / keys,
                static_cast<double>(f.written_bytes) / keys);
  }
  std::printf(
      "\n%llu keys per scheme, %llu per synced commit, value %zu bytes; gen: median of %llu "
      "runs; disk: the checkpoint's files (memtable flushed, no manual compaction); written: "
      "/proc/self/io write_bytes from the first commit to the end of the checkpoint.\n",
      static_cast<unsigned long long>(o.keys), static_cast<unsigned long long>(o.batch),
      kValue.size(), static_cast<unsigned long long>(o.runs));
}

std::string json_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_scheme(const Options& o, const Figures& f) {
  std::string runs;
  for (double ns : f.generate_ns) runs += (runs.empty() ? "" : ", ") + json_number(ns);
  const auto keys = static_cast<double>(o.keys);
  return std::string("{\"scheme\": \"") + std::string(f.scheme->name) +
         "\", \"generate_ns_per_id\": " + json_number(f.generate_ns_median) +
         ", \"generate_ns_runs\": [" + runs +
         "], \"binary_bytes\": " + std::to_string(f.scheme->width) + ", \"text_form\": \"" +
         std::string(f.scheme->text_form) +
         "\", \"text_bytes_mean\": " + json_number(f.text_bytes_mean) +
         ", \"ascending_fraction\": " + json_number(f.ascending) +
         ", \"insert_seconds\": " + json_number(f.insert_seconds) +
         ", \"inserts_per_s\": " + json_number(per_second(o.keys, f.insert_seconds)) +
         ", \"commits\": " + std::to_string(f.commits) +
         ", \"disk_bytes\": " + std::to_string(f.disk_bytes) +
         ", \"sst_bytes\": " + std::to_string(f.sst_bytes) +
         ", \"disk_bytes_per_key\": " + json_number(static_cast<double>(f.disk_bytes) / keys) +
         ", \"checkpoint_seconds\": " + json_number(f.checkpoint_seconds) +
         ", \"written_bytes\": " + std::to_string(f.written_bytes) +
         ", \"written_bytes_per_key\": " +
         json_number(static_cast<double>(f.written_bytes) / keys) + "}";
}

std::string json_document(const Options& o, const std::vector<Figures>& all) {
  std::string out = "{\n  \"bench\": \"locality_bench\",\n  \"date_utc\": \"" +
                    format_utc_ms(system_clock().now_unix_ms()) +
                    "\",\n  \"cores\": " + std::to_string(std::thread::hardware_concurrency()) +
                    ",\n  \"keys\": " + std::to_string(o.keys) +
                    ",\n  \"runs\": " + std::to_string(o.runs) +
                    ",\n  \"batch\": " + std::to_string(o.batch) +
                    ",\n  \"value_bytes\": " + std::to_string(kValue.size()) +
                    ",\n  \"store\": \"RocksDbCounterStore, one synced commit per batch\"" +
                    ",\n  \"disk_measure\": \"sum of the files of RocksDbCounterStore::checkpoint "
                    "(memtable flushed, live files hard-linked; no manual compaction)\"" +
                    ",\n  \"written_measure\": \"/proc/self/io write_bytes (all threads) from "
                    "the first commit to the end of the checkpoint\"" +
                    ",\n  \"schemes\": [\n";
  for (std::size_t i = 0; i < all.size(); ++i) {
    out += "    " + json_scheme(o, all[i]) + (i + 1 < all.size() ? ",\n" : "\n");
  }
  return out + "  ]\n}\n";
}

std::string take_count(const std::string& value, std::uint64_t& out, std::string_view flag) {
  const auto n = parse_u64(value);
  if (!n || *n == 0) return std::string(flag) + " needs a positive integer";
  out = *n;
  return {};
}

std::string take_schemes(const std::string& value, std::vector<const Scheme*>& out) {
  out.clear();
  std::string_view rest = value;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    const auto row = std::find_if(std::begin(kSchemes), std::end(kSchemes),
                                  [&](const Scheme& s) { return s.name == name; });
    if (row == std::end(kSchemes)) return "unknown scheme '" + std::string(name) + "'";
    out.push_back(&*row);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return out.empty() ? "--schemes names none" : std::string();
}

Options parse(int argc, char** argv) {
  Options o;
  std::string dir;
  for (const auto& s : kSchemes) o.schemes.push_back(&s);
  const CommandOption rows[] = {
      text_option("--dir", dir),
      text_option("--json", o.json),
      {"--keys", true, [&](const std::string& v) { return take_count(v, o.keys, "--keys"); }},
      {"--runs", true, [&](const std::string& v) { return take_count(v, o.runs, "--runs"); }},
      {"--batch", true, [&](const std::string& v) { return take_count(v, o.batch, "--batch"); }},
      {"--schemes", true, [&](const std::string& v) { return take_schemes(v, o.schemes); }},
  };
  const std::span<char* const> words(argv + 1, static_cast<std::size_t>(argc - 1));
  if (std::string problem = parse_command_line(words, rows); !problem.empty()) die(problem);
  if (dir.empty()) die("--dir DIR is required (a directory that does not exist yet)");
  if (std::filesystem::exists(dir)) die("--dir " + dir + " exists; give a new directory");
  o.dir = dir;
  return o;
}

}  // namespace
}  // namespace ticketd

int main(int argc, char** argv) {
  using namespace ticketd;
  const Options o = parse(argc, argv);
  std::filesystem::create_directories(o.dir);
  std::vector<Figures> all;
  for (const Scheme* s : o.schemes) {
    std::fprintf(stderr, "locality_bench: %s...\n", std::string(s->name).c_str());
    all.push_back(run_scheme(o, *s));
  }
  std::filesystem::remove_all(o.dir);
  print_table(o, all);
  const std::string doc = json_document(o, all);
  if (o.json.empty()) {
    std::cout << "\n" << doc;
  } else {
    std::ofstream(o.json) << doc;
  }
  return 0;
}
