// UUIDv7 sequences: time-ordered UUIDs (uuidv7_generator.h); nothing stored but a definition.
#include <memory>
#include <string>
#include <vector>

#include "server/base/hex.h"
#include "server/core/kind_module.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

class UuidV7Kind final : public KindModule {
 public:
  SequenceKind kind() const override { return SequenceKind::kUuidV7; }

  DetailedResult<SequenceHandle> open(const SequenceDefinition& /*definition*/,
                                      std::optional<std::uint64_t> /*tombstone*/,
                                      const KindEnv& env) const override {
    return SequenceHandle{std::make_shared<UuidV7Generator>(*env.runtime.clock)};
  }

  // UUIDs are not integers: the front ends take them from find_uuidv7().
  void next(const SequenceHandle& /*handle*/, std::string_view name, std::uint64_t /*count*/,
            BlockCallback done, const KindEnv& /*env*/) const override {
    const std::string n(name);
    done(Error{TicketErrc::kWrongKind,
               "sequence '" + n +
                   "' is a uuidv7 sequence: its IDs are UUIDs, not integers; use SELECT "
                   "NEXTVAL(" +
                   n + ") or SELECT UUID_V7() over MySQL, or POST /v1/sequences/" + n +
                   "/next over HTTP"});
  }

  void next_text(const SequenceHandle& handle, std::string_view /*name*/, std::uint64_t count,
                 TextForm form, TextIdsCallback done, const KindEnv& /*env*/) const override {
    auto& generator = *std::get<std::shared_ptr<UuidV7Generator>>(handle);
    std::vector<std::string> ids;
    ids.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      const Uuid u = generator.next();
      ids.push_back(form == TextForm::kHex ? to_hex(u) : to_string(u));
    }
    done(std::move(ids));
  }

  std::string no_blocks(std::string_view name) const override {
    return "sequence '" + std::string(name) +
           "' is a uuidv7 sequence: its IDs are UUIDs, blocks are refused";
  }

  void describe(const SequenceHandle& handle, SequenceDescription& out) const override {
    const auto issued = std::get<std::shared_ptr<UuidV7Generator>>(handle)->stats().issued;
    out.fields = {{"issued", std::to_string(issued)}};
  }

  std::optional<std::uint64_t> retire(const SequenceHandle& /*handle*/) const override {
    return std::nullopt;
  }
};

}  // namespace

const KindModule& uuidv7_kind() {
  static const UuidV7Kind module;
  return module;
}

}  // namespace ticketd
