// A CommandHandler for ServerConnection tests: scripted answers, no engine.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/mysql/command_handler.h"

namespace ticketd::mysql::testing {

/// Answers each statement text with the QueryResult scripted for it (unknown text: ERR 1064),
/// and every Statement (COM_INIT_DB, COM_FIELD_LIST, the probe of COM_STMT_PREPARE) with an
/// empty OK. A text scripted with defer() is not answered at once: its completion is kept
/// until complete_deferred(), which a test may call from another thread, as the engine's
/// committer thread would. Records every call. Thread safety: all members may be called
/// concurrently.
class ScriptedCommandHandler final : public CommandHandler {
 public:
  explicit ScriptedCommandHandler(ServerSettings settings = {}) : settings_(std::move(settings)) {}

  void answer(std::string sql, QueryResult result) {
    std::lock_guard lock(mutex_);
    answers_[std::move(sql)] = std::move(result);
  }
  void defer(std::string sql) {
    std::lock_guard lock(mutex_);
    deferred_texts_.push_back(std::move(sql));
  }
  /// Runs the kept completion of the oldest deferred statement with `result`; false if none.
  bool complete_deferred(QueryResult result) {
    Done done;
    {
      std::lock_guard lock(mutex_);
      if (waiting_.empty()) return false;
      done = std::move(waiting_.front());
      waiting_.erase(waiting_.begin());
    }
    done(std::move(result));
    return true;
  }

  void execute(SessionState& session, std::string_view sql, Done done) const override {
    QueryResult result = ErrResult{1064, "42000", "not scripted: " + std::string(sql)};
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(std::string(sql));
      databases_.push_back(session.database);
      for (const auto& d : deferred_texts_) {
        if (d == sql) {
          waiting_.push_back(std::move(done));
          return;
        }
      }
      if (auto it = answers_.find(std::string(sql)); it != answers_.end()) result = it->second;
    }
    done(std::move(result));
  }
  void execute(SessionState&, const sql::Statement& statement, Done done) const override {
    {
      std::lock_guard lock(mutex_);
      calls_.push_back("<" + std::string(sql::statement_kind_name(statement)) + ">");
    }
    done(OkResult{});
  }
  void end_session(SessionState&) const override {
    std::lock_guard lock(mutex_);
    ++ended_;
  }
  [[nodiscard]] const ServerSettings& settings() const override { return settings_; }
  [[nodiscard]] ConnectionMemory connection_memory() const override {
    return ConnectionMemory(settings_.connection_memory_limit, &budget_);
  }

  [[nodiscard]] std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  [[nodiscard]] std::vector<std::string> databases() const {
    std::lock_guard lock(mutex_);
    return databases_;
  }
  [[nodiscard]] int sessions_ended() const {
    std::lock_guard lock(mutex_);
    return ended_;
  }

 private:
  const ServerSettings settings_;
  mutable MemoryBudget budget_{settings_.global_connection_memory_limit};
  mutable std::mutex mutex_;
  std::map<std::string, QueryResult, std::less<>> answers_;
  std::vector<std::string> deferred_texts_;
  mutable std::vector<Done> waiting_;
  mutable std::vector<std::string> calls_;
  mutable std::vector<std::string> databases_;
  mutable int ended_ = 0;
};

}  // namespace ticketd::mysql::testing
