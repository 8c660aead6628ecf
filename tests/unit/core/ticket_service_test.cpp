#include "server/core/ticket_service.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <utility>
#include <vector>

#include "server/core/ticket_errc.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::ScriptedStore;

DetailedResult<void> wait_done(const std::function<void(DoneCallback)>& op) {
  std::promise<DetailedResult<void>> p;
  op([&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

// An engine over a store that outlives it, so tests can restart the engine.
struct Engine {
  explicit Engine(CounterStore& store) : committer(store), service(store, committer) {
    auto r = service.load();
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
  }
  GroupCommitter committer;
  TicketService service;

  DetailedResult<void> create(SequenceSpec spec, CreateOptions o = {}) {
    return wait_done([&](DoneCallback d) { service.create(spec, o, std::move(d)); });
  }
  DetailedResult<void> drop(const std::string& name) {
    return wait_done([&](DoneCallback d) { service.drop(name, std::move(d)); });
  }
  std::uint64_t next(const std::string& name) {
    auto r = next_and_wait(service, name, 1);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->first : 0;
  }
};

TEST(TicketService, UnknownSequenceIsAClearError) {
  ScriptedStore store;
  Engine e(store);
  auto r = next_and_wait(e.service, "Nope", 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kUnknownSequence);
  EXPECT_EQ(r.error().message, "sequence 'Nope' does not exist");
}

TEST(TicketService, CreatedSequencesSurviveARestart) {
  ScriptedStore store;
  std::uint64_t last = 0;
  {
    Engine e(store);
    ASSERT_TRUE(e.create(SequenceSpec{.name = "a", .cache = 10}));
    for (int i = 0; i < 15; ++i) last = e.next("a");
  }
  Engine e(store);
  EXPECT_GT(e.next("a"), last);
}

TEST(TicketService, CreateTwiceIsAlreadyExistsUnlessIfNotExists) {
  ScriptedStore store;
  Engine e(store);
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a"}));
  auto again = e.create(SequenceSpec{.name = "a"});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, TicketErrc::kAlreadyExists);
  EXPECT_TRUE(e.create(SequenceSpec{.name = "a"}, CreateOptions{.if_not_exists = true}));
}

TEST(TicketService, DropAndRecreateResumesAboveTheTombstone) {
  ScriptedStore store;
  std::uint64_t last = 0;
  {
    Engine e(store);
    ASSERT_TRUE(e.create(SequenceSpec{.name = "a", .cache = 100}));
    for (int i = 0; i < 10; ++i) last = e.next("a");
    ASSERT_TRUE(e.drop("a"));
    auto gone = next_and_wait(e.service, "a", 1);
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().code, TicketErrc::kUnknownSequence);
    ASSERT_TRUE(e.create(SequenceSpec{.name = "a", .cache = 100}));
    EXPECT_GT(e.next("a"), 100u);  // above the whole cached range, not just `last`
  }
  // The tombstone also holds across a restart before the re-create.
  {
    Engine e(store);
    ASSERT_TRUE(e.drop("a"));
  }
  Engine e(store);
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a", .cache = 100}));
  EXPECT_GT(e.next("a"), 200u);
  EXPECT_GT(last, 0u);
}

TEST(TicketService, ForcedRecreateMayGoLower) {
  ScriptedStore store;
  Engine e(store);
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a"}));
  e.next("a");
  ASSERT_TRUE(e.drop("a"));
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a"}, CreateOptions{.force = true}));
  EXPECT_EQ(e.next("a"), 1u);
}

TEST(TicketService, AdministrativeChangesReachTheAuditSinkOnceDurable) {
  ScriptedStore store;
  Engine e(store);
  std::mutex m;
  std::vector<std::pair<std::string, std::string>> events;
  std::vector<std::string> fields;  // "key=value ..." of each event
  e.service.set_audit([&](std::string_view event, std::string_view detail, log::Fields f) {
    std::lock_guard lock(m);
    events.emplace_back(event, detail);
    std::string all;
    for (const auto& field : f) {
      all += (all.empty() ? "" : " ") + std::string(field.key()) + "=" + std::string(field.text());
    }
    fields.push_back(all);
  });
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a"}));
  // An existing sequence with IF NOT EXISTS changes nothing: no event.
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a"}, CreateOptions{.if_not_exists = true}));
  std::promise<DetailedResult<Block>> moved;
  e.service.advance_past("a", 500, [&](DetailedResult<Block> b) { moved.set_value(b); });
  ASSERT_TRUE(moved.get_future().get());
  ASSERT_TRUE(e.drop("a"));
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a"}, CreateOptions{.force = true}));
  std::lock_guard lock(m);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].first, "sequence_created");
  EXPECT_EQ(events[0].second, "sequence 'a' created (ticket, resumes above 0)");
  EXPECT_EQ(events[1].first, "sequence_advanced");
  EXPECT_EQ(events[1].second, "sequence 'a' moved past 500 (next value 501)");
  EXPECT_EQ(events[2].first, "sequence_dropped");
  EXPECT_NE(events[2].second.find("tombstone ceiling"), std::string::npos);
  EXPECT_EQ(events[3].first, "sequence_force_created");
  EXPECT_NE(events[3].second.find("may be issued again"), std::string::npos);
  EXPECT_EQ(events[4].first, "sequence_created");
  // Every one names its sequence for log shippers.
  for (const auto& f : fields) EXPECT_EQ(f, "sequence=a");
}

TEST(TicketService, AFailedChangeIsNotAudited) {
  ScriptedStore store;
  Engine e(store);
  int events = 0;
  e.service.set_audit([&](std::string_view, std::string_view, log::Fields) { ++events; });
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a"}));
  store.fail_next(1);
  EXPECT_FALSE(e.drop("a"));
  EXPECT_EQ(events, 1);  // the create only
}

TEST(TicketService, FailedDropKeepsTheSequence) {
  ScriptedStore store;
  Engine e(store);
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a", .cache = 10}));
  auto v = e.next("a");
  store.fail_next(1);
  auto r = e.drop("a");
  ASSERT_FALSE(r);
  EXPECT_GT(e.next("a"), v);
}

TEST(TicketService, ConfiguredLargerStartMovesForwardSmallerIsIgnored) {
  ScriptedStore store;
  {
    Engine e(store);
    ASSERT_TRUE(e.service.ensure_configured(SequenceSpec{.name = "t", .cache = 10}));
    EXPECT_EQ(e.next("t"), 1u);
  }
  {
    Engine e(store);
    ASSERT_TRUE(e.service.ensure_configured(SequenceSpec{.name = "t", .start = 5000, .cache = 10}));
    EXPECT_EQ(e.next("t"), 5000u);
  }
  Engine e(store);
  ASSERT_TRUE(e.service.ensure_configured(SequenceSpec{.name = "t", .start = 1, .cache = 10}));
  EXPECT_GT(e.next("t"), 5000u);
}

TEST(TicketService, AConfiguredGridChangeIsRefusedNamingRestride) {
  ScriptedStore store;
  {
    Engine e(store);
    ASSERT_TRUE(e.service.ensure_configured(
        SequenceSpec{.name = "t", .increment = 2, .offset = 1, .cache = 10}));
    EXPECT_EQ(e.next("t"), 1u);
  }
  // The server's partner issues the even values: 3/1 would meet them (7, 13, ...).
  Engine e(store);
  auto r = e.service.ensure_configured(
      SequenceSpec{.name = "t", .increment = 3, .offset = 1, .cache = 10});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, make_error_code(TicketErrc::kInvalidArgument));
  EXPECT_NE(r.error().message.find("ticketd restride"), std::string::npos) << r.error().message;
  const auto info = e.service.find("t")->info();
  EXPECT_EQ(info.spec.increment, 2u);
  EXPECT_EQ(info.spec.offset, 1u);
  EXPECT_EQ(e.next("t") % 2, 1u);
}

TEST(TicketService, AForcedGridChangeIsPersistedAboveEveryCeilingAndAudited) {
  ScriptedStore store;
  std::vector<std::string> events;
  {
    Engine e(store);
    e.service.set_audit([&](std::string_view event, std::string_view, log::Fields) {
      events.emplace_back(event);  // the audit runs before ensure_configured returns
    });
    ASSERT_TRUE(e.service.ensure_configured(SequenceSpec{.name = "t", .cache = 10}));
    e.next("t");  // ceiling 10
    ASSERT_TRUE(e.service.ensure_configured(
        SequenceSpec{.name = "t", .increment = 2, .offset = 2, .cache = 10},
        ConfigForce{.grid = true}));
    const auto v = e.next("t");
    EXPECT_EQ(v % 2, 0u);
    EXPECT_GT(v, 10u);
  }
  EXPECT_EQ(events, (std::vector<std::string>{"sequence_created", "sequence_grid_forced"}));
  Engine e(store);
  auto info = e.service.find("t")->info();
  EXPECT_EQ(info.spec.increment, 2u);
  EXPECT_EQ(info.spec.offset, 2u);
  EXPECT_EQ(e.next("t") % 2, 0u);
}

TEST(TicketService, AFailedConfigWriteKeepsTheOldSettingsInMemoryAndOnDisk) {
  ScriptedStore store;
  Engine e(store);
  ASSERT_TRUE(e.service.ensure_configured(SequenceSpec{.name = "t", .cache = 10}));
  EXPECT_EQ(e.next("t"), 1u);
  store.fail_next(1);
  auto r = e.service.ensure_configured(SequenceSpec{.name = "t", .start = 5000, .cache = 50});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, make_error_code(TicketErrc::kStorageFailed));
  auto info = e.service.find("t")->info();
  EXPECT_EQ(info.spec.start, 1u);
  EXPECT_EQ(info.spec.cache, 10u);
  EXPECT_EQ(e.next("t"), 2u);  // the cached values of the old settings, still durable
  // The same config again applies (nothing half-done is in the way).
  ASSERT_TRUE(e.service.ensure_configured(SequenceSpec{.name = "t", .start = 5000, .cache = 50}));
  EXPECT_EQ(e.next("t"), 5000u);
}

DetailedResult<Block> wait_block(const std::function<void(BlockCallback)>& op) {
  std::promise<DetailedResult<Block>> p;
  op([&p](DetailedResult<Block> b) { p.set_value(std::move(b)); });
  return p.get_future().get();
}

TEST(TicketService, ARestridedGridWinsOverTheConfigAtStart) {
  ScriptedStore store;
  const SequenceSpec configured{.name = "t", .increment = 2, .offset = 1, .cache = 10};
  {
    Engine e(store);
    ASSERT_TRUE(e.service.ensure_configured(configured));
    EXPECT_EQ(e.next("t"), 1u);
    auto r = wait_block([&](BlockCallback d) {
      e.service.restride("t", Restride{.increment = 3, .offset = 1, .floor = 100}, std::move(d));
    });
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->first, 103u);
    EXPECT_EQ(e.next("t"), 103u);
  }
  // Restarted with the config written before the restride: the grid stays 3/1 (2/1 would meet
  // the values of the server now on 3/3), the other settings still apply.
  Engine e(store);
  auto changed = configured;
  changed.cache = 20;
  ASSERT_TRUE(e.service.ensure_configured(changed));
  const auto info = e.service.find("t")->info();
  EXPECT_EQ(info.spec.increment, 3u);
  EXPECT_EQ(info.spec.offset, 1u);
  EXPECT_EQ(info.spec.cache, 20u);
  const auto v = e.next("t");
  EXPECT_GT(v, 103u);
  EXPECT_EQ(v % 3, 1u);
}

TEST(TicketService, RestrideAndFenceRefuseOtherKindsAndUnknownNames) {
  ScriptedStore store;
  Engine e(store);
  auto r = wait_block([&](BlockCallback d) {
    e.service.restride("nope", Restride{.increment = 3, .offset = 1, .floor = 9}, std::move(d));
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kUnknownSequence);
  r = wait_block([&](BlockCallback d) { e.service.set_fence("nope", 9, std::move(d)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kUnknownSequence);
}

TEST(TicketService, InvalidSpecIsRefused) {
  ScriptedStore store;
  Engine e(store);
  auto r = e.create(SequenceSpec{.name = "x", .increment = 2, .offset = 5});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kInvalidArgument);
  EXPECT_FALSE(e.service.exists("x"));
}

TEST(TicketService, ListIsSortedAndReportsState) {
  ScriptedStore store;
  Engine e(store);
  ASSERT_TRUE(e.create(SequenceSpec{.name = "b", .cache = 5}));
  ASSERT_TRUE(e.create(SequenceSpec{.name = "a", .max_value = 10, .cache = 5}));
  e.next("a");
  auto all = e.service.list();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].spec.name, "a");
  EXPECT_EQ(all[0].next_value, 2u);
  EXPECT_EQ(all[0].durable_ceiling, 5u);
  EXPECT_EQ(all[0].issued, 1u);
  EXPECT_EQ(all[0].remaining, 9u);
  EXPECT_EQ(all[1].spec.name, "b");
}

TEST(TicketService, Uuidv7SequencesAreFoundByNameAndRefuseIntegerIds) {
  ScriptedStore store;
  Engine e(store);
  testing::FakeClock clock;
  auto generator = std::make_shared<UuidV7Generator>(clock, 7);
  ASSERT_TRUE(e.service.add_uuidv7("U", generator));
  EXPECT_EQ(e.service.find_uuidv7("U"), generator);
  EXPECT_EQ(e.service.find_uuidv7("V"), nullptr);
  EXPECT_TRUE(e.service.exists("U"));
  auto r = next_and_wait(e.service, "U", 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode(TicketErrc::kWrongKind));
  EXPECT_NE(r.error().message.find("SELECT UUID_V7()"), std::string::npos) << r.error().message;
  // A ticket sequence cannot take the name of a configured UUIDv7 sequence.
  auto created = e.create(SequenceSpec{.name = "U"});
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, ErrorCode(TicketErrc::kAlreadyExists));
  EXPECT_EQ(e.service.find("U"), nullptr);
}

}  // namespace
}  // namespace ticketd
