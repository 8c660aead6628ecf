#include "server/core/ticket_service.h"

#include <future>

#include "server/core/gapless_sequence.h"
#include "server/core/snowflake_generator.h"

namespace ticketd {

DetailedResult<void> TicketService::add_snowflake(std::shared_ptr<SnowflakeGenerator> generator,
                                                  TimerQueue& retries, const Clock& clock) {
  kinds_.use_retry_timers(&retries, &clock);
  const std::string name = generator->name();
  return ddl_.add(name, std::move(generator));
}

DetailedResult<void> TicketService::add_gapless(std::shared_ptr<GaplessSequence> sequence,
                                                bool force) {
  const std::string name = sequence->spec().name;
  return ddl_.add(name, std::move(sequence), force);
}

std::vector<SequenceInfo> TicketService::list() const {
  const auto all = registry_.all_of<TicketSequence>();
  std::vector<SequenceInfo> out;
  out.reserve(all.size());
  for (const auto& [_, s] : all) out.push_back(s->info());
  return out;
}

std::vector<std::shared_ptr<SnowflakeGenerator>> TicketService::snowflakes() const {
  std::vector<std::shared_ptr<SnowflakeGenerator>> out;
  for (auto& [_, g] : registry_.all_of<SnowflakeGenerator>()) out.push_back(std::move(g));
  return out;
}

namespace {

SequenceDescription describe_handle(const std::string& name, const SequenceHandle& handle) {
  SequenceDescription d;
  d.spec.name = name;
  d.spec.kind = kind_of_handle(handle);
  kind_module(handle).describe(handle, d);
  return d;
}

}  // namespace

std::vector<SequenceDescription> TicketService::describe_all() const {
  const auto all = registry_.handles();
  std::vector<SequenceDescription> out;
  out.reserve(all.size());
  for (const auto& [name, h] : all) out.push_back(describe_handle(name, h));
  return out;
}

std::optional<SequenceDescription> TicketService::describe(std::string_view name) const {
  auto h = registry_.find(name);
  if (!h) return std::nullopt;
  return describe_handle(std::string(name), *h);
}

DetailedResult<Block> take_and_wait(TicketSequence& sequence, std::uint64_t count) {
  std::promise<DetailedResult<Block>> p;
  auto f = p.get_future();
  sequence.take(count, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  return f.get();
}

DetailedResult<Block> next_and_wait(TicketService& service, std::string_view name,
                                    std::uint64_t count) {
  std::promise<DetailedResult<Block>> p;
  auto f = p.get_future();
  service.next(name, count, [&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  return f.get();
}

}  // namespace ticketd
