// TicketService as the one registry of sequences: find / list / describe / create / drop for
// every kind, and what survives a restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string_view>
#include <variant>
#include <vector>

#include "server/core/sequence_record.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_service.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_store.h"

namespace ticketd {
namespace {

using testing::FakeClock;
using testing::ScriptedStore;

// An engine that can create every kind at run time, over a store that outlives it.
struct Registry {
  Registry(CounterStore& store, const Clock& clock) : committer(store), service(store, committer) {
    service.enable_runtime_kinds(
        RuntimeKinds{&clock, &background, [this, &store, &clock](const std::string& name) {
                       SnowflakeOptions o;
                       o.name = name;
                       o.worker_id = 3;
                       return SnowflakeGenerator::open(std::move(o), store, committer, clock);
                     }});
    auto loaded = service.load();
    EXPECT_TRUE(loaded) << (loaded ? "" : loaded.error().message);
    auto opened = service.open_deferred_definitions();
    EXPECT_TRUE(opened) << (opened ? "" : opened.error().message);
  }
  ~Registry() {
    background.stop();
    committer.stop();
  }

  DetailedResult<void> create(SequenceDefinition d, CreateOptions o = {}) {
    std::promise<DetailedResult<void>> p;
    service.create(d, o, [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
  DetailedResult<void> create(SequenceKind kind, const std::string& name) {
    return create(SequenceDefinition{SequenceSpec{.name = name, .kind = kind}, {}});
  }
  DetailedResult<void> drop(const std::string& name) {
    std::promise<DetailedResult<void>> p;
    service.drop(name, [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
  std::uint64_t next(const std::string& name) {
    auto r = next_and_wait(service, name, 1);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->first : 0;
  }

  TimerQueue background;
  GroupCommitter committer;
  TicketService service;
};

std::vector<std::pair<std::string, SequenceKind>> kinds_of(const TicketService& service) {
  std::vector<std::pair<std::string, SequenceKind>> out;
  for (const auto& d : service.describe_all()) out.emplace_back(d.spec.name, d.spec.kind);
  return out;
}

using Kinds = std::vector<std::pair<std::string, SequenceKind>>;

// An offline backup reads only the store: a gapless sequence that never issued a number must be
// there too, or a restore would not ask for its last number and it would start again at 1.
TEST(SequenceRegistry, AGaplessSequenceIsStoredBeforeItIssuesANumber) {
  MemoryCounterStore store;
  testing::FakeClock clock;
  {
    Registry r(store, clock);
    ASSERT_TRUE(r.create(SequenceDefinition{
        SequenceSpec{.name = "Run", .kind = SequenceKind::kGapless, .start = 7}, {}}));
    auto configured = GaplessSequence::open(
        SequenceSpec{.name = "Conf", .kind = SequenceKind::kGapless, .start = 100}, {}, store,
        r.committer, clock);
    ASSERT_TRUE(configured);
    EXPECT_FALSE(store.get("gapless/Conf/f")->has_value());  // opening alone writes nothing
    ASSERT_TRUE(r.service.add_gapless(*configured));
  }
  auto run = store.get("gapless/Run/f");
  ASSERT_TRUE(run && *run);
  EXPECT_EQ(decode_frontier(**run), (GaplessFrontier{7, 7, 1}));
  auto conf = store.get("gapless/Conf/f");
  ASSERT_TRUE(conf && *conf);
  EXPECT_EQ(decode_frontier(**conf), (GaplessFrontier{100, 100, 1}));
  EXPECT_TRUE(verify_gapless_records(*store.scan(kGaplessPrefix)).empty());
}

// A store made by `ticketd restore` holds a restore floor: a name with neither a record nor a
// tombstone may have been created after the backup and issued values the store cannot see.
void write_restore_floor(CounterStore& store, RestoreFloor floor) {
  std::vector<Mutation> m{{std::string(kRestoreFloorKey), encode_restore_floor(floor)}};
  ASSERT_TRUE(store.commit(m));
}

TEST(SequenceRegistry, InARestoredStoreANewTicketNameStartsAboveWhatItCanHaveIssued) {
  MemoryCounterStore store;
  testing::FakeClock clock;
  write_restore_floor(store, {.span_ms = 120000, .values = 0});
  Registry r(store, clock);
  // 1000/s and cache 1000 (a 101 s window): 221,000 values, on increment 2.
  ASSERT_TRUE(r.create(SequenceDefinition{
      SequenceSpec{.name = "T", .increment = 2, .offset = 1, .cache = 1000, .max_rate = 1000},
      {}}));
  const auto v = r.next("T");
  EXPECT_GT(v, 442000u);
  EXPECT_EQ(v % 2, 1u);
  // A 32-bit sequence at the default rate cannot hold that skip: refused, naming the flag.
  const SequenceDefinition small{SequenceSpec{.name = "S", .max_value = 4294967295u}, {}};
  auto refused = r.create(small);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, TicketErrc::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("--force-not-in-backup S"), std::string::npos)
      << refused.error().message;
  // The operator says it never existed after the backup: it starts at its own start.
  r.service.accept_not_in_backup({"S"});
  ASSERT_TRUE(r.create(small));
  EXPECT_EQ(r.next("S"), 1u);
}

TEST(SequenceRegistry, InARestoredStoreANewGaplessNameIsRefusedUnlessNamed) {
  MemoryCounterStore store;
  testing::FakeClock clock;
  {
    Registry before(store, clock);  // stored before the restore: continues as it is
    ASSERT_TRUE(before.create(SequenceKind::kGapless, "Old"));
  }
  write_restore_floor(store, {.span_ms = 1000, .values = 0});
  Registry r(store, clock);
  EXPECT_EQ(r.service.kind_of("Old"), SequenceKind::kGapless);
  auto refused = r.create(SequenceKind::kGapless, "G");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("--force-not-in-backup G"), std::string::npos)
      << refused.error().message;
  auto configured = [&] {
    auto g = GaplessSequence::open(SequenceSpec{.name = "Conf", .kind = SequenceKind::kGapless}, {},
                                   store, r.committer, clock);
    EXPECT_TRUE(g);
    return *g;
  };
  auto conf = r.service.add_gapless(configured());
  ASSERT_FALSE(conf);
  EXPECT_NE(conf.error().message.find("--force-not-in-backup Conf"), std::string::npos);
  EXPECT_FALSE(store.get("gapless/Conf/f")->has_value());  // nothing written
  r.service.accept_not_in_backup({"G", "Conf"});
  EXPECT_TRUE(r.create(SequenceKind::kGapless, "G"));
  EXPECT_TRUE(r.service.add_gapless(configured()));
}

TEST(SequenceRegistry, DescribingAGaplessSequenceCountsItsPendingReservations) {
  MemoryCounterStore store;
  testing::FakeClock clock;
  Registry r(store, clock);
  ASSERT_TRUE(r.create(SequenceKind::kGapless, "G"));
  auto g = r.service.find_gapless("G");
  ASSERT_NE(g, nullptr);
  for (int i = 0; i < 2; ++i) {
    std::promise<DetailedResult<Reservation>> p;
    g->reserve("h", 0, [&p](DetailedResult<Reservation> res) { p.set_value(std::move(res)); });
    ASSERT_TRUE(p.get_future().get());
  }
  auto d = r.service.describe("G");
  ASSERT_TRUE(d && d->gapless);
  EXPECT_EQ(d->gapless->pending, 2u);
}

TEST(SequenceRegistry, KindNamesRoundTripForEveryKind) {
  for (const auto kind : kAllSequenceKinds) {
    EXPECT_EQ(parse_kind(kind_name(kind)), kind) << kind_name(kind);
  }
  EXPECT_EQ(kind_name(SequenceKind::kUuidV7), "uuidv7");
  EXPECT_FALSE(parse_kind("uuid"));
}

TEST(SequenceRegistry, CreatesListsAndDescribesEveryKind) {
  ScriptedStore store;
  FakeClock clock;
  Registry r(store, clock);
  ASSERT_TRUE(r.create(SequenceDefinition{
      SequenceSpec{.name = "Tickets", .increment = 2, .offset = 1, .cache = 10}, {}}));
  SequenceDefinition invoices{
      SequenceSpec{.name = "Invoices", .kind = SequenceKind::kGapless, .start = 1000}, {}};
  invoices.set_options<GaplessOptions>().order = GaplessOrder::kStrict;
  ASSERT_TRUE(r.create(invoices));
  ASSERT_TRUE(r.create(SequenceKind::kUuidV7, "Uuids"));
  ASSERT_TRUE(r.create(SequenceKind::kSnowflake, "Flakes"));
  EXPECT_EQ(kinds_of(r.service), (Kinds{{"Flakes", SequenceKind::kSnowflake},
                                        {"Invoices", SequenceKind::kGapless},
                                        {"Tickets", SequenceKind::kTicket},
                                        {"Uuids", SequenceKind::kUuidV7}}));
  EXPECT_EQ(r.next("Tickets"), 1u);
  EXPECT_EQ(r.next("Tickets"), 3u);
  EXPECT_EQ(r.next("Invoices"), 1000u);

  auto t = r.service.describe("Tickets");
  ASSERT_TRUE(t && t->ticket);
  EXPECT_EQ(t->spec.increment, 2u);
  EXPECT_EQ(t->ticket->next_value, 5u);
  auto g = r.service.describe("Invoices");
  ASSERT_TRUE(g && g->gapless);
  EXPECT_EQ(g->spec.kind, SequenceKind::kGapless);
  EXPECT_EQ(g->gapless->options.order, GaplessOrder::kStrict);
  EXPECT_EQ(g->gapless->next_value, 1001u);
  EXPECT_EQ(g->gapless->committed_through, 1000u);
  auto f = r.service.describe("Flakes");
  ASSERT_TRUE(f && f->snowflake);
  EXPECT_EQ(f->snowflake->worker_id, 3u);
  EXPECT_EQ(f->snowflake->layout.worker_bits, SnowflakeLayout::twitter().worker_bits);
  auto u = r.service.describe("Uuids");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->spec.kind, SequenceKind::kUuidV7);
  EXPECT_FALSE(u->ticket || u->gapless || u->snowflake);
  EXPECT_FALSE(r.service.describe("Nope"));
  EXPECT_EQ(r.service.kind_of("Uuids"), SequenceKind::kUuidV7);
  EXPECT_FALSE(r.service.kind_of("Nope"));
}

// Every kind has its module, in its row's place; the front ends render what describe() lists.
TEST(SequenceRegistry, EveryKindIsAModuleThatDescribesItselfAsFields) {
  for (const auto kind : kAllSequenceKinds) EXPECT_EQ(kind_module(kind).kind(), kind);
  ScriptedStore store;
  FakeClock clock;
  Registry r(store, clock);
  ASSERT_TRUE(r.create(SequenceKind::kTicket, "T"));
  ASSERT_TRUE(r.create(SequenceKind::kGapless, "G"));
  ASSERT_TRUE(r.create(SequenceKind::kSnowflake, "S"));
  ASSERT_TRUE(r.create(SequenceKind::kUuidV7, "U"));
  ASSERT_TRUE(r.create(SequenceKind::kUlid, "L"));
  const auto keys = [&](const std::string& name) {
    const auto d = r.service.describe(name);
    std::vector<std::string_view> out;
    for (const auto& f : d->fields) out.push_back(f.key);
    return out;
  };
  EXPECT_EQ(keys("U"), (std::vector<std::string_view>{"issued"}));
  EXPECT_EQ(keys("L"),
            (std::vector<std::string_view>{"clock_policy", "issued", "last_issued", "mark"}));
  EXPECT_EQ(keys("S").front(), "worker_id");
  EXPECT_EQ(keys("G").front(), "order");
  EXPECT_EQ(keys("T").front(), "start");
  // A counter says its next value (AUTO_INCREMENT); the others have none.
  EXPECT_EQ(r.service.describe("T")->next_value, 1u);
  EXPECT_EQ(r.service.describe("G")->next_value, 1u);
  EXPECT_FALSE(r.service.describe("S")->next_value);
  EXPECT_FALSE(r.service.describe("U")->next_value);
  EXPECT_EQ(r.service.describe("G")->comment_detail, " (order relaxed)");
  EXPECT_EQ(r.service.describe("T")->comment_detail, "");
  // A gapless one describes "committed_through" as null until its first commit.
  const auto g = r.service.describe("G")->fields;
  const auto committed = std::find_if(
      g.begin(), g.end(), [](const DescribedField& f) { return f.key == "committed_through"; });
  ASSERT_NE(committed, g.end());
  EXPECT_TRUE(std::holds_alternative<std::monostate>(committed->value));
  // Blocks are refused by each kind in its own words, through the registry.
  for (const auto* name : {"G", "S", "U", "L"}) {
    auto b = next_and_wait(r.service, name, 2);
    ASSERT_FALSE(b) << name;
    EXPECT_EQ(b.error().code, TicketErrc::kWrongKind) << name;
  }
  // Text IDs come through next_text; a kind of integers refuses it.
  std::promise<DetailedResult<std::vector<std::string>>> text;
  r.service.next_text("L", 3, TextForm::kCanonical,
                      [&text](auto ids) { text.set_value(std::move(ids)); });
  auto ids = text.get_future().get();
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->size(), 3u);
  EXPECT_LT((*ids)[0], (*ids)[1]);
  EXPECT_LT((*ids)[1], (*ids)[2]);
  std::promise<DetailedResult<std::vector<std::string>>> refused;
  r.service.next_text("T", 1, TextForm::kCanonical,
                      [&refused](auto ids) { refused.set_value(std::move(ids)); });
  auto no = refused.get_future().get();
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().code, TicketErrc::kWrongKind);
  // Dropping leaves a tombstone for the kinds that issue integers, none for text IDs.
  ASSERT_TRUE(r.drop("S"));
  ASSERT_TRUE(r.drop("U"));
  ASSERT_TRUE(r.drop("L"));
  EXPECT_TRUE(store.get(tombstone_key("S")).value());
  EXPECT_FALSE(store.get(tombstone_key("U")).value());
  EXPECT_FALSE(store.get(tombstone_key("L")).value());
}

TEST(SequenceRegistry, ANameHoldsOneSequenceWhateverItsKind) {
  ScriptedStore store;
  FakeClock clock;
  Registry r(store, clock);
  ASSERT_TRUE(r.create(SequenceKind::kUuidV7, "X"));
  for (const auto kind : kAllSequenceKinds) {
    auto again = r.create(kind, "X");
    ASSERT_FALSE(again) << kind_name(kind);
    EXPECT_EQ(again.error().code, TicketErrc::kAlreadyExists);
    if (kind != SequenceKind::kUuidV7) {
      EXPECT_NE(again.error().message.find("of kind uuidv7"), std::string::npos)
          << again.error().message;
    }
  }
  EXPECT_TRUE(
      r.create(SequenceDefinition{SequenceSpec{.name = "X", .kind = SequenceKind::kUuidV7}, {}},
               CreateOptions{.if_not_exists = true}));
}

TEST(SequenceRegistry, SequencesCreatedAtRunTimeAreServedAfterARestart) {
  ScriptedStore store;
  FakeClock clock;
  {
    Registry r(store, clock);
    ASSERT_TRUE(r.create(SequenceKind::kGapless, "G"));
    ASSERT_TRUE(r.create(SequenceKind::kUuidV7, "U"));
    ASSERT_TRUE(r.create(SequenceKind::kSnowflake, "S"));
    ASSERT_TRUE(r.create(SequenceKind::kTicket, "T"));
    for (int i = 0; i < 3; ++i) r.next("G");
  }
  Registry again(store, clock);
  EXPECT_EQ(kinds_of(again.service), (Kinds{{"G", SequenceKind::kGapless},
                                            {"S", SequenceKind::kSnowflake},
                                            {"T", SequenceKind::kTicket},
                                            {"U", SequenceKind::kUuidV7}}));
  EXPECT_EQ(again.next("G"), 4u);  // the unbroken run goes on
  EXPECT_NE(again.service.find_uuidv7("U"), nullptr);
}

TEST(SequenceRegistry, DropWorksForEveryKindAndCountersLeaveTombstones) {
  ScriptedStore store;
  FakeClock clock;
  {
    Registry r(store, clock);
    ASSERT_TRUE(r.create(SequenceKind::kGapless, "G"));
    ASSERT_TRUE(r.create(SequenceKind::kUuidV7, "U"));
    ASSERT_TRUE(r.create(SequenceKind::kSnowflake, "S"));
    ASSERT_TRUE(r.create(SequenceDefinition{SequenceSpec{.name = "T", .cache = 10}, {}}));
    for (int i = 0; i < 5; ++i) r.next("G");
    r.next("T");
    for (const char* name : {"G", "U", "S", "T"}) {
      auto d = r.drop(name);
      ASSERT_TRUE(d) << name << ": " << d.error().message;
      EXPECT_FALSE(r.service.exists(name)) << name;
      auto gone = next_and_wait(r.service, name, 1);
      ASSERT_FALSE(gone);
      EXPECT_EQ(gone.error().code, TicketErrc::kUnknownSequence);
    }
    EXPECT_EQ(decode_tombstone(**store.get(tombstone_key("G"))), 5u);
    EXPECT_EQ(decode_tombstone(**store.get(tombstone_key("T"))), 10u);
    EXPECT_TRUE(store.get(tombstone_key("S"))->has_value());
    EXPECT_FALSE(store.get(tombstone_key("U"))->has_value());  // UUIDs need none
    auto twice = r.drop("U");
    ASSERT_FALSE(twice);
    EXPECT_EQ(twice.error().code, TicketErrc::kUnknownSequence);
  }
  // Nothing comes back after a restart; a counter of a dropped name starts above it.
  Registry again(store, clock);
  EXPECT_TRUE(again.service.describe_all().empty());
  ASSERT_TRUE(again.create(SequenceKind::kTicket, "G"));
  EXPECT_EQ(again.next("G"), 6u);
  ASSERT_TRUE(again.create(SequenceKind::kGapless, "T"));
  EXPECT_EQ(again.next("T"), 11u);
  // A Snowflake tombstone is far above any ticket value: a counter of that name starts there.
  ASSERT_TRUE(again.create(SequenceKind::kTicket, "S"));
  EXPECT_GT(again.next("S"), std::uint64_t{1} << 40);
}

TEST(SequenceRegistry, AGaplessSequenceCreatedAgainContinuesItsRun) {
  ScriptedStore store;
  FakeClock clock;
  Registry r(store, clock);
  ASSERT_TRUE(r.create(SequenceKind::kGapless, "G"));
  for (int i = 0; i < 3; ++i) r.next("G");
  ASSERT_TRUE(r.drop("G"));
  ASSERT_TRUE(r.create(SequenceKind::kGapless, "G"));
  EXPECT_EQ(r.next("G"), 4u);
}

TEST(SequenceRegistry, OtherKindsNeedRuntimeSupport) {
  ScriptedStore store;
  GroupCommitter committer(store);
  TicketService service(store, committer);
  ASSERT_TRUE(service.load());
  std::promise<DetailedResult<void>> p;
  service.create(SequenceDefinition{SequenceSpec{.name = "G", .kind = SequenceKind::kGapless}, {}},
                 CreateOptions{}, [&p](DetailedResult<void> r) { p.set_value(std::move(r)); });
  auto r = p.get_future().get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, TicketErrc::kInvalidArgument);
  committer.stop();
}

TEST(SequenceRegistry, OneLimitOfIdsPerCall) {
  ScriptedStore store;
  FakeClock clock;
  Registry r(store, clock);
  ASSERT_TRUE(r.create(SequenceKind::kTicket, "T"));
  auto most = next_and_wait(r.service, "T", kMaxIdsPerCall);
  ASSERT_TRUE(most);
  EXPECT_EQ(most->count, kMaxIdsPerCall);
  for (const std::uint64_t n : {std::uint64_t{0}, kMaxIdsPerCall + 1}) {
    auto over = next_and_wait(r.service, "T", n);
    ASSERT_FALSE(over) << n;
    EXPECT_EQ(over.error().code, TicketErrc::kInvalidArgument);
    EXPECT_NE(over.error().message.find(std::to_string(kMaxIdsPerCall)), std::string::npos);
  }
  // One cache bound, wherever a spec comes from.
  EXPECT_EQ(validate(SequenceSpec{.name = "c", .cache = kMaxCache}), "");
  EXPECT_NE(validate(SequenceSpec{.name = "c", .cache = kMaxCache + 1}), "");
  EXPECT_NE(validate(SequenceSpec{.name = "c", .increment = kMaxIncrement + 1}), "");
}

}  // namespace
}  // namespace ticketd
