// Transactions and gapless numbers: tickets are durable the moment they are issued; only
// gapless numbers taken inside a transaction wait for COMMIT (or go back on ROLLBACK).
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/core/ticket_errc.h"
#include "server/mysql/error_mapping.h"
#include "server/mysql/statement_handlers.h"

namespace ticketd::mysql {
namespace {

// Commits (or releases) every gapless number the session holds; `then` gets the first error.
// Numbers whose commit failed in storage are released, so they do not wait for their TTL.
void settle_holds(SessionState& s, bool commit, std::function<void(std::optional<Error>)> then) {
  auto holds = std::move(s.gapless_holds);
  s.gapless_holds.clear();
  if (holds.empty()) return then(std::nullopt);
  struct Join {
    std::mutex mutex;
    std::size_t left = 0;
    std::optional<Error> first;
    std::function<void(std::optional<Error>)> then;
  };
  auto join = std::make_shared<Join>();
  join->left = holds.size();
  join->then = std::move(then);
  for (auto& h : holds) {
    auto settled =
        s.completion->resume<DetailedResult<void>>([join, h, commit](DetailedResult<void> r) {
          if (!r && commit && r.error().code == TicketErrc::kStorageFailed) {
            h.sequence->release(h.reservation_id, [](DetailedResult<void>) {});
          }
          bool last = false;
          {
            std::lock_guard lock(join->mutex);
            if (!r && !join->first) join->first = r.error();
            last = --join->left == 0;
          }
          if (last) join->then(join->first);
        });
    if (commit) {
      h.sequence->commit(h.reservation_id, std::move(settled));
    } else {
      h.sequence->release(h.reservation_id, std::move(settled));
    }
  }
}

}  // namespace

void release_holds(SessionState& session) {
  settle_holds(session, false, [](std::optional<Error>) {});
}

void take_gapless(SessionState& session, const std::shared_ptr<GaplessSequence>& sequence,
                  std::function<void(DetailedResult<std::uint64_t>)> then) {
  std::string holder = "mysql:" + std::to_string(session.connection_id);
  if (session.in_transaction) {
    // Session scope: the reservation dies with the connection, as the transaction would.
    sequence->reserve(
        std::move(holder), 0,
        session.completion->resume<DetailedResult<Reservation>>(
            [&s = session, sequence, then = std::move(then)](DetailedResult<Reservation> r) {
              if (!r) return then(r.error());
              s.gapless_holds.push_back(GaplessHold{sequence, r->id, r->number});
              then(r->number);
            }),
        ReservationScope::kSession);
    return;
  }
  sequence->take(std::move(holder), session.completion->resume<DetailedResult<Reservation>>(
                                        [then = std::move(then)](DetailedResult<Reservation> r) {
                                          if (!r) return then(r.error());
                                          then(r->number);
                                        }));
}

void end_transaction(StatementCall& call, bool commit, bool begin_another) {
  settle_holds(
      call.session, commit,
      [&s = call.session, done = std::move(call.done), begin_another](std::optional<Error> e) {
        s.in_transaction = begin_another;
        if (e) return done(to_commit_err(*e));
        done(OkResult{});
      });
}

// BEGIN inside a transaction commits it first, as in MySQL.
void run(const sql::Begin&, StatementCall& call) { end_transaction(call, true, true); }
void run(const sql::Commit&, StatementCall& call) { end_transaction(call, true, false); }
void run(const sql::Rollback&, StatementCall& call) { end_transaction(call, false, false); }

}  // namespace ticketd::mysql
