// Internal to config/: reading YAML values into typed settings, each problem recorded with its
// file, line and YAML path (Loader in config_loader.cpp walks the sections with it).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "server/base/parse_int.h"

namespace ticketd::config::detail {

// The words a setting accepts and the value each stands for.
template <class E>
struct Word {
  std::string_view text;
  E value;
};

/// Reads values of a YAML tree: each get_* checks the value's type and range and, on a problem,
/// records "FILE:LINE: PATH: message" and leaves the target as it was, so a whole file is
/// checked in one run. Not thread-safe; one per load.
class YamlReader {
 public:
  YamlReader(std::string source, NameRule name_rule)
      : source_(std::move(source)), name_rule_(std::move(name_rule)) {}

  void error(const YAML::Node& node, const std::string& path, const std::string& message) {
    std::string where = source_;
    if (node.IsDefined() && node.Mark().line >= 0) {
      where += ":" + std::to_string(node.Mark().line + 1);
    }
    errors_.push_back(where + ": " + path + ": " + message);
  }

  // Reports keys that are not in `allowed`: a typo must not silently fall back to a default.
  bool expect_map(const YAML::Node& node, const std::string& path,
                  std::initializer_list<std::string_view> allowed,
                  std::span<const std::string_view> also_allowed = {}) {
    if (!node.IsMap()) {
      error(node, path, "expected a mapping");
      return false;
    }
    for (const auto& kv : node) {
      auto key = kv.first.Scalar();
      bool known = false;
      for (auto a : allowed) known = known || a == key;
      for (auto a : also_allowed) known = known || a == key;
      if (!known) error(kv.first, join(path, key), "unknown key");
    }
    return true;
  }

  bool get_string(const YAML::Node& parent, const std::string& path, const char* key,
                  std::string& out) {
    auto node = parent[key];
    if (!node) return false;
    if (!node.IsScalar()) {
      error(node, join(path, key), "expected a string");
      return false;
    }
    out = node.Scalar();
    return true;
  }

  bool get_uint(const YAML::Node& parent, const std::string& path, const char* key,
                std::uint64_t& out, std::uint64_t min = 0,
                std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    auto node = parent[key];
    if (!node) return false;
    const auto& s = node.IsScalar() ? node.Scalar() : std::string();
    const auto parsed = parse_u64(s);
    if (!node.IsScalar() || !parsed) {
      error(node, join(path, key), "expected a non-negative integer, got '" + s + "'");
      return false;
    }
    const std::uint64_t v = *parsed;
    if (v < min || v > max) {
      error(node, join(path, key),
            "must be between " + std::to_string(min) + " and " + std::to_string(max));
      return false;
    }
    out = v;
    return true;
  }

  template <class T>
  bool get_small_uint(const YAML::Node& parent, const std::string& path, const char* key, T& out,
                      std::uint64_t min = 0, std::uint64_t max = std::numeric_limits<T>::max()) {
    std::uint64_t v = 0;
    if (!get_uint(parent, path, key, v, min, max)) return false;
    out = static_cast<T>(v);
    return true;
  }

  // Reads one of `words` into `out`, which keeps its default when the key is absent (or is not
  // a string: get_string reports that). False when the value is a string that is none of the
  // words, reported with `problem(text)`.
  template <class E, std::size_t N, class Problem>
  bool get_word(const YAML::Node& parent, const std::string& path, const char* key,
                const Word<E> (&words)[N], E& out, const Problem& problem) {
    std::string text;
    if (!get_string(parent, path, key, text)) return true;
    for (const auto& w : words) {
      if (w.text == text) {
        out = w.value;
        return true;
      }
    }
    error(parent[key], join(path, key), problem(text));
    return false;
  }

  // A whole number of seconds or milliseconds; the bounds are in the duration's unit.
  template <class Duration>
  bool get_duration(const YAML::Node& parent, const std::string& path, const char* key,
                    Duration& out, std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    if (!get_uint(parent, path, key, v, min, max)) return false;
    out = Duration(static_cast<typename Duration::rep>(v));
    return true;
  }

  bool get_bool(const YAML::Node& parent, const std::string& path, const char* key, bool& out) {
    auto node = parent[key];
    if (!node) return false;
    if (node.IsScalar()) {
      const auto& s = node.Scalar();
      if (s == "true" || s == "yes" || s == "on") {
        out = true;
        return true;
      }
      if (s == "false" || s == "no" || s == "off") {
        out = false;
        return true;
      }
    }
    error(node, join(path, key), "expected true or false");
    return false;
  }

  void get_listen(const YAML::Node& parent, const std::string& path, ListenAddress& out) {
    std::string text;
    if (!get_string(parent, path, "listen", text)) return;
    auto parsed = parse_listen(text);
    if (!parsed) {
      error(parent["listen"], join(path, "listen"), "expected HOST:PORT, got '" + text + "'");
      return;
    }
    out = *parsed;
  }

  void check_name(const YAML::Node& node, const std::string& path, const std::string& name) {
    if (auto problem = name_rule_(name); !problem.empty()) {
      error(node, path,
            "not a valid name: " + problem +
                " (1-64 characters, no '/', '`', spaces or control "
                "characters, not '.' or '..')");
    }
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  // How deep a document may nest. ticketd's own keys go four levels down; anything deeper is a
  // mistake, or a cyclic alias (`a: &a [*a]`), which yaml-cpp accepts as a node that contains
  // itself.
  static constexpr std::size_t kMaxDepth = 64;
  // How many nodes the walk below visits, aliases counted each time they are reached.
  static constexpr std::size_t kMaxVisits = 100000;

  // Walks every mapping at every depth: yaml-cpp keeps duplicate keys (a lookup returns the
  // first), so `listen:` given twice would silently ignore the second. Scalar keys only. A visit
  // budget keeps alias-heavy documents ("billion laughs") from walking forever, and a depth
  // bound keeps a cyclic alias from walking off the stack. Returns false, with the error, when
  // the walk stopped at either.
  bool check_duplicate_keys(const YAML::Node& root) {
    std::size_t budget = kMaxVisits;
    if (walk_keys(root, "", 0, budget)) return true;
    if (budget == 0) {
      errors_.push_back(source_ + ": the document is too large (aliases expand to more than " +
                        std::to_string(kMaxVisits) + " nodes)");
    }
    return false;
  }

  std::vector<std::string> take_errors() { return std::move(errors_); }

 private:
  bool walk_keys(const YAML::Node& node, const std::string& path, std::size_t depth,
                 std::size_t& budget) {
    if (budget == 0) return false;
    --budget;
    if (depth > kMaxDepth) {
      error(node, path,
            "nested more than " + std::to_string(kMaxDepth) + " levels deep (a cyclic alias?)");
      return false;
    }
    if (node.IsMap()) {
      std::map<std::string, int> lines;
      for (const auto& kv : node) {
        const auto& key = kv.first;
        if (!key.IsScalar()) continue;
        const int line = key.Mark().line + 1;
        if (auto [it, inserted] = lines.emplace(key.Scalar(), line); !inserted) {
          error(key, join(path, key.Scalar()),
                "duplicate key '" + key.Scalar() + "' (first given on line " +
                    std::to_string(it->second) + ", again on line " + std::to_string(line) + ")");
        }
        if (!walk_keys(kv.second, join(path, key.Scalar()), depth + 1, budget)) return false;
      }
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        if (!walk_keys(node[i], path + "[" + std::to_string(i) + "]", depth + 1, budget)) {
          return false;
        }
      }
    }
    return true;
  }

 protected:
  std::string source_;
  NameRule name_rule_;
  std::vector<std::string> errors_;
};

}  // namespace ticketd::config::detail
