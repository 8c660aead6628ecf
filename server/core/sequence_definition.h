// How a sequence created at run time, of a kind other than ticket, is kept in the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "server/core/gapless_options.h"
#include "server/core/sequence_spec.h"

namespace ticketd {

/// A kind's own options beyond the spec: one alternative per kind that has any (a new kind with
/// options adds its type here), std::monostate for the others.
using KindOptions = std::variant<std::monostate, GaplessOptions>;

/// What create() takes for any kind: the spec (name, kind, and for counters their grid) and the
/// kind's own options. A ticket sequence is stored as a SequenceRecord ("seq/"); the other
/// kinds created at run time are stored as a definition ("def/<name>") so that they are served
/// again after a restart. Sequences from the config file need no definition.
struct SequenceDefinition {
  SequenceSpec spec;
  KindOptions options;

  /// The options of type T: those set, or T's defaults.
  template <class T>
  [[nodiscard]] T options_of() const {
    const T* o = std::get_if<T>(&options);
    return o != nullptr ? *o : T{};
  }
  /// The options of type T to fill in: T's defaults first unless options of type T are set.
  template <class T>
  T& set_options() {
    if (!std::holds_alternative<T>(options)) options.template emplace<T>();
    return std::get<T>(options);
  }
};

inline constexpr std::string_view kDefinitionPrefix = "def/";

/// validate(spec), then the options of its kind (KindModule::validate_definition); a message
/// naming the first problem, or empty.
[[nodiscard]] std::string validate(const SequenceDefinition& definition);

[[nodiscard]] std::string definition_key(std::string_view name);
/// "v=1 kind=<kind>" and the kind's own fields (KindModule::encode_definition: for gapless,
/// the grid and options) as key=value fields.
[[nodiscard]] std::string encode_definition(const SequenceDefinition& definition);
[[nodiscard]] std::optional<SequenceDefinition> decode_definition(std::string_view name,
                                                                  std::string_view text);

}  // namespace ticketd
