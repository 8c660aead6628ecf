// The engine the MySQL fuzz targets talk to: a TicketService on the in-memory store with a
// ticket, a gapless and a UUIDv7 sequence, a FakeClock, a QueryExecutor and two accounts. Built
// fresh for every input, so that an input's outcome never depends on the ones before it.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "server/base/log.h"
#include "server/core/gapless_sequence.h"
#include "server/core/group_committer.h"
#include "server/core/ticket_service.h"
#include "server/core/timer_queue.h"
#include "server/core/uuidv7_generator.h"
#include "server/mysql/protocol/auth.h"
#include "server/mysql/query_executor.h"
#include "server/mysql/server_connection.h"
#include "storage/memory_counter_store.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/fake_clock.h"

namespace ticketd::fuzz {

/// The accounts: "app" with a password, "root" with none.
inline constexpr std::string_view kAppUser = "app";
inline constexpr std::string_view kAppPassword = "s3cret";
inline constexpr std::string_view kRootUser = "root";

/// The password of `user` in MysqlEngine's table, or nullptr for an unknown user.
inline const std::string_view* password_of(std::string_view user) {
  static constexpr std::string_view kNone;
  if (user == kAppUser) return &kAppPassword;
  if (user == kRootUser) return &kNone;
  return nullptr;
}

struct MysqlEngine {
  MysqlEngine() {
    log::set_level(log::Level::kError);  // not a line per sequence created, per input
    tickets.enable_runtime_kinds(RuntimeKinds{&clock, &background, nullptr});
    FUZZ_CHECK(tickets.load().has_value());
    FUZZ_CHECK(tickets.ensure_configured(SequenceSpec{.name = "Tickets64", .cache = 10}));
    auto gapless =
        GaplessSequence::open(SequenceSpec{.name = "Invoices", .kind = SequenceKind::kGapless},
                              GaplessOptions{}, store, committer, clock);
    FUZZ_CHECK(gapless.has_value());
    FUZZ_CHECK(tickets.add_gapless(*gapless).has_value());
    FUZZ_CHECK(tickets.add_uuidv7("Uuids", std::make_shared<UuidV7Generator>(clock, 42)));
    login.users[std::string(kAppUser)] =
        mysql::UserAccount::with_password(mysql::AuthPlugin::kNativePassword, kAppPassword);
    login.users[std::string(kRootUser)] =
        mysql::UserAccount::with_password(mysql::AuthPlugin::kNativePassword, "");
  }
  ~MysqlEngine() {
    background.stop();
    committer.stop();
  }
  MysqlEngine(const MysqlEngine&) = delete;
  MysqlEngine& operator=(const MysqlEngine&) = delete;

  ticketd::testing::FakeClock clock;
  MemoryCounterStore store;
  GroupCommitter committer{store};
  TicketService tickets{store, committer};
  TimerQueue background;  // real time: a FakeClock that never steps would hold it
  mysql::ServerSettings settings;
  UuidV7Generator uuids{clock, 7};
  mysql::QueryExecutor executor{tickets, settings, clock, {}, &uuids};
  mysql::LoginPolicy login;  // mysql_native_password users
};

/// Answers the next complete packet and waits for the answer (which may come from the
/// committer thread); nullopt when the connection needs more bytes. Checks that the answer
/// comes exactly once.
inline std::optional<mysql::ServerConnection::Output> answer_next(mysql::ServerConnection& conn) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  std::promise<mysql::ServerConnection::Output> promise;
  auto future = promise.get_future();
  const bool answered = conn.process_next([calls, &promise](mysql::ServerConnection::Output o) {
    FUZZ_CHECK(calls->fetch_add(1) == 0);
    promise.set_value(std::move(o));
  });
  if (!answered) {
    FUZZ_CHECK(calls->load() == 0);
    return std::nullopt;
  }
  return future.get();
}

}  // namespace ticketd::fuzz
