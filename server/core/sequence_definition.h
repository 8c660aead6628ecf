// How a sequence created at run time, of a kind other than ticket, is kept in the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/core/gapless_sequence.h"
#include "server/core/sequence_spec.h"

namespace ticketd {

/// What create() takes for any kind: the spec (name, kind, and for counters their grid) and, for
/// gapless sequences, their options. A ticket sequence is stored as a SequenceRecord ("seq/");
/// the other kinds created at run time are stored as a definition ("def/<name>") so that they
/// are served again after a restart. Sequences from the config file need no definition.
struct SequenceDefinition {
  SequenceSpec spec;
  GaplessOptions gapless;  // kind gapless only
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
