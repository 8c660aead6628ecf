#include "server/core/sequence_definition.h"

#include "server/base/record_codec.h"
#include "server/core/kind_module.h"

namespace ticketd {

std::string validate(const SequenceDefinition& d) {
  if (auto problem = validate(d.spec); !problem.empty()) return problem;
  return kind_module(d.spec.kind).validate_definition(d);
}

std::string definition_key(std::string_view name) {
  return std::string(kDefinitionPrefix) + std::string(name);
}

std::string encode_definition(const SequenceDefinition& d) {
  RecordWriter w(1);
  w.add("kind", kind_name(d.spec.kind));
  kind_module(d.spec.kind).encode_definition(d, w);
  return w.finish();
}

std::optional<SequenceDefinition> decode_definition(std::string_view name, std::string_view text) {
  auto r = RecordView::parse(text);
  if (!r || !r->version_is(1)) return std::nullopt;
  const auto kind = parse_kind(r->get("kind").value_or(""));
  if (!kind || *kind == SequenceKind::kTicket) return std::nullopt;
  SequenceDefinition d;
  d.spec.name = std::string(name);
  d.spec.kind = *kind;
  if (!kind_module(*kind).decode_definition(*r, d)) return std::nullopt;
  return d;
}

}  // namespace ticketd
